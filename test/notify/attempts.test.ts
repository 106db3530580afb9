/**
 * The `webhook_attempts` table (src/notify/delivery/attempts.ts): a write of any length is stored
 * whole and in order, though it runs as INSERTs of fixed sizes, and on SQLite a run of attempts
 * sharing endpoint, attempt number, time, outcome, status and error binds those once.
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

  it('stores runs that share endpoint, attempt, time, outcome, status and error whole and in order, between rows that do not', async () => {
    // Runs of 1, 9, 10, 11, 100, 256 and 1,001 attempts sharing those fields (a sink's batches), each
    // run at its own time; a failure inside one run, another endpoint's run and a retry between runs.
    let seq = 0;
    const run = (count: number, endpoint = 'sink', attempt = 1): WebhookAttempt[] => {
      const attemptedAt = new Date(Date.UTC(2026, 0, 1) + seq * 1000).toISOString();
      return Array.from({ length: count }, () => {
        seq += 1;
        return { endpoint, seq, eventId: `evt_${seq}`, type: `deal.t${seq % 3}`, attempt, attemptedAt, outcome: 'delivered', status: 0, latencyMs: seq / 8, error: null, response: `bizops:changes:deals ${seq}-0` };
      });
    };
    const runs = [run(1), run(9), run(10), run(11, 'other'), run(100), run(2, 'sink', 2), run(256), run(1001)];
    runs[6]![100] = { ...runs[6]![100]!, outcome: 'failed', status: null, error: 'refused', response: null };
    const first = runs.flat();
    const second = run(37);
    await insertAttempts(mirror.connection, first);
    await insertAttempts(mirror.connection, second);
    const sink = [...first, ...second].filter((attempt) => attempt.endpoint === 'sink');
    expect(await latestAttempts(mirror.connection, 'sink', 10_000)).toEqual(sink.reverse());
    expect(await latestAttempts(mirror.connection, 'other', 100)).toEqual([...runs[3]!].reverse());
    expect(await listAttemptsOfEvent(mirror.connection, runs[6]![100]!.eventId)).toEqual([runs[6]![100]]);
  });
});
