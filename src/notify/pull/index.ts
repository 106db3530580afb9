/**
 * The changelog for readers over HTTP (docs/mirror.md "Reading over HTTP"): pages of events after a
 * seq (the webhook's body with its id), named consumers whose cursor the mirror keeps, and the
 * signal long-polls wait on. The face of src/notify/pull/ (the daemon's routes, src/daemon/change-routes.ts, use it).
 */
export { CHANGES_PAGE, CHANGES_QUERY, CONSUMER_CHANGES_QUERY, consumerAfterError, PULLED_EVENT, ChangesRequestError, checkAfter, MAX_PAGE_LIMIT, MAX_WAIT_SECONDS, parseChangesQuery, quickChangesQuery, quickConsumerChangesQuery, readChangesPage, readEncodedChangesPage, readEncodedChangesPageNow, changesPageJson, type ChangesQuery, type EncodedChangesPage, type ChangesPage, type ChangesRequestStatus, type PulledEvent } from './changes-page.ts';
export { changelogEnds } from './consumer-listing.ts';
export {
  ACK_BODY,
  acknowledge,
  acknowledgeSnapshot,
  CONSUMER_LISTING,
  CONSUMER_NAME,
  CONSUMER_PARAMS,
  CONSUMER_STATE,
  deleteConsumer,
  listConsumers,
  loadConsumer,
  noteConsumerRead,
  readConsumerSnapshot,
  REGISTER_CONSUMER_BODY,
  REGISTER_CONSUMER_QUERY,
  registerConsumer,
  requireConsumer,
  RESET_CONSUMER_QUERY,
  resetConsumer,
  SNAPSHOT_PAGE,
  type ConsumerListing,
  type ConsumerState,
  type SnapshotPageAnswer,
} from './consumers.ts';
export { ChangeSignal } from './change-signal.ts';
