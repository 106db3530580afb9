/**
 * Bugs planted on purpose, for the fault soak's proof that its oracle can fail (soak/README.md
 * "Proof it can fail"). Off unless the environment variable `BIZOPS_SOAK_PLANT` names one; it is read
 * here and nowhere else, it is not a setting, and a deployment never sets it. Each name switches on
 * one known bug at one place of the code:
 *
 *   skip-field            change detection ignores the `status` field (src/mirror/change-detection.ts)
 *   one-scan-tombstone    a record missing from ONE complete scan is tombstoned (src/mirror/mirror-store.ts)
 *   unfenced-claim        a write's claim is taken, and its sending marked, whoever holds it (src/writes/write-store.ts)
 *   webhook-out-of-order  a record's webhook events do not wait for each other (src/notify/delivery/sink-delivery.ts)
 *   nats-drop-seq-7       the NATS JetStream sink takes an event whose seq ends in 7 for published without publishing it (src/notify/sinks/nats-sink.ts)
 *   invent-change         a record listed again with the same values in another text (times in another style) gets an update event (src/mirror/mirror-store.ts)
 *   changes-cut-brace     `bizops-sync changes` prints a version-2 row's data one character short, its closing brace cut (src/notify/changelog-reader.ts)
 *
 * It lives at the bottom of src/ (beside the logging settings, which every folder may import).
 */

/** The bugs the soak can plant. */
export type PlantedBug = 'skip-field' | 'one-scan-tombstone' | 'unfenced-claim' | 'webhook-out-of-order' | 'nats-drop-seq-7' | 'invent-change' | 'changes-cut-brace';

const PLANTED = process.env.BIZOPS_SOAK_PLANT ?? '';

/** True when `BIZOPS_SOAK_PLANT` names `bug` (a comma-separated list may name several). Always false in production. */
export function plantedBug(bug: PlantedBug): boolean {
  return PLANTED !== '' && PLANTED.split(',').includes(bug);
}
