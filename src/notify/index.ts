/**
 * Reading the changelog (`bizops-sync changes`, the demo), its readers over HTTP (named
 * consumers, the signal long-polls wait on), its retention, and the event filters of webhook
 * endpoints. The face of src/notify/ for jobs/ and cli/; the webhooks have their own
 * (src/notify/webhooks/index.ts), so that reading changes or checking a filter loads no webhook sender.
 */
export {
  followChanges,
  followStoredChanges,
  formatChangeLine,
  formatStoredChangeLine,
  iterateChanges,
  iterateStoredChanges,
  listenForChanges,
  readChanges,
  type ChangeEvent,
  type StoredChange,
  type StoredChangeLineOptions,
} from './changelog-reader.ts';
export { ChangeSignal } from './pull/change-signal.ts';
export { listConsumers, type ConsumerListing } from './pull/consumer-listing.ts';
export { changelogPrunedThrough, pruneChangelog, retentionCutoff, retentionFloor, type PruneResult, type RetentionFloor } from './retention.ts';
export { checkKnownEventPatterns, compileEventFilter } from './event-filter/index.ts';
