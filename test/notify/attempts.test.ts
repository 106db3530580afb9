/**
 * The `webhook_attempts` table (src/notify/delivery/attempts.ts): a write of any length is stored
 * whole and in order, though it runs as INSERTs of fixed sizes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertAttempts, latestAttempts, listAttemptsOfEvent, type WebhookAttempt } from '../../src/notify/delivery/attempts.ts';
import { tempMirror, type TempMirror } from './helpers.ts';

let mirror: TempMirror;

beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(async () => {
  await mirror.cleanup();
});

/** `count` attempts of endpoint `sink`, seq `from` onwards, every field distinct per row. */
function attempts(count: number, from: number): WebhookAttempt[] {
  return Array.from({ length: count }, (_, index) => {
    const seq = from + index;
    const failed = seq % 7 === 0;
    return {
      endpoint: 'sink',
      seq,
      eventId: `evt_${seq}`,
      type: `deal.t${seq % 3}`,
      attempt: 1 + (seq % 4),
      attemptedAt: new Date(Date.UTC(2026, 0, 1) + seq).toISOString(),
      outcome: failed ? 'failed' : 'delivered',
      status: failed ? null : 0,
      latencyMs: seq / 4,
      error: failed ? `refused ${seq}` : null,
      response: failed ? null : `bizops:changes:deals ${seq}-0`,
    };
  });
}

describe('insertAttempts', () => {
  it('stores writes of every length whole and in order: 0, 1, 9, 10, 99, 100, 101 and 1,234 rows', async () => {
    const written: WebhookAttempt[] = [];
    for (const count of [0, 1, 9, 10, 99, 100, 101, 1234]) {
      const batch = attempts(count, written.length + 1);
      await insertAttempts(mirror.connection, batch);
      written.push(...batch);
    }
    expect(await latestAttempts(mirror.connection, 'sink', 10_000)).toEqual([...written].reverse());
    expect(await listAttemptsOfEvent(mirror.connection, 'evt_1234')).toEqual([written[1233]]);
  });
});
