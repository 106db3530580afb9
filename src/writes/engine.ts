/**
 * The write engine: runs ONE write of any kind to its outcome (docs/writes.md, spec §4, §7).
 * Every kind is data (src/writes/kinds/); the rules here are the same for all of them:
 *
 * 1. A write found `sending` was interrupted after its request may have gone out (a worker killed
 *    mid-job, whose job BullMQ's stalled-job check handed to another worker): its outcome is
 *    ambiguous, so it is resolved (step 4), never blindly sent again.
 * 2. Otherwise it is sent through the ApiClient with priority `write`, the client retry policy of its
 *    kind (`safe` for idempotent kinds and clock-in, `unsent-only` for the others), the acting
 *    token and an `Idempotency-Key` header derived from the write id (`idempotencyKeyHeader`: the
 *    same on every attempt; the spec is silent on it, a server that ignores it loses nothing). `sending` is recorded the moment a rate-budget slot is granted: a `beforeRequest` hook
 *    passed with the request, which runs after the budget's (src/client/hooks.ts). A worker killed
 *    while it waits for a slot leaves its write `queued` (safe to send), not `sending` (ambiguous).
 * 3. The answer decides:
 *    - 2xx: `succeeded` (outcome = the API's `message`); the record is written through into the mirror.
 *    - 409 on a kind with a `conflictOutcome` (clock-in): `succeeded`, outcome `entry already open`.
 *    - any other 4xx but 429: `failed` with the API's `message` and `err`. Not retried.
 *    - not sent, or provably never processed (connection refused): back to `queued` and BullMQ
 *      retries it with backoff (safe for every kind).
 *    - a 429 after the client's own 429 retries, or a shutdown while waiting for a budget slot:
 *      `delay` (the worker moves the job to BullMQ's delayed set: no job attempt is spent).
 *    - ambiguous (a reset or timeout after sending, a 5xx): step 4.
 * 4. Ambiguous outcomes follow the kind's `ambiguity`: `resend` (idempotent kinds: retried),
 *    `ledger-lookup` (transaction.create: looked up in the ledger several times, spread until the
 *    request deadline has passed a second time after the send (`ledgerLookupWindowMs`), because a
 *    slow server may commit after our timeout; found once -> `succeeded`; never found -> sent again,
 *    with the same Idempotency-Key; more than one candidate, a ledger too long to search, or lookups
 *    that keep failing -> `needs_review` with the reason), `park` (`needs_review` with the reason).
 *
 * What is guaranteed: a write is never sent again while its outcome is unknown; it is sent again
 * only when the failure proves the server never processed it, or (ledger-lookup kinds) when the
 * ledger still lacks it after the lookup window. A server that honours the Idempotency-Key applies
 * it at most once per key even then. Not guaranteed: exactly once against a server that ignores the
 * key AND commits later than the lookup window.
 *
 * Outcomes are recorded with their change row (`write.succeeded`, `write.failed`,
 * `write.needs_review`) and the mirror write-through in one transaction (store.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { ApiClient, ApiResponse } from '../client/client.ts';
import { BizopsApiError, ConflictError, ConnectionError, InvalidResponseError, RateLimitError, UnknownTokenError } from '../client/errors.ts';
import type { RetryPolicy } from '../client/retry.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { AppendedChange } from '../mirror/store.ts';
import { isWriteKindName, writeKind, type LedgerLookup, type RetrySafety, type WriteKind } from './kinds/index.ts';
import type { WriteOutcome, WriteRecord, WriteStore, WriteThroughHook } from './store.ts';
import { fieldPath } from './validation.ts';

/** What the engine did with a write; `retry` asks BullMQ to run the job again later (with backoff). */
export type WriteProcessResult =
  | { action: 'finished'; write: WriteRecord }
  | { action: 'retry'; reason: string }
  /** Run it again after `delayMs` without spending a job attempt (a 429, a shutdown during a wait). */
  | { action: 'delay'; delayMs: number; reason: string }
  | { action: 'skipped'; reason: string };

/**
 * The `Idempotency-Key` header sent with every request of write `writeId`: derived from the write id
 * only, so it is the same on every attempt, every job run and every worker.
 */
export function idempotencyKeyHeader(writeId: string): string {
  return `bizops-sync:${writeId}`;
}

/**
 * Which run of the write's queue job this is: BullMQ runs a job up to `maxRuns` times (its
 * "attempts"). Not the write's `attempts`, which counts requests sent (budget slots taken).
 */
export interface JobRun {
  /** From 1. */
  run: number;
  maxRuns: number;
  /** Aborts on shutdown: waits (budget slot, ledger lookups) stop and the job is delayed, not failed. */
  signal?: AbortSignal;
}

/** Delay of a job put back because the worker is stopping, ms (any live worker picks it up after). */
const SHUTDOWN_DELAY_MS = 1000;

/** Construction options of a WriteEngine: its store, client and the ledger-lookup limits. */
export interface WriteEngineOptions {
  store: WriteStore;
  /** The API client (its rate budget a layer of it); the engine adds its `sending` mark to each write request. */
  client: ApiClient;
  logger?: Logger;
  /** Mirror write-through of successful responses; null turns it off. */
  writeThrough: WriteThroughHook | null;
  /** Wait before looking for an ambiguous write's record, so a request still in flight can land, ms. Default 2000. */
  ambiguousSettleMs?: number;
  /** How far before the send a ledger lookup starts looking (clock skew between us and the server), ms. Default 10 minutes. */
  ledgerLookbackMs?: number;
  /** Pages of 100 a ledger lookup reads at most before giving up to review. Default 20. */
  ledgerMaxPages?: number;
  /** The client's request deadline (ApiClientOptions.timeoutMs), ms. Default 30000. */
  requestTimeoutMs?: number;
  /**
   * Ledger lookups of an ambiguous write go on until this long after the request ended (its answer,
   * or at the latest the send + the request deadline): a server may commit after our timeout, ms.
   * Default: the request deadline.
   */
  ledgerLookupWindowMs?: number;
  /** Ledger lookups spread over that window, at least. Default 4. */
  ledgerLookups?: number;
  /** Hears every change row appended (to wake the webhook dispatcher). */
  onChanges?: (changes: AppendedChange[]) => void;
}

/** The client retry policy for a kind's retry safety (src/client/retry.ts). */
function clientRetryPolicy(safety: RetrySafety): RetryPolicy {
  return safety === 'idempotent' || safety === 'conflict-means-done' ? 'safe' : 'unsent-only';
}

/** Thrown from the `sending` mark when the write was finished meanwhile: the request is not sent. */
class WriteAlreadyFinishedError extends Error {
  override name = 'WriteAlreadyFinishedError';
}

/** True when the failure proves the server never processed the request. */
function provablyUnprocessed(error: unknown): boolean {
  if (error instanceof RateLimitError) return true;
  return error instanceof ConnectionError && !error.requestSent;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A unique-constraint violation: SQLite `SQLITE_CONSTRAINT_UNIQUE`, PostgreSQL SQLSTATE 23505. */
function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof Error) || !('code' in error)) return false;
  const code = String((error as { code: unknown }).code);
  return code.startsWith('SQLITE_CONSTRAINT') || code === '23505';
}

const listItemSchema = z.looseObject({ id: z.string() });

/**
 * Runs one stored write (by id) one step towards its outcome, following the rules in this module's
 * header (docs/writes.md, spec §4, §7). The write worker calls `process` once per run of the write's queue job.
 */
export class WriteEngine {
  private readonly store: WriteStore;
  private readonly client: ApiClient;
  private readonly logger: Logger;
  private readonly writeThrough: WriteThroughHook | null;
  private readonly settleMs: number;
  private readonly lookbackMs: number;
  private readonly maxPages: number;
  private readonly requestTimeoutMs: number;
  private readonly lookupWindowMs: number;
  private readonly lookups: number;
  private readonly onChanges: ((changes: AppendedChange[]) => void) | undefined;

  constructor(options: WriteEngineOptions) {
    this.store = options.store;
    this.client = options.client;
    this.logger = options.logger ?? silentLogger;
    this.writeThrough = options.writeThrough;
    this.settleMs = options.ambiguousSettleMs ?? 2000;
    this.lookbackMs = options.ledgerLookbackMs ?? 10 * 60_000;
    this.maxPages = options.ledgerMaxPages ?? 20;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.lookupWindowMs = options.ledgerLookupWindowMs ?? this.requestTimeoutMs;
    this.lookups = Math.max(1, options.ledgerLookups ?? 4);
    this.onChanges = options.onChanges;
  }

  /**
   * Runs write `writeId` one step towards its outcome.
   * @returns `finished` (terminal status recorded), `retry` (BullMQ should run it again), or `skipped`
   *   (already terminal, or unknown)
   * @throws only on storage failures (the database driver's error), which leave the row as it was for the next run
   */
  async process(writeId: string, jobRun: JobRun): Promise<WriteProcessResult> {
    const write = await this.store.get(writeId);
    if (!write) return { action: 'skipped', reason: `no write ${writeId} in the writes table` };
    if (write.status !== 'queued' && write.status !== 'sending') return { action: 'skipped', reason: `already ${write.status}` };
    if (!isWriteKindName(write.kind)) return this.finish(write, { status: 'failed', outcome: `unknown write kind ${write.kind}` });
    const kind = writeKind(write.kind);
    const parsed = kind.payloadSchema.safeParse(write.payload);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return this.finish(write, { status: 'failed', outcome: `the stored payload no longer validates: ${issue ? `${fieldPath(issue.path)}: ${issue.message}` : 'invalid'}` });
    }
    const payload = parsed.data;
    if (write.status === 'sending') {
      const reason = 'a previous attempt stopped after its request may have reached the server (worker stopped before recording the outcome)';
      return this.resolveAmbiguous(write, kind, payload, reason, null, jobRun);
    }
    return this.send(write, kind, payload, jobRun);
  }

  private async send(write: WriteRecord, kind: WriteKind, payload: unknown, jobRun: JobRun): Promise<WriteProcessResult> {
    let slots = 0;
    let response: ApiResponse<unknown>;
    try {
      response = await this.client.request({
        method: kind.method,
        path: kind.path(payload),
        body: kind.body(payload),
        contentSchema: kind.responseSchema,
        priority: 'write',
        retry: clientRetryPolicy(kind.retrySafety),
        token: write.actAs,
        headers: { 'idempotency-key': idempotencyKeyHeader(write.id) },
        hooks: {
          beforeRequest: async () => {
            // After the budget's slot, before the bytes leave: from here the outcome may be ambiguous.
            if (!(await this.store.markSending(write.id))) throw new WriteAlreadyFinishedError(`write ${write.id} finished meanwhile`);
            slots++;
          },
        },
      });
    } catch (error) {
      if (error instanceof WriteAlreadyFinishedError) return { action: 'skipped', reason: error.message };
      return this.handleFailure(write, kind, payload, error, slots > 0, jobRun);
    }
    return this.succeed(write, kind, payload, response);
  }

  private async succeed(write: WriteRecord, kind: WriteKind, payload: unknown, response: ApiResponse<unknown>): Promise<WriteProcessResult> {
    const content = response.content;
    const outcome: WriteOutcome = {
      status: 'succeeded',
      outcome: response.message || 'applied',
      result: content,
      httpStatus: response.status,
      remoteId: kind.remoteId(content, payload) ?? null,
    };
    const through = kind.writeThrough && this.writeThrough ? { stream: kind.writeThrough.stream, record: kind.writeThrough.record(content) } : undefined;
    try {
      return await this.finish(write, outcome, through);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // A ledger lookup gave this record to a look-alike write; this response is the authoritative claim.
      this.logger.error({ writeId: write.id, remoteId: outcome.remoteId }, 'the created record was already claimed by another write after a ledger lookup');
      return this.finish(write, { ...outcome, remoteId: null, outcome: `${outcome.outcome}; record ${outcome.remoteId} is also claimed by another write (ledger lookup): review it` }, through);
    }
  }

  private async handleFailure(
    write: WriteRecord,
    kind: WriteKind,
    payload: unknown,
    error: unknown,
    slotTaken: boolean,
    jobRun: JobRun,
  ): Promise<WriteProcessResult> {
    const message = describe(error);
    const status = error instanceof BizopsApiError ? error.status : undefined;
    if (error instanceof ConflictError && kind.conflictOutcome) {
      return this.finish(write, { status: 'succeeded', outcome: kind.conflictOutcome, result: { conflict: message }, httpStatus: 409 });
    }
    if (error instanceof UnknownTokenError) {
      return this.finish(write, { status: 'failed', outcome: `actAs: no token named "${write.actAs}" is configured`, error: message });
    }
    if (error instanceof InvalidResponseError && status !== undefined && status >= 200 && status < 300) {
      // The server applied it (2xx); only its answer was unreadable. Never send it again.
      return this.finish(write, { status: 'succeeded', outcome: `applied (HTTP ${status}), but the response did not validate`, error: message, httpStatus: status });
    }
    if (error instanceof BizopsApiError && status !== undefined && status >= 400 && status < 500 && status !== 429) {
      return this.finish(write, { status: 'failed', outcome: `refused by the API (HTTP ${status})`, error: message, httpStatus: status });
    }
    if (!slotTaken && jobRun.signal?.aborted) {
      // Stopped while waiting for a budget slot: nothing was sent; no job attempt is spent.
      return { action: 'delay', delayMs: SHUTDOWN_DELAY_MS, reason: 'the worker stopped while the write waited for a budget slot' };
    }
    if (error instanceof RateLimitError) {
      // The server processed nothing (spec §7); waiting for the budget is not a failed attempt.
      await this.store.markRetrying(write.id, message, 429);
      const retryAfterMs = error.retryAfter !== undefined && error.retryAfter > 0 ? Math.round(error.retryAfter * 1000) : 1000;
      return { action: 'delay', delayMs: retryAfterMs, reason: `rate limited (429): ${message}` };
    }
    if (!slotTaken || provablyUnprocessed(error)) {
      await this.store.markRetrying(write.id, message, status ?? null);
      return this.retryOrGiveUp(write.id, `not processed by the server: ${message}`, jobRun);
    }
    return this.resolveAmbiguous(write, kind, payload, `the outcome is unknown: ${message}`, status ?? null, jobRun);
  }

  private async resolveAmbiguous(
    write: WriteRecord,
    kind: WriteKind,
    payload: unknown,
    reason: string,
    httpStatus: number | null,
    jobRun: JobRun,
  ): Promise<WriteProcessResult> {
    const ambiguity = kind.ambiguity;
    if (ambiguity.resolve === 'resend') {
      await this.store.markRetrying(write.id, reason, httpStatus);
      return this.retryOrGiveUp(write.id, `${reason}; safe to send again`, jobRun);
    }
    if (ambiguity.resolve === 'park') {
      this.logger.warn({ writeId: write.id, kind: write.kind, reason }, 'write parked for review');
      return this.finish(write, { status: 'needs_review', outcome: ambiguity.reason, error: reason, httpStatus });
    }
    return this.resolveByLedger(write, kind, ambiguity.lookup, payload, reason, httpStatus, jobRun);
  }

  /**
   * Looks for the record an ambiguous write may have created (kind's `ledger-lookup`): first after
   * `settleMs`, then again, `ledgerLookups` times in all at least, until `ledgerLookupWindowMs` has
   * passed since the request ended (its answer, or at the latest its deadline): a slow server
   * commits after our timeout. Only then does "not found" mean it did not land. A shutdown during the waits delays the job (the row
   * stays `sending`: the next run looks again).
   */
  private async resolveByLedger(
    write: WriteRecord,
    kind: WriteKind,
    lookup: LedgerLookup<unknown>,
    payload: unknown,
    reason: string,
    httpStatus: number | null,
    jobRun: JobRun,
  ): Promise<WriteProcessResult> {
    const sentAtMs = Date.parse((await this.store.get(write.id))?.sendingAt ?? write.sendingAt ?? write.createdAt);
    // The request ended now (an answer, a reset, our timeout), or at the latest at its deadline.
    const endedAtMs = Math.min(Date.now(), sentAtMs + this.requestTimeoutMs);
    const lookUntilMs = endedAtMs + this.lookupWindowMs;
    const intervalMs = Math.max(1, Math.ceil(this.lookupWindowMs / Math.max(1, this.lookups - 1)));
    let waitMs = this.settleMs;
    let pass: { matches: Record<string, unknown>[]; complete: boolean } | WriteProcessResult;
    let lookupsDone = 0;
    for (;;) {
      try {
        await sleep(waitMs, undefined, { signal: jobRun.signal });
      } catch {
        return { action: 'delay', delayMs: SHUTDOWN_DELAY_MS, reason: 'the worker stopped during the ledger lookups; the next run looks again' };
      }
      pass = await this.lookInLedger(write, lookup, payload, reason, httpStatus, jobRun, sentAtMs);
      lookupsDone++;
      if (!('matches' in pass)) return pass;
      const unclaimed = await this.unclaimed(write, pass.matches);
      if (unclaimed.length > 0 || !pass.complete) break;
      const now = Date.now();
      if (now >= lookUntilMs && lookupsDone >= this.lookups) break;
      // Resolving long after the send (a worker restarted): the window is over, one lookup tells.
      if (lookupsDone === 1 && now - lookUntilMs > this.lookupWindowMs) break;
      waitMs = intervalMs;
    }
    const { matches, complete } = pass;
    const candidates = await this.unclaimed(write, matches);
    if (candidates.length === 0) {
      if (!complete) {
        return this.finish(write, { status: 'needs_review', outcome: `${reason}; the ledger is too long to search (${this.maxPages} pages)`, error: reason, httpStatus });
      }
      await this.store.markRetrying(write.id, `${reason}; not in the ledger, so it did not land: sending again`, httpStatus);
      return this.retryOrGiveUp(write.id, `${reason}; not found in the ledger`, jobRun);
    }
    if (candidates.length > 1) {
      const ids = candidates.map((item) => String(item.id)).join(', ');
      return this.finish(write, {
        status: 'needs_review',
        outcome: `${reason}; ${candidates.length} ledger records match this write (${ids}) and none can be told apart: check which one it created`,
        error: reason,
        httpStatus,
      });
    }
    const found = candidates[0]!;
    const lookalikes = (await this.store.unfinishedOfKind(write.kind, write.id)).filter((other) => {
      const otherPayload = kind.payloadSchema.safeParse(other.payload);
      return otherPayload.success && lookup.matches(found, otherPayload.data);
    });
    if (lookalikes.length > 0) {
      return this.finish(write, {
        status: 'needs_review',
        outcome: `${reason}; ledger record ${String(found.id)} matches this write and ${lookalikes.length} other unfinished write(s) with the same fields (${lookalikes.map((w) => w.id).join(', ')})`,
        error: reason,
        httpStatus,
      });
    }
    const outcome: WriteOutcome = {
      status: 'succeeded',
      outcome: `found in the ledger after an ambiguous outcome (${reason})`,
      result: { [lookup.recordKey]: found },
      remoteId: String(found.id),
      httpStatus,
    };
    try {
      return await this.finish(write, outcome, lookup.stream && this.writeThrough ? { stream: lookup.stream, record: found } : undefined);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      return this.finish(write, { status: 'needs_review', outcome: `${reason}; ledger record ${String(found.id)} was claimed by another write meanwhile`, error: reason, httpStatus });
    }
  }

  /** One pass through the ledger list: the items matching the write, and whether the list was read to its end. */
  private async lookInLedger(
    write: WriteRecord,
    lookup: LedgerLookup<unknown>,
    payload: unknown,
    reason: string,
    httpStatus: number | null,
    jobRun: JobRun,
    sentAtMs: number,
  ): Promise<{ matches: Record<string, unknown>[]; complete: boolean } | WriteProcessResult> {
    const createdAfter = new Date(sentAtMs - this.lookbackMs).toISOString();
    const matches: Record<string, unknown>[] = [];
    let complete = true;
    try {
      let pages = 0;
      for await (const page of this.client.paginate(lookup.path, {
        itemsKey: lookup.itemsKey,
        itemSchema: listItemSchema,
        query: lookup.query(payload, createdAfter),
        priority: 'write',
        token: write.actAs,
        signal: jobRun.signal,
      })) {
        for (const item of page.items) if (lookup.matches(item, payload)) matches.push(item);
        if (++pages >= this.maxPages && page.pagination.hasMore) {
          complete = false;
          break;
        }
      }
    } catch (error) {
      if (jobRun.signal?.aborted) return { action: 'delay', delayMs: SHUTDOWN_DELAY_MS, reason: 'the worker stopped during a ledger lookup; the next run looks again' };
      const message = describe(error);
      const status = error instanceof BizopsApiError ? error.status : undefined;
      if ((status !== undefined && status >= 400 && status < 500 && status !== 429) || jobRun.run >= jobRun.maxRuns) {
        return this.finish(write, { status: 'needs_review', outcome: `${reason}; could not look for it in the ledger: ${message}`, error: reason, httpStatus });
      }
      // The row stays `sending`: the next run looks again instead of sending.
      return { action: 'retry', reason: `ledger lookup failed: ${message}` };
    }
    return { matches, complete };
  }

  /** The ledger items no other write of this kind has claimed as the record it created. */
  private async unclaimed(write: WriteRecord, items: readonly Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
    const free: Record<string, unknown>[] = [];
    for (const item of items) if (!(await this.store.isClaimed(write.kind, String(item.id), write.id))) free.push(item);
    return free;
  }

  private async retryOrGiveUp(writeId: string, reason: string, jobRun: JobRun): Promise<WriteProcessResult> {
    if (jobRun.run < jobRun.maxRuns) return { action: 'retry', reason };
    const write = await this.store.get(writeId);
    if (!write) return { action: 'skipped', reason: `no write ${writeId}` };
    return this.finish(write, { status: 'failed', outcome: `gave up after ${jobRun.run} attempts`, error: write.error ?? reason, httpStatus: write.httpStatus });
  }

  /** Records the outcome (with its change row and write-through) and tells `onChanges`. */
  private async finish(
    write: WriteRecord,
    outcome: WriteOutcome,
    through?: { stream: Parameters<WriteThroughHook>[1]; record: Record<string, unknown> },
  ): Promise<WriteProcessResult> {
    const hook = this.writeThrough;
    const finished = await this.store.finish(write.id, outcome, through && hook ? { hook, ...through } : undefined);
    if (!finished) return { action: 'skipped', reason: 'finished meanwhile by another run' };
    if (finished.writeThroughError !== undefined) {
      // Rolled back to its savepoint (store.ts); the outcome and its change row stand.
      this.logger.error({ writeId: write.id, stream: through?.stream, error: describe(finished.writeThroughError) }, 'mirror write-through failed; the next sync will mirror the record');
    }
    const log = outcome.status === 'succeeded' ? this.logger.info.bind(this.logger) : this.logger.warn.bind(this.logger);
    log({ writeId: write.id, kind: write.kind, status: outcome.status, outcome: outcome.outcome, httpStatus: outcome.httpStatus ?? undefined }, `write ${outcome.status}`);
    if (finished.changes.length > 0) this.onChanges?.(finished.changes);
    return { action: 'finished', write: finished.write };
  }
}
