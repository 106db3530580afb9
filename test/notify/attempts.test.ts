/**
 * Delivery attempts (src/notify/delivery/attempts.ts), on both back ends: a write of any length is
 * stored whole and in order, though it runs as INSERTs of fixed sizes; a run of at least 10 attempts
 * sharing endpoint, attempt number, time, outcome, status and error (a sink's batch) is one row of
 * `webhook_attempt_batches`, and every reader returns its attempts one by one as if each were a row.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { insertAttempts, latestAttempts, listAttemptsOfEvent, pruneAttempts, type WebhookAttempt } from '../../src/notify/delivery/attempts.ts';
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

/** A generator of runs of attempts sharing endpoint, attempt number, time, outcome, status and error: a sink's batches, each at its own time. */
function runs(day = 1) {
  let seq = 0;
  return (count: number, endpoint = 'sink', attempt = 1): WebhookAttempt[] => {
    const attemptedAt = new Date(Date.UTC(2026, 0, day) + seq * 1000).toISOString();
    return Array.from({ length: count }, () => {
      seq += 1;
      return { endpoint, seq, eventId: `evt_${seq}`, type: `deal.t${seq % 3}`, attempt, attemptedAt, outcome: 'delivered', status: 0, latencyMs: seq / 8, error: null, response: `bizops:changes:deals ${seq}-0` };
    });
  };
}

async function count(connection: SqlConnection, table: string): Promise<number> {
  return Number((await connection.get<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n);
}

describe('attempts (on the project\'s back end: the file runs on SQLite and on PostgreSQL)', () => {
  it('stores writes of every length whole and in order: 0, 1, 9, 10, 99, 100, 101 and 1,234 rows', async () => {
    const connection = mirror.connection;
    const written: WebhookAttempt[] = [];
    for (const n of [0, 1, 9, 10, 99, 100, 101, 1234]) {
      const batch = attempts(n, written.length + 1);
      await insertAttempts(connection, batch);
      written.push(...batch);
    }
    expect(await latestAttempts(connection, 'sink', 10_000)).toEqual([...written].reverse());
    expect(await latestAttempts(connection, 'sink', 3)).toEqual([...written].reverse().slice(0, 3));
    expect(await listAttemptsOfEvent(connection, 'evt_1234')).toEqual([written[1233]]);
    expect(await count(connection, 'webhook_attempt_batches')).toBe(0); // no two rows share a time: no batch
  });

  it('keeps a run of 10 or more as one batch row and reads its attempts back one by one, in order, between single rows', async () => {
    const connection = mirror.connection;
    // Runs of 1, 9, 10, 11, 100, 256 and 1,001 attempts sharing those fields; a failure inside one
    // run, another endpoint's run and a retry between runs.
    const run = runs();
    const all = [run(1), run(9), run(10), run(11, 'other'), run(100), run(2, 'sink', 2), run(256), run(1001)];
    all[6]![100] = { ...all[6]![100]!, outcome: 'failed', status: null, error: 'refused', response: null };
    const first = all.flat();
    const second = run(37);
    await insertAttempts(connection, first);
    await insertAttempts(connection, second);
    // Batches: 10, 11 (other), 100, 100 and 155 of the 256 split by the failure, 1,001, 37.
    expect(await count(connection, 'webhook_attempt_batches')).toBe(7);
    expect(await count(connection, 'webhook_attempts')).toBe(1 + 9 + 2 + 1);
    const sink = [...first, ...second].filter((attempt) => attempt.endpoint === 'sink');
    expect(await latestAttempts(connection, 'sink', 10_000)).toEqual([...sink].reverse());
    expect(await latestAttempts(connection, 'sink', 40)).toEqual([...sink].reverse().slice(0, 40));
    expect(await latestAttempts(connection, 'other', 100)).toEqual([...all[3]!].reverse());
    expect(await listAttemptsOfEvent(connection, all[6]![100]!.eventId)).toEqual([all[6]![100]]);
    // A batched attempt by its event id, the event not in the changelog: found in the batches' text.
    expect(await listAttemptsOfEvent(connection, all[7]![500]!.eventId)).toEqual([all[7]![500]]);
    // An id that only looks like one (`_` and `%` match nothing but themselves).
    expect(await listAttemptsOfEvent(connection, 'evt%500')).toEqual([]);
  });

  it('finds an event\'s attempts at every endpoint from its seq when the changelog holds it: batched, retried as a single row, by endpoint then time', async () => {
    const connection = mirror.connection;
    const seqs: number[] = [];
    const eventIds: string[] = [];
    await connection.transaction(async (tx) => {
      for (let index = 0; index < 30; index += 1) {
        const eventId = `evt_seqlookup_${index}`;
        const row = await tx.get<{ seq: number }>('INSERT INTO changes (event_id, type, stream, record_id, occurred_at, data) VALUES (?, ?, ?, ?, ?, ?) RETURNING seq', [eventId, 'deal.updated', 'deals', `deal_${index}`, '2026-01-01T00:00:00.000Z', '{}']);
        seqs.push(Number(row!.seq));
        eventIds.push(eventId);
      }
    });
    const batch = (endpoint: string, at: string, attempt: number, outcome: 'delivered' | 'failed'): WebhookAttempt[] =>
      seqs.map((seq, index) => ({ endpoint, seq, eventId: eventIds[index]!, type: 'deal.updated', attempt, attemptedAt: at, outcome, status: outcome === 'delivered' ? 0 : null, latencyMs: 1.5, error: outcome === 'delivered' ? null : 'reset', response: outcome === 'delivered' ? `k ${seq}-0` : null }));
    const nats = batch('to-nats', '2026-01-01T00:00:01.000Z', 1, 'failed');
    const redis = batch('to-redis', '2026-01-01T00:00:02.000Z', 1, 'delivered');
    const retry: WebhookAttempt = { ...nats[12]!, attempt: 2, attemptedAt: '2026-01-01T00:00:03.000Z', outcome: 'delivered', status: 0, error: null, response: 'acked' };
    await insertAttempts(connection, [...nats, ...redis]);
    await insertAttempts(connection, [retry]);
    expect(await listAttemptsOfEvent(connection, eventIds[12]!)).toEqual([nats[12], retry, redis[12]]);
  });

  it('prunes by age rows and batches alike, counting the attempts a batch held, never a younger one', async () => {
    const connection = mirror.connection;
    const old = runs(1);
    const young = runs(20);
    const oldRows = attempts(5, 100_000); // 2026-01-01, one row each
    const oldBatches = [old(50), old(30)];
    const youngBatch = young(20).map((attempt) => ({ ...attempt, seq: attempt.seq! + 200_000, eventId: `evt_young_${attempt.seq}` }));
    await insertAttempts(connection, [...oldRows, ...oldBatches.flat(), ...youngBatch]);
    const before = '2026-01-10T00:00:00.000Z';
    const first = await pruneAttempts(connection, before, 4);
    expect(first).toEqual({ rows: 4, attempts: 4 });
    const second = await pruneAttempts(connection, before, 4);
    expect(second).toEqual({ rows: 3, attempts: 1 + 50 + 30 });
    expect(await pruneAttempts(connection, before, 4)).toEqual({ rows: 0, attempts: 0 });
    expect(await latestAttempts(connection, 'sink', 1000)).toEqual([...youngBatch].reverse());
  });
});
