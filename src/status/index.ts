/**
 * What the mirror says of itself (streams, writes, leases) and the verdict over it, read the same
 * way by the `status` command (jobs/status.ts) and the daemon's operator console (src/console/).
 * The face of src/status/ for jobs/ and cli/.
 */
export {
  FAILED_WRITES_RECENT_HOURS,
  readMirrorReport,
  type EndpointStatus,
  type FailedWrite,
  type MirrorReport,
  type MirrorReportOptions,
  type PartitionStatus,
  type StreamStatus,
  type WriteNeedingReview,
} from './mirror-status.ts';
export { DAEMON_ANSWER_TIMEOUT_MS, mirrorKey, reachableUrl, readDaemonParts, type DaemonParts, type DaemonPartsOptions, type DaemonPartsReport } from './daemon-parts.ts';
export { shortError, shortTime, verdictOf, type ShortError, type Verdict, type VerdictEndpoint, type VerdictInput, type VerdictPart, type VerdictTarget } from './verdict.ts';
