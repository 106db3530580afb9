/**
 * What the mirror says of itself (streams, writes, leases), read the same way by the `status`
 * command (jobs/status.ts) and the daemon's operator console (src/console/). The face of
 * src/status/ for jobs/ and cli/.
 */
export { readMirrorReport, type MirrorReport, type MirrorReportOptions, type PartitionStatus, type StreamStatus, type WriteNeedingReview } from './mirror-status.ts';
