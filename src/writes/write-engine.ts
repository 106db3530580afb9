/**
 * The write engine: runs ONE write of any kind to its outcome (docs/writes.md, spec §4, §7).
 * Every kind is data (src/writes/kinds/); the rules here are the same for all of them:
 *
 * 0. A run first takes the write's CLAIM (src/writes/write-store.ts: a token and an expiry on the row, in
 *    one conditional UPDATE) and renews it while it runs; a write claimed by another live run is
 *    left alone (`skipped`). Only the holder marks it sending, retrying or finished.
 * 1. A write found `sending` was interrupted after its request may have gone out (its previous
 *    holder died, so its claim expired): its outcome is ambiguous, so it is resolved (step 4),
 *    never blindly sent again.
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
 *    request deadline plus a settle time (`ledgerSettleMs`) have passed since the send, because a
 *    slow server may commit after our timeout; found once -> `succeeded`; never found -> sent again,
 *    with the same Idempotency-Key, and after that re-send the ledger is watched for another settle
 *    time: a late commit of the first send turning up makes it `needs_review` naming both records,
 *    with a `write.duplicated` change; more than one candidate, a ledger too long to search, or
 *    lookups that keep failing -> `needs_review` with the reason), `park` (`needs_review` with the reason).
 *
 * What is guaranteed: a write is never sent again while its outcome is unknown; it is sent again
 * only when the failure proves the server never processed it, or (ledger-lookup kinds) when the
 * ledger still lacks it after the lookup window. `succeeded` is recorded only over exactly one
 * effect. A server that honours the Idempotency-Key applies it at most once per key even then. Not
 * guaranteed: exactly once against a server that ignores the key AND commits later than the request
 * deadline plus the settle time (such a duplicate is reported when the watch after the re-send sees it).
 *
 * Outcomes are recorded with their change row (`write.succeeded`, `write.failed`,
 * `write.needs_review`) and the mirror write-through in one transaction (store.ts).
 */
import { withSpan } from '../telemetry/spans.ts';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { ApiClient, ApiResponse } from '../client/client.ts';
import { BizopsApiError, ConflictError, ConnectionError, InvalidResponseError, RateLimitError, UnknownTokenError } from '../client/api-errors.ts';
import type { RetryPolicy } from '../client/retry.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { AppendedChange } from '../mirror/mirror-store.ts';
import { isWriteKindName, writeKind, type LedgerLookup, type RetrySafety, type WriteKind } from './kinds/index.ts';
import { WRITE_DUPLICATED, type WriteOutcome, type WriteRecord, type WriteStore, type WriteThroughHook } from './write-store.ts';
import { fieldPath, textRuleIssues } from './validation.ts';

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

/** A job run holding the write's claim: its token, and a signal that also aborts when the claim is lost. */
interface ClaimedRun extends JobRun {
  token: string;
}

/** Delay of a job put back because the worker is stopping, ms (any live worker picks it up after). */
const SHUTDOWN_DELAY_MS = 1000;

/** Default claim length, seconds: renewed every third of it while the run lives. */
export const DEFAULT_CLAIM_SECONDS = 30;

/** Default settle time after the request deadline during which ledger lookups go on, ms (config `writes.ledgerSettleSeconds`). */
export const DEFAULT_LEDGER_SETTLE_MS = 60_000;

/** Construction options of a WriteEngine: its store, client, the claim and the ledger-lookup limits. */
export interface WriteEngineOptions {
  store: WriteStore;
  /** The API client (its rate budget a layer of it); the engine adds its `sending` mark to each write request. */
  client: ApiClient;
  logger?: Logger;
  /** Mirror write-through of successful responses; null turns it off. */
  writeThrough: WriteThroughHook | null;
  /** How long a run's claim on a write lasts unless renewed (renewed every third of it), seconds. Default 30. */
  claimSeconds?: number;
  /** Wait before the first look for an ambiguous write's record, so a request still in flight can land, ms. Default 2000. */
  ambiguousSettleMs?: number;
  /** How far before the send a ledger lookup starts looking (clock skew between us and the server), ms. Default 10 minutes. */
  ledgerLookbackMs?: number;
  /** Pages of 100 a ledger lookup reads at most before giving up to review. Default 20. */
  ledgerMaxPages?: number;
  /** The client's deadline of one whole request (config `api.requestDeadlineSeconds`), ms. Default 60000. */
  requestDeadlineMs?: number;
  /**
   * Ledger lookups of an ambiguous write go on until the request deadline plus this long after the
   * send (a server may commit after our deadline); after a re-send the ledger is watched this long
   * again for a late commit of the first send (config `writes.ledgerSettleSeconds`), ms. Default 60000.
   */
  ledgerSettleMs?: number;
  /** Ledger lookups spread over each window, at least. Default 4. */
  ledgerLookups?: number;
  /** Hears every change row appended (to wake the webhook dispatcher). */
  onChanges?: (changes: AppendedChange[]) => void;
}

/** The client retry policy for a kind's retry safety (src/client/retry.ts). */
function clientRetryPolicy(safety: RetrySafety): RetryPolicy {
  return safety === 'idempotent' || safety === 'conflict-means-done' ? 'safe' : 'unsent-only';
}

/** Thrown from the `sending` mark when this run no longer holds the write's claim: the request is not sent. */
class WriteClaimLostError extends Error {
  override name = 'WriteClaimLostError';
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
 * Keeps a run's claim alive: renews it every third of its length; when a renewal finds the claim
 * gone (it expired and another run took it), `signal` aborts so the run's waits stop. A renewal
 * answered after `stop()` (the run recorded its outcome, which releases the claim) means nothing.
 */
class ClaimKeeper {
  readonly #lost = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #stopped = false;

  constructor(store: WriteStore, writeId: string, token: string, seconds: number, logger: Logger) {
    this.#timer = setInterval(
      () => {
        store.renewClaim(writeId, token, seconds).then(
          (held) => {
            if (held || this.#stopped || this.#lost.signal.aborted) return;
            logger.error({ writeId }, 'write claim lost (it expired and another run took it): this run stops');
            this.#lost.abort(new Error(`the claim on write ${writeId} was lost`));
          },
          (error: unknown) => {
            if (!this.#stopped) logger.warn({ writeId, error: describe(error) }, 'could not renew the write claim; trying again');
          },
        );
      },
      Math.max(50, Math.floor((seconds * 1000) / 3)),
    );
    this.#timer.unref();
  }

  get signal(): AbortSignal {
    return this.#lost.signal;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }
}

/**
 * Runs one stored write (by id) one step towards its outcome, following the rules in this module's
 * header (docs/writes.md, spec §4, §7). The write worker calls `process` once per run of the write's queue job.
 */
export class WriteEngine {
  private readonly store: WriteStore;
  private readonly client: ApiClient;
  private readonly logger: Logger;
  private readonly writeThrough: WriteThroughHook | null;
  private readonly claimSeconds: number;
  private readonly settleMs: number;
  private readonly lookbackMs: number;
  private readonly maxPages: number;
  private readonly requestDeadlineMs: number;
  private readonly ledgerSettleMs: number;
  private readonly lookups: number;
  private readonly onChanges: ((changes: AppendedChange[]) => void) | undefined;

  constructor(options: WriteEngineOptions) {
    this.store = options.store;
    this.client = options.client;
    this.logger = options.logger ?? silentLogger;
    this.writeThrough = options.writeThrough;
    this.claimSeconds = options.claimSeconds ?? DEFAULT_CLAIM_SECONDS;
    if (!(Number.isFinite(this.claimSeconds) && this.claimSeconds > 0)) throw new RangeError(`claimSeconds must be a positive number, got ${String(options.claimSeconds)}`);
    this.settleMs = options.ambiguousSettleMs ?? 2000;
    this.lookbackMs = options.ledgerLookbackMs ?? 10 * 60_000;
    this.maxPages = options.ledgerMaxPages ?? 20;
    this.requestDeadlineMs = options.requestDeadlineMs ?? 60_000;
    this.ledgerSettleMs = options.ledgerSettleMs ?? DEFAULT_LEDGER_SETTLE_MS;
    this.lookups = Math.max(1, options.ledgerLookups ?? 4);
    this.onChanges = options.onChanges;
  }

  /**
   * Runs write `writeId` one step towards its outcome, under a claim on its row.
   * @returns `finished` (terminal status recorded), `retry` (BullMQ should run it again), `delay`, or
   *   `skipped` (already terminal, unknown, or claimed by another live run)
   * @throws only on storage failures (the database driver's error), which leave the row as it was for the next run
   */
  async process(writeId: string, jobRun: JobRun): Promise<WriteProcessResult> {
    const token = randomUUID();
    const write = await this.store.claim(writeId, token, this.claimSeconds);
    if (!write) {
      const current = await this.store.get(writeId);
      if (!current) return { action: 'skipped', reason: `no write ${writeId} in the writes table` };
      if (current.status !== 'queued' && current.status !== 'sending') return { action: 'skipped', reason: `already ${current.status}` };
      return { action: 'skipped', reason: `claimed by another run (until ${current.claimExpiresAt ?? '?'})` };
    }
    const keeper = new ClaimKeeper(this.store, writeId, token, this.claimSeconds, this.logger);
    const signal = jobRun.signal ? AbortSignal.any([jobRun.signal, keeper.signal]) : keeper.signal;
    try {
      return await this.run(write, { ...jobRun, signal, token });
    } finally {
      keeper.stop();
      // A finished write's claim was cleared with its outcome; any other result gives it up for the next run.
      await this.store.releaseClaim(writeId, token);
    }
  }

  private async run(write: WriteRecord, run: ClaimedRun): Promise<WriteProcessResult> {
    if (!isWriteKindName(write.kind)) return this.finish(write, { status: 'failed', outcome: `unknown write kind ${write.kind}` }, run);
    const kind = writeKind(write.kind);
    const parsed = kind.payloadSchema.safeParse(write.payload);
    const textIssue = textRuleIssues(write.payload)[0];
    if (!parsed.success || textIssue) {
      const issue = parsed.success ? undefined : parsed.error.issues[0];
      const broken = issue ? `${fieldPath(issue.path)}: ${issue.message}` : textIssue ? `${textIssue.field}: ${textIssue.rule}` : 'invalid';
      return this.finish(write, { status: 'failed', outcome: `the stored payload no longer validates: ${broken}` }, run);
    }
    const payload = parsed.data;
    if (write.status === 'sending') {
      if (write.remoteId !== null && write.ambiguousSince !== null && kind.ambiguity.resolve === 'ledger-lookup') {
        // A re-send created a record; the watch for a late commit of the first send was cut short.
        const created = { remoteId: write.remoteId, result: write.result, httpStatus: write.httpStatus ?? 200, outcome: write.outcome ?? 'applied' };
        return this.watchAfterResend(write, kind, kind.ambiguity.lookup, payload, created, Date.parse(write.updatedAt), run);
      }
      const reason = 'a previous run stopped after its request may have reached the server (its worker stopped or died before recording the outcome)';
      return this.resolveAmbiguous(write, kind, payload, reason, null, run);
    }
    return this.send(write, kind, payload, run);
  }

  private send(write: WriteRecord, kind: WriteKind, payload: unknown, run: ClaimedRun): Promise<WriteProcessResult> {
    // One trace per send (src/telemetry): the write's id and kind, never its payload.
    return withSpan('write.send', { 'bizops.write_id': write.id, 'bizops.write_kind': write.kind }, async (span) => {
      const result = await this.sendNow(write, kind, payload, run);
      span.setAttribute('bizops.action', result.action);
      return result;
    }, { root: true });
  }

  private async sendNow(write: WriteRecord, kind: WriteKind, payload: unknown, run: ClaimedRun): Promise<WriteProcessResult> {
    let sentAt: string | undefined;
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
            if (!(await this.store.markSending(write.id, run.token))) throw new WriteClaimLostError(`write ${write.id}: this run no longer holds its claim (finished or taken over meanwhile)`);
            sentAt = new Date().toISOString();
          },
        },
      });
    } catch (error) {
      if (error instanceof WriteClaimLostError) return { action: 'skipped', reason: error.message };
      return this.handleFailure(write, kind, payload, error, sentAt, run);
    }
    return this.succeed(write, kind, payload, response, run);
  }

  private async succeed(write: WriteRecord, kind: WriteKind, payload: unknown, response: ApiResponse<unknown>, run: ClaimedRun): Promise<WriteProcessResult> {
    const content = response.content;
    const outcome: WriteOutcome = {
      status: 'succeeded',
      outcome: response.message || 'applied',
      result: content,
      httpStatus: response.status,
      remoteId: kind.remoteId(content, payload) ?? null,
    };
    const through = kind.writeThrough && this.writeThrough ? { stream: kind.writeThrough.stream, record: kind.writeThrough.record(content) } : undefined;
    if (write.ambiguousSince !== null && kind.ambiguity.resolve === 'ledger-lookup' && outcome.remoteId) {
      // A re-send after an ambiguous send: `succeeded` only once the ledger shows one effect.
      const created = { remoteId: outcome.remoteId, result: content, httpStatus: response.status, outcome: outcome.outcome };
      try {
        if (!(await this.store.markResent(write.id, run.token, created))) return this.claimLost(write, `re-sent, created ${outcome.remoteId}`);
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        return this.finish(write, { ...outcome, status: 'needs_review', remoteId: null, outcome: `re-sent after an ambiguous send; record ${outcome.remoteId} is also claimed by another write (ledger lookup): review it` }, run);
      }
      return this.watchAfterResend(write, kind, kind.ambiguity.lookup, payload, created, Date.now(), run);
    }
    try {
      return await this.finish(write, outcome, run, through);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      // A ledger lookup gave this record to a look-alike write; this response is the authoritative claim.
      this.logger.error({ writeId: write.id, remoteId: outcome.remoteId }, 'the created record was already claimed by another write after a ledger lookup');
      return this.finish(write, { ...outcome, remoteId: null, outcome: `${outcome.outcome}; record ${outcome.remoteId} is also claimed by another write (ledger lookup): review it` }, run, through);
    }
  }

  private async handleFailure(write: WriteRecord, kind: WriteKind, payload: unknown, error: unknown, sentAt: string | undefined, run: ClaimedRun): Promise<WriteProcessResult> {
    const message = describe(error);
    const status = error instanceof BizopsApiError ? error.status : undefined;
    if (error instanceof ConflictError && kind.conflictOutcome) {
      return this.finish(write, { status: 'succeeded', outcome: kind.conflictOutcome, result: { conflict: message }, httpStatus: 409 }, run);
    }
    if (error instanceof UnknownTokenError) {
      return this.finish(write, { status: 'failed', outcome: `actAs: no token named "${write.actAs}" is configured`, error: message }, run);
    }
    if (error instanceof InvalidResponseError && status !== undefined && status >= 200 && status < 300) {
      // The server applied it (2xx); only its answer was unreadable. Never send it again.
      return this.finish(write, { status: 'succeeded', outcome: `applied (HTTP ${status}), but the response did not validate`, error: message, httpStatus: status }, run);
    }
    if (error instanceof BizopsApiError && status !== undefined && status >= 400 && status < 500 && status !== 429) {
      return this.finish(write, { status: 'failed', outcome: `refused by the API (HTTP ${status})`, error: message, httpStatus: status }, run);
    }
    if (sentAt === undefined && run.signal?.aborted) {
      // Stopped while waiting for a budget slot: nothing was sent; no job attempt is spent.
      return { action: 'delay', delayMs: SHUTDOWN_DELAY_MS, reason: 'the worker stopped while the write waited for a budget slot' };
    }
    if (error instanceof RateLimitError) {
      // The server processed nothing (spec §7); waiting for the budget is not a failed attempt.
      await this.store.markRetrying(write.id, run.token, message, 429);
      const retryAfterMs = error.retryAfter !== undefined && error.retryAfter > 0 ? Math.round(error.retryAfter * 1000) : 1000;
      return { action: 'delay', delayMs: retryAfterMs, reason: `rate limited (429): ${message}` };
    }
    if (sentAt === undefined || provablyUnprocessed(error)) {
      await this.store.markRetrying(write.id, run.token, message, status ?? null);
      return this.retryOrGiveUp(write.id, `not processed by the server: ${message}`, run);
    }
    await this.store.markAmbiguous(write.id, run.token, sentAt);
    return this.resolveAmbiguous(write, kind, payload, `the outcome is unknown: ${message}`, status ?? null, run);
  }

  private async resolveAmbiguous(write: WriteRecord, kind: WriteKind, payload: unknown, reason: string, httpStatus: number | null, run: ClaimedRun): Promise<WriteProcessResult> {
    const ambiguity = kind.ambiguity;
    if (ambiguity.resolve === 'resend') {
      await this.store.markRetrying(write.id, run.token, reason, httpStatus);
      return this.retryOrGiveUp(write.id, `${reason}; safe to send again`, run);
    }
    if (ambiguity.resolve === 'park') {
      this.logger.warn({ writeId: write.id, kind: write.kind, reason }, 'write parked for review');
      return this.finish(write, { status: 'needs_review', outcome: ambiguity.reason, error: reason, httpStatus }, run);
    }
    return this.resolveByLedger(write, kind, ambiguity.lookup, payload, reason, httpStatus, run);
  }

  /**
   * Looks in the ledger `lookups` times at least, spread until `untilMs`, the first after `firstWaitMs`;
   * stops early when `enough` says the matches settle it.
   * @returns the last pass, or the result to return (a shutdown, a lookup that failed for good)
   */
  private async lookRepeatedly(
    write: WriteRecord,
    lookup: LedgerLookup<unknown>,
    payload: unknown,
    sentAtMs: number,
    untilMs: number,
    firstWaitMs: number,
    enough: (unclaimed: Record<string, unknown>[]) => boolean,
    onFailure: (message: string, status: number | undefined) => Promise<WriteProcessResult>,
    run: ClaimedRun,
  ): Promise<{ unclaimed: Record<string, unknown>[]; complete: boolean } | WriteProcessResult> {
    const intervalMs = Math.max(1, Math.ceil(Math.max(0, untilMs - Date.now() - firstWaitMs) / Math.max(1, this.lookups - 1)));
    let waitMs = firstWaitMs;
    let lookupsDone = 0;
    for (;;) {
      try {
        await sleep(waitMs, undefined, { signal: run.signal });
      } catch {
        return { action: 'delay', delayMs: SHUTDOWN_DELAY_MS, reason: 'the worker stopped (or lost the claim) during the ledger lookups; the next run looks again' };
      }
      const pass = await this.lookInLedger(write, lookup, payload, sentAtMs, run);
      lookupsDone++;
      if ('error' in pass) {
        if (run.signal?.aborted) return { action: 'delay', delayMs: SHUTDOWN_DELAY_MS, reason: 'the worker stopped during a ledger lookup; the next run looks again' };
        return onFailure(pass.error, pass.status);
      }
      const unclaimed = await this.unclaimed(write, pass.matches);
      if (enough(unclaimed) || !pass.complete) return { unclaimed, complete: pass.complete };
      const now = Date.now();
      if (now >= untilMs && lookupsDone >= this.lookups) return { unclaimed, complete: true };
      // Resolving long after the window (a worker restarted much later): one lookup tells.
      if (lookupsDone === 1 && now >= untilMs) return { unclaimed, complete: true };
      waitMs = intervalMs;
    }
  }

  /**
   * Looks for the record an ambiguous write may have created (kind's `ledger-lookup`): first after
   * `ambiguousSettleMs`, then again, `ledgerLookups` times in all at least, until the request
   * deadline plus `ledgerSettleMs` have passed since the send: a slow server commits after our
   * deadline. Only then does "not found" mean it did not land. A shutdown during the waits delays
   * the job (the row stays `sending`: the next run looks again).
   */
  private async resolveByLedger(
    write: WriteRecord,
    kind: WriteKind,
    lookup: LedgerLookup<unknown>,
    payload: unknown,
    reason: string,
    httpStatus: number | null,
    run: ClaimedRun,
  ): Promise<WriteProcessResult> {
    const sentAtMs = Date.parse((await this.store.get(write.id))?.sendingAt ?? write.sendingAt ?? write.createdAt);
    const lookUntilMs = sentAtMs + this.requestDeadlineMs + this.ledgerSettleMs;
    const review = (outcome: string): Promise<WriteProcessResult> => this.finish(write, { status: 'needs_review', outcome, error: reason, httpStatus }, run);
    const pass = await this.lookRepeatedly(
      write,
      lookup,
      payload,
      sentAtMs,
      lookUntilMs,
      this.settleMs,
      (unclaimed) => unclaimed.length > 0,
      async (message, status) => {
        if ((status !== undefined && status >= 400 && status < 500 && status !== 429) || run.run >= run.maxRuns) {
          return review(`${reason}; could not look for it in the ledger: ${message}`);
        }
        // The row stays `sending`: the next run looks again instead of sending.
        return { action: 'retry', reason: `ledger lookup failed: ${message}` };
      },
      run,
    );
    if (!('unclaimed' in pass)) return pass;
    const candidates = pass.unclaimed;
    if (candidates.length === 0) {
      if (!pass.complete) return review(`${reason}; the ledger is too long to search (${this.maxPages} pages)`);
      if (!(await this.store.markRetrying(write.id, run.token, `${reason}; not in the ledger, so it did not land: sending again`, httpStatus))) return this.claimLost(write, 'not found in the ledger');
      return this.retryOrGiveUp(write.id, `${reason}; not found in the ledger`, run);
    }
    if (candidates.length > 1) {
      const ids = candidates.map((item) => String(item.id)).join(', ');
      return review(`${reason}; ${candidates.length} ledger records match this write (${ids}) and none can be told apart: check which one it created`);
    }
    const found = candidates[0]!;
    const lookalikes = await this.lookalikes(write, kind, lookup, found);
    if (lookalikes.length > 0) {
      return review(`${reason}; ledger record ${String(found.id)} matches this write and ${lookalikes.length} other unfinished write(s) with the same fields (${lookalikes.join(', ')})`);
    }
    const outcome: WriteOutcome = {
      status: 'succeeded',
      outcome: `found in the ledger after an ambiguous outcome (${reason})`,
      result: { [lookup.recordKey]: found },
      remoteId: String(found.id),
      httpStatus,
    };
    try {
      return await this.finish(write, outcome, run, lookup.stream && this.writeThrough ? { stream: lookup.stream, record: found } : undefined);
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      return review(`${reason}; ledger record ${String(found.id)} was claimed by another write meanwhile`);
    }
  }

  /**
   * After a re-send created `created.remoteId`: watches the ledger for `ledgerSettleMs` more (from
   * `resentAtMs`) for another record matching the write, a late commit of the ambiguous first send.
   * One found: `needs_review` naming both records, with a `write.duplicated` change. None:
   * `succeeded` over the re-send's record.
   */
  private async watchAfterResend(
    write: WriteRecord,
    kind: WriteKind,
    lookup: LedgerLookup<unknown>,
    payload: unknown,
    created: { remoteId: string; result: unknown; httpStatus: number; outcome: string },
    resentAtMs: number,
    run: ClaimedRun,
  ): Promise<WriteProcessResult> {
    const firstSentMs = Date.parse(write.ambiguousSince ?? write.createdAt);
    const others = (unclaimed: Record<string, unknown>[]) => unclaimed.filter((item) => String(item.id) !== created.remoteId);
    const pass = await this.lookRepeatedly(
      write,
      lookup,
      payload,
      firstSentMs,
      resentAtMs + this.ledgerSettleMs,
      this.settleMs,
      (unclaimed) => others(unclaimed).length > 0,
      async (message) => {
        if (run.run < run.maxRuns) return { action: 'retry', reason: `ledger lookup after the re-send failed: ${message}` };
        return this.finish(write, { status: 'needs_review', outcome: `re-sent after an ambiguous send and created ${created.remoteId}, but the ledger could not be checked for the first send: ${message}`, result: created.result, httpStatus: created.httpStatus }, run);
      },
      run,
    );
    if (!('unclaimed' in pass)) return pass;
    const duplicates = others(pass.unclaimed);
    if (duplicates.length > 0) {
      const ids = [...duplicates.map((item) => String(item.id)), created.remoteId];
      const lookalikes = await this.lookalikes(write, kind, lookup, duplicates[0]!);
      const why =
        lookalikes.length > 0
          ? ` (or one of them belongs to another unfinished write with the same fields: ${lookalikes.join(', ')})`
          : '';
      this.logger.error({ writeId: write.id, ledgerIds: ids }, 'write applied twice: the first, ambiguous send committed late');
      return this.finish(
        write,
        {
          status: 'needs_review',
          outcome: `applied twice: the first send committed late and the re-send created another record; ledger records ${ids.join(' and ')}${why}: reverse one`,
          result: { ...(created.result as Record<string, unknown>), ledgerIds: ids },
          httpStatus: created.httpStatus,
          remoteId: created.remoteId,
          error: write.error,
          events: [WRITE_DUPLICATED],
        },
        run,
      );
    }
    if (!pass.complete) {
      return this.finish(write, { status: 'needs_review', outcome: `re-sent after an ambiguous send and created ${created.remoteId}, but the ledger is too long to check for the first send (${this.maxPages} pages)`, result: created.result, httpStatus: created.httpStatus }, run);
    }
    const record = kind.writeThrough && this.writeThrough ? kind.writeThrough.record(created.result) : undefined;
    return this.finish(
      write,
      { status: 'succeeded', outcome: `${created.outcome} (re-sent after an ambiguous send; the ledger shows one record)`, result: created.result, httpStatus: created.httpStatus, remoteId: created.remoteId },
      run,
      record && kind.writeThrough ? { stream: kind.writeThrough.stream, record } : undefined,
    );
  }

  /** Ids of the other unfinished writes of this kind whose payload `found` would match too. */
  private async lookalikes(write: WriteRecord, kind: WriteKind, lookup: LedgerLookup<unknown>, found: Record<string, unknown>): Promise<string[]> {
    return (await this.store.unfinishedOfKind(write.kind, write.id))
      .filter((other) => {
        const otherPayload = kind.payloadSchema.safeParse(other.payload);
        return otherPayload.success && lookup.matches(found, otherPayload.data);
      })
      .map((other) => other.id);
  }

  /** One pass through the ledger list: the items matching the write, and whether the list was read to its end. */
  private async lookInLedger(
    write: WriteRecord,
    lookup: LedgerLookup<unknown>,
    payload: unknown,
    sentAtMs: number,
    run: ClaimedRun,
  ): Promise<{ matches: Record<string, unknown>[]; complete: boolean } | { error: string; status: number | undefined }> {
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
        signal: run.signal,
      })) {
        for (const item of page.items) if (lookup.matches(item, payload)) matches.push(item);
        if (++pages >= this.maxPages && page.pagination.hasMore) {
          complete = false;
          break;
        }
      }
    } catch (error) {
      return { error: describe(error), status: error instanceof BizopsApiError ? error.status : undefined };
    }
    return { matches, complete };
  }

  /** The ledger items no other write of this kind has claimed as the record it created. */
  private async unclaimed(write: WriteRecord, items: readonly Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
    const free: Record<string, unknown>[] = [];
    for (const item of items) if (!(await this.store.isClaimed(write.kind, String(item.id), write.id))) free.push(item);
    return free;
  }

  private async retryOrGiveUp(writeId: string, reason: string, run: ClaimedRun): Promise<WriteProcessResult> {
    if (run.run < run.maxRuns) return { action: 'retry', reason };
    const write = await this.store.get(writeId);
    if (!write) return { action: 'skipped', reason: `no write ${writeId}` };
    return this.finish(write, { status: 'failed', outcome: `gave up after ${run.run} attempts`, error: write.error ?? reason, httpStatus: write.httpStatus }, run);
  }

  /** This run lost the write's claim before it could record `what`: logged; the holder decides the outcome. */
  private claimLost(write: WriteRecord, what: string): WriteProcessResult {
    this.logger.error({ writeId: write.id, kind: write.kind, seen: what }, 'write claim lost before the outcome was recorded; the run holding it now resolves the write');
    return { action: 'skipped', reason: `the claim was lost before recording: ${what}` };
  }

  /** Records the outcome (with its change rows and write-through) for the claim's holder and tells `onChanges`. */
  private async finish(
    write: WriteRecord,
    outcome: WriteOutcome,
    run: ClaimedRun,
    through?: { stream: Parameters<WriteThroughHook>[1]; record: Record<string, unknown> },
  ): Promise<WriteProcessResult> {
    const hook = this.writeThrough;
    const finished = await this.store.finish(write.id, run.token, outcome, through && hook ? { hook, ...through } : undefined);
    if (!finished) {
      const current = await this.store.get(write.id);
      if (current && (current.status === 'queued' || current.status === 'sending')) return this.claimLost(write, `${outcome.status}: ${outcome.outcome}`);
      return { action: 'skipped', reason: 'finished meanwhile by another run' };
    }
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
