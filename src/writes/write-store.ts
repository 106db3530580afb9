/**
 * The `writes` table (migration 003) and the changelog rows of write outcomes (docs/writes.md,
 * "The mirror contract"). Every statement on `writes` lives here.
 *
 * Lifecycle of a row:
 *
 *   queued ──(budget slot granted)──> sending ──> succeeded | failed | needs_review
 *     ^                                  │
 *     └──── a provably safe retry ───────┘
 *
 * Claims (migration 8): a run of a write takes a claim on its row (a token and an expiry by the
 * database's clock, in one conditional UPDATE) before it sends anything; only the claim's holder may
 * mark the row sending, retrying or finished. A second run of the same write (a re-added job, a
 * second worker, a replica) finds it claimed and leaves it alone; an expired claim means its holder
 * died, and the next run resolves the row from its status (`sending`: the outcome is ambiguous).
 *
 * A terminal status, its `write.succeeded` / `write.failed` / `write.needs_review` change row
 * (stream `writes`, record_id = the write id) and the write-through of the response into the mirror
 * commit in ONE transaction; a row already terminal is never finished twice.
 *
 * Statements go through a SqlExecutor (src/mirror/sql/executor.ts): written once for SQLite and
 * PostgreSQL (`ON CONFLICT`, `COALESCE`, savepoints), every method asynchronous.
 */
import { createHash } from 'node:crypto';
import { isStorable, storabilityIssue, storableCopy, storableText } from '../client/storable-json.ts';
import { plantedBug } from '../logging/planted-bugs.ts';
import { databaseNow, databaseNowPlusSeconds } from '../mirror/sql/dialect.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { MirrorStore, type AppendedChange } from '../mirror/mirror-store.ts';
import type { StreamName } from '../streams/definitions.ts';

/** The soak's planted bug `unfenced-claim` (src/logging/planted-bugs.ts): claims neither exclude nor fence. Off in production. */
const UNFENCED = plantedBug('unfenced-claim');

/** Status of a write row; see the lifecycle in this module's header. */
export type WriteStatus = 'queued' | 'sending' | 'succeeded' | 'failed' | 'needs_review';
/** The statuses a write ends in; each emits its change row (`WRITE_EVENT_TYPES`). */
export type TerminalWriteStatus = 'succeeded' | 'failed' | 'needs_review';

/** `TerminalWriteStatus` as a list: a row in one of these is never finished twice. */
const TERMINAL_STATUSES: readonly WriteStatus[] = ['succeeded', 'failed', 'needs_review'];

/**
 * Emitted beside `write.needs_review` when a write turned out to have been applied twice (a late
 * commit of an ambiguous send found after the write was sent again): `data.record` is the write,
 * whose `result.ledgerIds` names both records.
 */
export const WRITE_DUPLICATED = 'write.duplicated';

/** Change types emitted per terminal status (stream `writes`). */
export const WRITE_EVENT_TYPES: Readonly<Record<TerminalWriteStatus, string>> = {
  succeeded: 'write.succeeded',
  failed: 'write.failed',
  needs_review: 'write.needs_review',
};

/** One write as stored (and as `GET /writes/{id}` shows it). Times are ISO 8601. */
export interface WriteRecord {
  id: string;
  idempotencyKey: string;
  kind: string;
  status: WriteStatus;
  /** The validated payload. */
  payload: Record<string, unknown>;
  /** Token NAME the write acts as (config `tokens`). */
  actAs: string;
  /** How it ended, in one line (see migration 003). */
  outcome: string | null;
  /** The response `content` when it succeeded. */
  result: unknown;
  error: string | null;
  httpStatus: number | null;
  /** Id of the record created or changed (transaction, deal, email, ...). */
  remoteId: string | null;
  /** Requests sent (budget slots taken). */
  attempts: number;
  /** Set while the row is stored but its queue job could not be added. */
  enqueueError: string | null;
  sendingAt: string | null;
  /** Token of the run holding the claim on the row (migration 8); null when nobody holds it. Internal. */
  claimToken: string | null;
  /** When that claim lapses unless renewed (the database's clock, ISO 8601 UTC). Internal. */
  claimExpiresAt: string | null;
  /** When the first send whose outcome stayed unknown left (ISO 8601); kept through re-sends. Internal. */
  ambiguousSince: string | null;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

/** How a write ended, for `finish`. */
export interface WriteOutcome {
  status: TerminalWriteStatus;
  outcome: string;
  result?: unknown;
  error?: string | null;
  httpStatus?: number | null;
  remoteId?: string | null;
  /** Types of further change rows of the write (stream `writes`, `data.record` = the write) appended with it, e.g. `write.duplicated`. */
  events?: string[];
}

/**
 * Writes a response record into the mirror through `mirror`, a mirror store bound to the outcome's
 * transaction; returns the change rows it appended. Runs inside a savepoint of that transaction
 * (`WriteStore.finish`): what it throws undoes only its own statements.
 */
/**
 * Writes a successful write's record into the mirror (`mirror` is bound to the outcome's transaction).
 * `writtenSeq` is the `seq` of the write's outcome change row: the hook stamps it on the record's row
 * (`written_seq`, `ApplyOptions.writtenSeq`), so a sync page requested before it does not overwrite
 * the row (docs/sync.md "Write-throughs during a run").
 */
export type WriteThroughHook = (mirror: MirrorStore, stream: StreamName, record: Record<string, unknown>, writtenSeq: number) => Promise<AppendedChange[]> | AppendedChange[];

interface WriteRow {
  id: string;
  idempotency_key: string;
  kind: string;
  status: WriteStatus;
  payload: string;
  payload_hash: string;
  acting_as: string;
  outcome: string | null;
  result: string | null;
  error: string | null;
  http_status: number | null;
  remote_id: string | null;
  attempts: number;
  enqueue_error: string | null;
  sending_at: string | null;
  claim_token: string | null;
  claim_expires_at: string | null;
  ambiguous_since: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

/** JSON with object keys sorted, so equal payloads hash equal whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** sha256 hex of the canonical JSON of a payload. */
export function payloadHash(payload: unknown): string {
  return createHash('sha256').update(canonicalJson(payload)).digest('hex');
}

function decode(row: WriteRow): WriteRecord {
  return {
    id: row.id,
    idempotencyKey: row.idempotency_key,
    kind: row.kind,
    status: row.status,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    actAs: row.acting_as,
    outcome: row.outcome,
    result: row.result === null ? null : (JSON.parse(row.result) as unknown),
    error: row.error,
    httpStatus: row.http_status,
    remoteId: row.remote_id,
    attempts: row.attempts,
    enqueueError: row.enqueue_error,
    sendingAt: row.sending_at,
    claimToken: row.claim_token,
    claimExpiresAt: row.claim_expires_at,
    ambiguousSince: row.ambiguous_since,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
  };
}

/**
 * A response as the `result` column keeps it: JSON text of its storable copy (src/client/storable-json.ts:
 * U+FFFD for a NUL or an unpaired surrogate, a marker for a part nested too deep), so that no API
 * answer can make the row unstorable or unreadable to a JSON function.
 */
function storedResult(result: unknown): string {
  return JSON.stringify(storableCopy(result)) ?? 'null';
}

/** The default write-through: the mirror store's own upsert + changelog (src/mirror/mirror-store.ts `applyRecords`). */
export function defaultWriteThrough(streams: Record<StreamName, Parameters<MirrorStore['applyRecords']>[0]>): WriteThroughHook {
  return async (mirror, stream, record, writtenSeq) => await mirror.applyRecords(streams[stream], [record], { writtenSeq });
}

/** What `WriteStore.finish` did: the write after the update and every change row appended. */
export interface FinishedWrite {
  write: WriteRecord;
  changes: AppendedChange[];
  /**
   * What the write-through threw, when it did: its statements were rolled back (to a savepoint), the
   * outcome and its change row were still recorded. The caller logs it; the next sync mirrors the record.
   */
  writeThroughError?: unknown;
}

/**
 * Every statement on the `writes` table (migration 003) over one mirror connection (SQLite or
 * PostgreSQL, src/mirror/sql/executor.ts), and the changelog row of each outcome, committed with the
 * status in one transaction (see this module's header). Every method is asynchronous and rejects with
 * the driver's error (SqliteError, pg DatabaseError) on storage failures.
 */
export class WriteStore {
  readonly executor: SqlExecutor;
  /** @param executor a connection, or a transaction's executor (the store then joins that transaction) */
  constructor(executor: SqlExecutor) {
    this.executor = executor;
  }

  /**
   * Runs `fn` in one transaction, handing it a store bound to that transaction (every statement of
   * `fn` must go through it: src/mirror/sql/executor.ts). On a store already bound to a transaction,
   * `fn` joins it. `fn` awaits only the store: no network, no timers.
   */
  transaction<T>(fn: (store: WriteStore) => Promise<T>): Promise<T> {
    return this.executor.transaction((tx) => fn(new WriteStore(tx)));
  }

  /** The mirror store writing into the same transaction as this store (the change rows, the write-through). */
  private mirrorStore(): MirrorStore {
    return new MirrorStore(this.executor);
  }

  /** The write with this id, or undefined. */
  async get(id: string): Promise<WriteRecord | undefined> {
    const row = await this.executor.get<WriteRow>('SELECT * FROM writes WHERE id = ?', [id]);
    return row ? decode(row) : undefined;
  }

  /** The write stored under idempotency key `key`, with the hash of its payload (`payloadHash`), or undefined. */
  async findByIdempotencyKey(key: string): Promise<(WriteRecord & { payloadHash: string }) | undefined> {
    const row = await this.executor.get<WriteRow>('SELECT * FROM writes WHERE idempotency_key = ?', [key]);
    return row ? { ...decode(row), payloadHash: row.payload_hash } : undefined;
  }

  /**
   * Stores a new write with status `queued`.
   * @returns the stored write, or undefined when the idempotency key is already taken (a concurrent
   *   enqueue won: read it with `findByIdempotencyKey`)
   */
  async insert(write: { id: string; idempotencyKey: string; kind: string; payload: Record<string, unknown>; actAs: string }): Promise<WriteRecord | undefined> {
    const now = new Date().toISOString();
    const result = await this.executor.run(
      `INSERT INTO writes (id, idempotency_key, kind, status, payload, payload_hash, acting_as, created_at, updated_at)
       VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`,
      [write.id, write.idempotencyKey, write.kind, JSON.stringify(write.payload), payloadHash(write.payload), write.actAs, now, now],
    );
    return result.changes === 1 ? await this.get(write.id) : undefined;
  }

  /** Notes (or clears, with null) that the row is stored but its queue job could not be added. */
  async setEnqueueError(id: string, message: string | null): Promise<void> {
    await this.executor.run('UPDATE writes SET enqueue_error = ?, updated_at = ? WHERE id = ?', [message, new Date().toISOString(), id]);
  }

  /**
   * Takes the claim on write `id` for the run holding `token`, for `seconds` (the database's clock),
   * in one conditional UPDATE: only when the write is unfinished and nobody holds a live claim on it.
   * A claim is what allows a run to send, retry or finish the write (docs/writes.md "Claims").
   * @returns the write as claimed (its status says where the last run stopped), or undefined when it
   *   is finished, unknown, or claimed by another run
   */
  async claim(id: string, token: string, seconds: number): Promise<WriteRecord | undefined> {
    const dialect = this.executor.dialect;
    const row = await this.executor.get<WriteRow>(
      `UPDATE writes SET claim_token = ?, claim_expires_at = ${databaseNowPlusSeconds(dialect)}
       WHERE id = ? AND status IN ('queued', 'sending')
         ${UNFENCED ? '' : `AND (claim_token IS NULL OR claim_expires_at IS NULL OR claim_expires_at < ${databaseNow(dialect)})`}
       RETURNING *`,
      [token, seconds, id],
    );
    return row ? decode(row) : undefined;
  }

  /**
   * Extends the claim `token` holds on write `id` by `seconds` from now (the database's clock).
   * @returns false when the claim is no longer held by `token` (it expired and another run took it, or the write finished)
   */
  async renewClaim(id: string, token: string, seconds: number): Promise<boolean> {
    const result = await this.executor.run(
      `UPDATE writes SET claim_expires_at = ${databaseNowPlusSeconds(this.executor.dialect)} WHERE id = ? AND claim_token = ? AND status IN ('queued', 'sending')`,
      [seconds, id, token],
    );
    return result.changes === 1;
  }

  /** Gives up the claim `token` holds on write `id` (another run may take it at once); nothing when it is not held. */
  async releaseClaim(id: string, token: string): Promise<void> {
    await this.executor.run('UPDATE writes SET claim_token = NULL, claim_expires_at = NULL WHERE id = ? AND claim_token = ?', [id, token]);
  }

  /**
   * Records, for the holder of claim `token`, that a budget slot was granted and the request is about
   * to go out (`sending`): from now on, a run that finds the row in this state cannot know whether
   * the server received it.
   * @returns false when `token` no longer holds the claim or the row is terminal (nothing must be sent)
   */
  async markSending(id: string, token: string): Promise<boolean> {
    const now = new Date().toISOString();
    const result = await this.executor.run(
      `UPDATE writes SET status = 'sending', attempts = attempts + 1, sending_at = ?, updated_at = ?
       WHERE id = ? AND ${UNFENCED ? '? IS NOT NULL' : 'claim_token = ?'} AND status IN ('queued', 'sending')`,
      [now, now, id, token],
    );
    return result.changes === 1;
  }

  /**
   * Back to `queued` (for the holder of claim `token`) after a failure that is provably safe to
   * retry; keeps the error for `GET /writes/{id}`.
   * @returns false when `token` no longer holds the claim
   */
  async markRetrying(id: string, token: string, error: string, httpStatus: number | null): Promise<boolean> {
    const result = await this.executor.run(
      `UPDATE writes SET status = 'queued', error = ?, http_status = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND status IN ('queued', 'sending')`,
      [storableText(error), httpStatus, new Date().toISOString(), id, token],
    );
    return result.changes === 1;
  }

  /**
   * Notes (for the holder of claim `token`) that a send's outcome is unknown, at `sentAt` (ISO 8601),
   * unless an earlier ambiguous send is noted already (the earliest one is kept).
   */
  async markAmbiguous(id: string, token: string, sentAt: string): Promise<void> {
    await this.executor.run('UPDATE writes SET ambiguous_since = COALESCE(ambiguous_since, ?) WHERE id = ? AND claim_token = ?', [sentAt, id, token]);
  }

  /**
   * Keeps what a re-send created (status stays `sending`: the write is not `succeeded` until the
   * ledger shows that the earlier ambiguous send did not land too): `remote_id` (which claims the
   * record, index `writes_created_record`), the response content and its HTTP status.
   * @returns false when `token` no longer holds the claim
   * @throws the driver's unique-constraint error when another write already claims `remoteId`
   */
  async markResent(id: string, token: string, created: { remoteId: string; result: unknown; httpStatus: number; outcome: string }): Promise<boolean> {
    const result = await this.executor.run(
      `UPDATE writes SET remote_id = ?, result = ?, http_status = ?, outcome = ?, updated_at = ? WHERE id = ? AND claim_token = ? AND status = 'sending'`,
      [created.remoteId, storedResult(created.result), created.httpStatus, storableText(created.outcome), new Date().toISOString(), id, token],
    );
    return result.changes === 1;
  }

  /**
   * Ends a write: terminal status, its change row, and the write-through into the mirror, in one
   * transaction, for the holder of claim `token` (the claim is cleared). A row already terminal, or
   * claimed by another run, is left alone; `token` null finishes a row nobody holds a live claim on
   * (tests, tools). The write-through runs in a savepoint: a
   * record the mirror refuses does not undo the outcome (`writeThroughError` says what it threw).
   * @param writeThrough records to upsert into the mirror (only for `succeeded`)
   * @returns the write after the update and every change row appended, or undefined when it was
   *   already terminal or `token` does not hold its claim
   * @throws the driver's unique-constraint error (SQLite `SQLITE_CONSTRAINT_UNIQUE`, PostgreSQL 23505;
   *   index `writes_created_record`) when `remoteId` is already claimed by another write: nothing is recorded
   */
  finish(
    id: string,
    token: string | null,
    outcome: WriteOutcome,
    writeThrough?: { hook: WriteThroughHook; stream: StreamName; record: Record<string, unknown> },
  ): Promise<FinishedWrite | undefined> {
    return this.transaction(async (store) => {
      const before = await store.get(id);
      if (!before || TERMINAL_STATUSES.includes(before.status)) return undefined;
      const now = new Date().toISOString();
      const dialect = store.executor.dialect;
      const holder = token === null ? `(claim_token IS NULL OR claim_expires_at < ${databaseNow(dialect)})` : 'claim_token = ?';
      const updated = await store.executor.run(
        `UPDATE writes SET status = ?, outcome = ?, result = ?, error = ?, http_status = COALESCE(?, http_status),
           remote_id = COALESCE(?, remote_id), finished_at = ?, updated_at = ?, claim_token = NULL, claim_expires_at = NULL
         WHERE id = ? AND status IN ('queued', 'sending') AND ${holder}`,
        [
          outcome.status,
          storableText(outcome.outcome),
          outcome.result === undefined ? null : storedResult(outcome.result),
          outcome.error === undefined || outcome.error === null ? null : storableText(outcome.error),
          outcome.httpStatus ?? null,
          outcome.remoteId ?? null,
          now,
          now,
          id,
          ...(token === null ? [] : [token]),
        ],
      );
      if (updated.changes !== 1) return undefined;
      const write = (await store.get(id))!;
      const mirror = store.mirrorStore();
      const changes: AppendedChange[] = [];
      changes.push(
        await mirror.appendChange({
          type: WRITE_EVENT_TYPES[outcome.status],
          stream: 'writes',
          recordId: id,
          occurredAt: now,
          data: { record: publicWrite(write), changes: { status: { old: before.status, new: outcome.status } } },
        }),
      );
      for (const type of outcome.events ?? []) {
        changes.push(await mirror.appendChange({ type, stream: 'writes', recordId: id, occurredAt: now, data: { record: publicWrite(write) } }));
      }
      if (!writeThrough || outcome.status !== 'succeeded') return { write, changes };
      // The record as the API answered it: one the mirror cannot store is left to the sync, which quarantines it.
      if (!isStorable(writeThrough.record)) {
        const issue = storabilityIssue(writeThrough.record);
        return { write, changes, writeThroughError: new Error(`the response's record cannot be stored: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.rule}` : 'not storable'}`) };
      }
      // A savepoint (standard SQL, both back ends): a record the mirror refuses must not undo the outcome.
      await store.executor.exec('SAVEPOINT write_through');
      try {
        // The outcome's change row was appended in this transaction: its seq is above every mark a page took before.
        const appended = await writeThrough.hook(mirror, writeThrough.stream, writeThrough.record, changes[0]!.seq);
        await store.executor.exec('RELEASE SAVEPOINT write_through');
        return { write, changes: [...changes, ...appended] };
      } catch (error) {
        await store.executor.exec('ROLLBACK TO SAVEPOINT write_through');
        await store.executor.exec('RELEASE SAVEPOINT write_through');
        return { write, changes, writeThroughError: error };
      }
    });
  }

  /** True when a write other than `exceptWriteId` already holds `remoteId` as the record it created. */
  async isClaimed(kind: string, remoteId: string, exceptWriteId: string): Promise<boolean> {
    const row = await this.executor.get('SELECT id FROM writes WHERE kind = ? AND remote_id = ? AND id <> ?', [kind, remoteId, exceptWriteId]);
    return row !== undefined;
  }

  /** Writes of `kind` not finished yet, other than `exceptWriteId` (to spot look-alikes in flight). */
  async unfinishedOfKind(kind: string, exceptWriteId: string): Promise<WriteRecord[]> {
    const rows = await this.executor.all<WriteRow>(`SELECT * FROM writes WHERE kind = ? AND status IN ('queued', 'sending') AND id <> ? ORDER BY created_at`, [
      kind,
      exceptWriteId,
    ]);
    return rows.map(decode);
  }

  /** Every write not finished yet (`queued` or `sending`), oldest first. */
  async unfinished(): Promise<WriteRecord[]> {
    const rows = await this.executor.all<WriteRow>(`SELECT * FROM writes WHERE status IN ('queued', 'sending') ORDER BY created_at`);
    return rows.map(decode);
  }

  /**
   * Unfinished writes nobody holds a live claim on (never claimed, released, or expired by the
   * database's clock), oldest first: what the sweeper checks.
   */
  async unclaimed(): Promise<WriteRecord[]> {
    const rows = await this.executor.all<WriteRow>(
      `SELECT * FROM writes WHERE status IN ('queued', 'sending')${UNFENCED ? '' : ` AND (claim_token IS NULL OR claim_expires_at < ${databaseNow(this.executor.dialect)})`} ORDER BY created_at`,
    );
    return rows.map(decode);
  }

  /**
   * The writes in `status`, most recently changed first, at most `limit` (e.g. the writes needing
   * review that `status` and the console list).
   */
  async listByStatus(status: WriteStatus, limit: number): Promise<WriteRecord[]> {
    const rows = await this.executor.all<WriteRow>('SELECT * FROM writes WHERE status = ? ORDER BY updated_at DESC, id DESC LIMIT ?', [status, limit]);
    return rows.map(decode);
  }

  /**
   * Writes of `status` that finished at or after `sinceIso` (ISO 8601): the failed writes of the
   * last day that the verdict of `status` and the console counts.
   */
  async countFinishedSince(status: TerminalWriteStatus, sinceIso: string): Promise<number> {
    const row = await this.executor.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM writes WHERE status = ? AND finished_at >= ?', [status, sinceIso]);
    return Number(row?.n ?? 0);
  }

  /** Counts by status (for `status` output and metrics). */
  async countByStatus(): Promise<Record<WriteStatus, number>> {
    const counts: Record<WriteStatus, number> = { queued: 0, sending: 0, succeeded: 0, failed: 0, needs_review: 0 };
    const rows = await this.executor.all<{ status: WriteStatus; n: number | string }>('SELECT status, COUNT(*) AS n FROM writes GROUP BY status');
    // Number(): PostgreSQL's COUNT(*) is a bigint, which a driver may hand over as text.
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}

/** The write as callers see it (`GET /writes/{id}`, change rows): everything but internal bookkeeping. */
export function publicWrite(write: WriteRecord): Omit<WriteRecord, 'enqueueError' | 'sendingAt' | 'claimToken' | 'claimExpiresAt' | 'ambiguousSince'> & { enqueueError?: string } {
  const { enqueueError, sendingAt: _sendingAt, claimToken: _claimToken, claimExpiresAt: _claimExpiresAt, ambiguousSince: _ambiguousSince, ...rest } = write;
  return enqueueError ? { ...rest, enqueueError } : rest;
}
