/**
 * Reading the changelog (`bizops-sync changes`, the demo) and the event filters of webhook
 * endpoints. The face of src/notify/ for jobs/ and cli/; the webhooks have their own
 * (src/notify/webhooks/index.ts), so that reading changes or checking a filter loads no webhook sender.
 */
export { followChanges, formatChangeLine, iterateChanges, readChanges, type ChangeEvent } from './changelog-reader.ts';
export { compileEventFilter } from './event-filter.ts';
