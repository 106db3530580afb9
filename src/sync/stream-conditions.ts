/**
 * Operational events (docs/operations.md "Operational events"): each stream has a condition kept in
 * the mirror (`stream_conditions`, migration 14), and a change of condition appends one event to
 * the changelog in the same transaction, so webhooks and the pull API carry it like any event, and
 * it is said once per transition, not once per run:
 *
 *   ok | stale          -- `failingAfterRuns` failed runs in a row -->  failing       stream.failing
 *   ok | failing        -- no success for `staleAfterMs`          -->  stale         stream.stale
 *   ok | failing | stale -- the list answered 404 (marked)         -->  unsupported   stream.unsupported
 *   failing | stale | unsupported -- a run succeeded               -->  ok            stream.recovered
 *
 * Runs are noted by the sync engine when they end (`noteRun`); staleness, which no run reveals, is
 * checked on a timer by the daemon (`checkStale`, src/daemon/stale-streams.ts). A failed run that
 * says nothing about the stream (a wrong base URL, a lease another process took over) and runs that
 * were busy or interrupted change nothing.
 *
 * Every event's `data.record` has one shape (`StreamConditionRecord`: the condition entered and the
 * one left), `data.changes` is `{}` (no record field changed), and `record_id` is the stream's name,
 * as every event about a whole stream (src/notify/event-schemas.ts `streamEvent`).
 *
 * A partitioned stream's partitions have conditions of their own (`stream_conditions` keyed by
 * (stream, partition), migration 16): each partition's run is noted as a stream's is
 * (`notePartitions`), and its events name it (`data.record.partition`, the change row's partition),
 * so a location whose list keeps failing while the others answer is `failing` by name. Staleness is
 * the stream's only: its partitions run together.
 */
import { LeaseLostError } from '../mirror/leases.ts';
import type { AppendedChange, MirrorStore } from '../mirror/mirror-store.ts';
import { StreamConditionStore, type StreamCondition, type StreamConditionState } from '../mirror/stream-condition-store.ts';
import type { StreamName } from '../streams/definitions.ts';
import { WrongBaseUrlError } from './base-url-check.ts';
import type { RunResult } from './stream-run.ts';

/** The change type a complete scan appends when it holds back a mass deletion (docs/sync.md "Mass deletions held"); here, beside the other `stream.*` types, so that the event schemas do not load the sync run. */
export const MASS_DELETION_HELD = 'stream.mass_deletion_held';

/** `failingAfterRuns` failed runs in a row. */
export const STREAM_FAILING = 'stream.failing';
/** No successful run for the stream's stale threshold. */
export const STREAM_STALE = 'stream.stale';
/** A run succeeded after the stream was failing, stale or unsupported. */
export const STREAM_RECOVERED = 'stream.recovered';
/** The stream's list answered 404 while the other lists answered: marked unsupported. */
export const STREAM_UNSUPPORTED = 'stream.unsupported';

/** The four operational event types, in the order the docs list them. */
export const STREAM_CONDITION_EVENTS = [STREAM_FAILING, STREAM_STALE, STREAM_RECOVERED, STREAM_UNSUPPORTED] as const;

/** The event a transition into each condition appends. */
const EVENT_FOR: Record<StreamCondition, string> = { failing: STREAM_FAILING, stale: STREAM_STALE, unsupported: STREAM_UNSUPPORTED, ok: STREAM_RECOVERED };

/** Default of `StreamConditionsOptions.failingAfterRuns` (config `sync.failingAfterRuns`). */
export const DEFAULT_FAILING_AFTER_RUNS = 3;

/** `data.record` of every `stream.*` condition event. */
export interface StreamConditionRecord {
  stream: StreamName;
  /** The condition the stream entered. */
  condition: StreamCondition;
  /** The condition it left. */
  previous: StreamCondition;
  /** When the condition the stream left began (ISO 8601); null when it was `ok` from the start. */
  previousSince: string | null;
  /** The partition whose condition changed (a partitioned stream's partition); absent for the stream's own. */
  partition?: string;
  /** When this transition happened (ISO 8601). */
  at: string;
  /** Failed runs in a row since the last success (0 after a success). */
  failedRuns: number;
  /** The last successful run's end (ISO 8601), null when none. */
  lastSuccessAt: string | null;
  /** The last run's error, null when the last run succeeded. */
  lastError: string | null;
}

/** Options of `StreamConditions`. */
export interface StreamConditionsOptions {
  /** The mirror: the condition rows and the changelog. */
  store: MirrorStore;
  /** Failed runs in a row that make a stream `failing` (config `sync.failingAfterRuns`), an integer >= 1. Default 3. */
  failingAfterRuns?: number;
}

/** Keeps each stream's condition and appends its events (module comment). */
export class StreamConditions {
  private readonly store: MirrorStore;
  readonly failingAfterRuns: number;

  /** @throws RangeError when `failingAfterRuns` is not an integer >= 1 */
  constructor(options: StreamConditionsOptions) {
    const failingAfterRuns = options.failingAfterRuns ?? DEFAULT_FAILING_AFTER_RUNS;
    if (!Number.isInteger(failingAfterRuns) || failingAfterRuns < 1) throw new RangeError(`failingAfterRuns must be an integer >= 1, got ${String(options.failingAfterRuns)}`);
    this.store = options.store;
    this.failingAfterRuns = failingAfterRuns;
  }

  /**
   * Notes how a run ended: a success resets the failures (and recovers a failing, stale or
   * unsupported stream), a failure counts one more (and makes the stream failing at the threshold),
   * `unsupported` marks it so. Other outcomes change nothing.
   * @returns the event appended, if the condition changed
   * @throws the driver's error when the mirror cannot be written (the caller logs it; the run's
   *   outcome stands)
   */
  async noteRun(result: RunResult): Promise<AppendedChange | undefined> {
    return this.noteOutcome(result, '');
  }

  /**
   * Notes each partition's run of a partitioned stream's run (`result.partitions`) in that
   * partition's own condition, as `noteRun` notes the stream's (module comment).
   * @returns the events appended, in partition order
   * @throws the driver's error when the mirror cannot be written
   */
  async notePartitions(result: RunResult): Promise<AppendedChange[]> {
    const appended: AppendedChange[] = [];
    for (const part of result.partitions ?? []) {
      if (part.partition === undefined || part.partition === '') continue;
      const event = await this.noteOutcome(part, part.partition);
      if (event) appended.push(event);
    }
    return appended;
  }

  /** `noteRun` for the stream's own condition (`partition` '') or one partition's. */
  private async noteOutcome(result: RunResult, partition: string): Promise<AppendedChange | undefined> {
    const outcome = runOutcome(result);
    if (!outcome) return undefined;
    // The usual run: a success of a stream that is `ok` without failures changes nothing (no transaction).
    const seen = await new StreamConditionStore(this.store.executor).read(result.stream, partition);
    if (outcome === 'succeeded' && seen.condition === 'ok' && seen.failedRuns === 0) return undefined;
    // A sync skipping a stream already unsupported (until its probe is due) changes nothing either.
    if (outcome === 'unsupported' && seen.condition === 'unsupported') return undefined;
    return this.store.transaction(async (store) => {
      const conditions = new StreamConditionStore(store.executor);
      const before = await conditions.read(result.stream, partition);
      const now = new Date().toISOString();
      let after: StreamConditionState;
      if (outcome === 'succeeded') after = { condition: 'ok', failedRuns: 0, since: before.condition === 'ok' ? before.since : now };
      else if (outcome === 'unsupported') after = { condition: 'unsupported', failedRuns: before.failedRuns, since: before.condition === 'unsupported' ? before.since : now };
      else {
        const failedRuns = before.failedRuns + 1;
        // A stale stream that fails stays stale (said once); an unsupported one is not failing.
        const failing = failedRuns >= this.failingAfterRuns && before.condition === 'ok';
        after = failing ? { condition: 'failing', failedRuns, since: now } : { ...before, failedRuns };
      }
      if (after.condition === before.condition && after.failedRuns === before.failedRuns) return undefined;
      await conditions.write(result.stream, after, now, partition);
      if (after.condition === before.condition) return undefined;
      return this.appendTransition(store, result.stream, before, after, now, partition);
    });
  }

  /**
   * Makes the stream `stale` when its last success (or `notBefore`, when it never succeeded) is
   * older than `staleAfterMs` at `now`, and it is `ok` or `failing`.
   * @param notBefore when the watch began (a stream that never succeeded counts from then)
   * @returns the event appended, if the stream became stale
   * @throws the driver's error when the mirror cannot be read or written
   */
  async checkStale(stream: StreamName, staleAfterMs: number, notBefore: Date, now: Date = new Date()): Promise<AppendedChange | undefined> {
    return this.store.transaction(async (store) => {
      const conditions = new StreamConditionStore(store.executor);
      const before = await conditions.read(stream);
      if (before.condition === 'stale' || before.condition === 'unsupported') return undefined;
      const state = await store.readSyncState(stream);
      if (!state.supported) return undefined;
      const lastSuccessMs = state.lastSuccessAt === null ? Number.NaN : Date.parse(state.lastSuccessAt);
      const since = Number.isFinite(lastSuccessMs) ? Math.max(lastSuccessMs, 0) : notBefore.getTime();
      if (now.getTime() - since < staleAfterMs) return undefined;
      const at = now.toISOString();
      const after: StreamConditionState = { condition: 'stale', failedRuns: before.failedRuns, since: at };
      await conditions.write(stream, after, at);
      return this.appendTransition(store, stream, before, after, at);
    });
  }

  /**
   * The stream's condition now, or its partition's (`ok` for one without a row).
   * @param partition a partition's value; '' (default) for the stream's own
   */
  read(stream: StreamName, partition = ''): Promise<StreamConditionState> {
    return new StreamConditionStore(this.store.executor).read(stream, partition);
  }

  /** The partitions of `stream` whose condition is not `ok` (none for an unpartitioned stream). */
  listPartitions(stream: StreamName): Promise<(StreamConditionState & { partition: string })[]> {
    return new StreamConditionStore(this.store.executor).listPartitions(stream);
  }

  /** Appends the event of a transition of the stream's condition, or of its partition's (`partition` non-empty: the event names it). */
  private async appendTransition(store: MirrorStore, stream: StreamName, before: StreamConditionState, after: StreamConditionState, at: string, partition = ''): Promise<AppendedChange> {
    const state = await store.readSyncState(stream, partition);
    const record: StreamConditionRecord = {
      stream,
      condition: after.condition,
      previous: before.condition,
      previousSince: before.since,
      at,
      failedRuns: after.failedRuns,
      lastSuccessAt: state.lastSuccessAt,
      lastError: after.condition === 'ok' ? null : state.lastError,
      ...(partition ? { partition } : {}),
    };
    return store.appendChange({
      type: EVENT_FOR[after.condition],
      stream,
      recordId: stream,
      occurredAt: at,
      data: { record: { ...record }, changes: {} },
      ...(partition ? { partition } : {}),
    });
  }
}

/** What a run's result says about the stream, or undefined when it says nothing. */
function runOutcome(result: RunResult): 'succeeded' | 'failed' | 'unsupported' | undefined {
  if (result.status === 'succeeded') return 'succeeded';
  if (result.status === 'unsupported') return 'unsupported';
  if (result.status !== 'failed') return undefined;
  // A configuration error or another process's lease: nothing about the stream's health.
  if (result.error instanceof WrongBaseUrlError || result.error instanceof LeaseLostError) return undefined;
  return 'failed';
}
