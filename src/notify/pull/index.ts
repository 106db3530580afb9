/**
 * The changelog for readers over HTTP (docs/mirror.md "Reading over HTTP"): pages of events after a
 * seq (the webhook's body with its id), named consumers whose cursor the mirror keeps, and the
 * signal long-polls wait on. The face of src/notify/pull/ (the daemon's routes, src/daemon/change-routes.ts, use it).
 */
export { CHANGES_PAGE, CHANGES_QUERY, CONSUMER_CHANGES_QUERY, consumerAfterError, PULLED_EVENT, ChangesRequestError, changelogEnds, checkAfter, MAX_PAGE_LIMIT, MAX_WAIT_SECONDS, parseChangesQuery, readChangesPage, type ChangesPage, type ChangesRequestStatus, type PulledEvent } from './changes-page.ts';
export { ACK_BODY, CONSUMER_LISTING, CONSUMER_PARAMS, CONSUMER_STATE, REGISTER_CONSUMER_BODY, acknowledge, CONSUMER_NAME, deleteConsumer, listConsumers, loadConsumer, noteConsumerRead, registerConsumer, requireConsumer, type ConsumerListing, type ConsumerState } from './consumers.ts';
export { ChangeSignal } from './change-signal.ts';
