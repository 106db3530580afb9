/**
 * Named consumers as the `consumers` table stores them, and their listing with each one's lag
 * (docs/mirror.md "Named consumers"), apart from consumers.ts: `bizops-sync status` lists them
 * without loading the HTTP routes' schemas, the page reader and the event schemas behind them
 * (docs/operations.md "Start-up"). Every function runs through a `SqlExecutor`.
 */
import { lastChangeSeq } from '../../mirror/changelog-format.ts';
import type { SqlExecutor } from '../../mirror/sql/executor.ts';
import { changelogPrunedThrough } from '../retention.ts';
import { parseSnapshot, type SnapshotState } from '../snapshot.ts';

/** One consumer (times ISO 8601). */
export interface ConsumerState {
  name: string;
  /** The last seq it acknowledged: its next read starts after it. */
  cursor: number;
  createdAt: string;
  lastReadAt: string | null;
  lastAckAt: string | null;
  /** The snapshot it reads before the changelog (`initial=snapshot`); null when none or done. */
  snapshot: SnapshotState | null;
}

/** A consumer with how far it is behind. */
export interface ConsumerListing extends ConsumerState {
  /** The changelog's last seq − its cursor. */
  lagEvents: number;
  /** now − occurred_at of the oldest event after its cursor, seconds; 0 when caught up. */
  lagSeconds: number;
}

/** A row of the `consumers` table. */
export interface ConsumerRow {
  name: string;
  cursor: number;
  created_at: string;
  last_read_at: string | null;
  last_ack_at: string | null;
  snapshot: string | null;
}

/** The changelog's ends: its last seq and the oldest one kept. */
export async function changelogEnds(executor: SqlExecutor): Promise<{ latestSeq: number; oldestSeq: number }> {
  const prunedThrough = await changelogPrunedThrough(executor);
  return { latestSeq: Math.max(await lastChangeSeq(executor), prunedThrough), oldestSeq: prunedThrough + 1 };
}

/** Every consumer with its lag, by name. */
export async function listConsumers(executor: SqlExecutor, now: Date = new Date()): Promise<ConsumerListing[]> {
  const rows = await executor.all<ConsumerRow>('SELECT * FROM consumers ORDER BY name');
  const { latestSeq } = await changelogEnds(executor);
  const listings: ConsumerListing[] = [];
  for (const row of rows) {
    const state = consumerState(row);
    const oldest = await executor.get<{ occurred_at: string }>('SELECT occurred_at FROM changes WHERE seq > ? ORDER BY seq LIMIT 1', [state.cursor]);
    const occurred = oldest ? Date.parse(oldest.occurred_at) : Number.NaN;
    listings.push({
      ...state,
      lagEvents: Math.max(0, latestSeq - state.cursor),
      lagSeconds: Number.isNaN(occurred) ? 0 : Math.max(0, Math.round((now.getTime() - occurred) / 100) / 10),
    });
  }
  return listings;
}

/** A stored row as a consumer's state. @throws Error when its snapshot column is not a snapshot */
export function consumerState(row: ConsumerRow): ConsumerState {
  return { name: row.name, cursor: Number(row.cursor), createdAt: row.created_at, lastReadAt: row.last_read_at, lastAckAt: row.last_ack_at, snapshot: parseSnapshot(row.snapshot ?? null) };
}
