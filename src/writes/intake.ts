/**
 * Intake: where a write enters the queue (docs/writes.md). Validation first (an invalid write is
 * refused with a field-level message; nothing is stored or queued), then the `writes` row with status
 * `queued` (durable in the mirror database), then the BullMQ job (job id = write id). An acknowledged write is
 * therefore never lost: if Redis refuses the job, the row says so (`enqueue_error`) and the startup
 * sweep (`requeueMissing`) or the same idempotency key queues it later.
 *
 *   const intake = new WriteIntake({ connection: sqliteConnection(db), queue: { redis: config.redisUrl }, tokenNames: Object.keys(config.tokens) });
 *   const { id } = await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 1250, description: 'Catering' });
 *   (await intake.getWrite(id))?.status; // 'queued' -> 'sending' -> 'succeeded'
 *   await intake.close();
 */
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { SqlConnection } from '../mirror/sql/executor.ts';
import { IdempotencyConflictError, WriteQueueError, WriteValidationError } from './errors.ts';
import type { WriteKindName, WritePayload } from './kinds/index.ts';
import { openWriteQueue, writeJobOptions, type WriteJobData, type WriteQueueLocation, type WriteRetrySchedule } from './queue.ts';
import { payloadHash, WriteStore, type WriteRecord, type WriteStatus } from './store.ts';
import { validateWritePayload } from './validation.ts';

/** Per-write options of `WriteIntake.enqueueWrite` / `enqueue`. */
export interface EnqueueOptions {
  /**
   * The same key enqueued twice is ONE write (the second call returns the first); a different
   * payload under a used key is refused. 1 to 200 printable characters. Default: a fresh key.
   */
  idempotencyKey?: string;
  /** Token NAME (config `tokens`) the write acts as, e.g. an employee's token for a clock-in. Default `default`. */
  actAs?: string;
}

/** What `enqueueWrite` / `enqueue` answer: the write (new, or the one the idempotency key already names). */
export interface EnqueueResult {
  /** The write id (`wr_<uuid>`), also the BullMQ job id. */
  id: string;
  idempotencyKey: string;
  status: WriteStatus;
  /** False when the idempotency key named an existing write, which is returned instead. */
  created: boolean;
}

/** Construction options of a WriteIntake: the mirror connection, where the BullMQ queue lives, and limits. */
export interface WriteIntakeOptions {
  /** The mirror's connection (the `writes` table of migration 003); SQLite: `sqliteConnection(handle)`. Stays the caller's. */
  connection: SqlConnection;
  queue: WriteQueueLocation;
  /** Names of the configured tokens; when given, `actAs` must be one of them. */
  tokenNames?: readonly string[];
  retrySchedule?: WriteRetrySchedule;
  /** Longest wait for Redis to accept a job, ms. Default 5000. */
  enqueueTimeoutMs?: number;
  logger?: Logger;
}

/** BullMQ job states in which the job will still run: the write needs no re-queue. */
const PENDING_JOB_STATES: ReadonlySet<string> = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;
const TOKEN_NAME = /^[A-Za-z0-9_.-]+$/;

/**
 * Where writes enter: validates (spec §4, §8 limits), stores the `writes` row, then queues the BullMQ
 * job, as described in this module's header. Owns a WriteStore on the given connection and the queue
 * connection it opened (`close()` releases the latter).
 */
export class WriteIntake {
  readonly store: WriteStore;
  readonly queue: Queue<WriteJobData>;
  private readonly closeQueue: () => Promise<void>;
  private readonly tokenNames: readonly string[] | undefined;
  private readonly retrySchedule: WriteRetrySchedule;
  private readonly enqueueTimeoutMs: number;
  private readonly logger: Logger;

  constructor(options: WriteIntakeOptions) {
    this.store = new WriteStore(options.connection);
    const opened = openWriteQueue(options.queue);
    this.queue = opened.queue;
    this.closeQueue = opened.close;
    this.tokenNames = options.tokenNames;
    this.retrySchedule = options.retrySchedule ?? {};
    this.enqueueTimeoutMs = options.enqueueTimeoutMs ?? 5000;
    this.logger = options.logger ?? silentLogger;
  }

  /**
   * Validates, stores and queues a write (typed by kind).
   * @returns the write's id, idempotency key and status
   * @throws WriteValidationError (`transaction.create: amount: must be at least 1 (cents)`): nothing stored or queued
   * @throws IdempotencyConflictError when the key names a write with another kind, payload or `actAs`
   * @throws WriteQueueError when the row is stored but Redis refused the job (not lost: see the class)
   */
  enqueueWrite<K extends WriteKindName>(kind: K, payload: WritePayload<K>, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    return this.enqueue(kind, payload, options);
  }

  /** `enqueueWrite` for input not typed at compile time (CLI, HTTP): same checks, same errors. */
  async enqueue(kind: string, payload: unknown, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    const validated = validateWritePayload(kind, payload);
    const actAs = this.checkActAs(validated.kind, options.actAs);
    const idempotencyKey = this.checkIdempotencyKey(validated.kind, options.idempotencyKey);
    for (;;) {
      const existing = await this.store.findByIdempotencyKey(idempotencyKey);
      if (existing) {
        if (existing.kind !== validated.kind) throw new IdempotencyConflictError(idempotencyKey, existing.id, `kind (${existing.kind})`);
        if (existing.payloadHash !== payloadHash(validated.payload)) throw new IdempotencyConflictError(idempotencyKey, existing.id, 'payload');
        if (existing.actAs !== actAs) throw new IdempotencyConflictError(idempotencyKey, existing.id, `actAs (${existing.actAs})`);
        // Stored earlier while Redis was down: this call is the retry that queues it.
        if (existing.enqueueError !== null && (existing.status === 'queued' || existing.status === 'sending')) await this.addJob(existing.id, existing.kind, idempotencyKey);
        return { id: existing.id, idempotencyKey, status: (await this.store.get(existing.id))?.status ?? existing.status, created: false };
      }
      const id = `wr_${randomUUID()}`;
      const stored = await this.store.insert({ id, idempotencyKey, kind: validated.kind, payload: validated.payload, actAs });
      if (!stored) continue; // a concurrent enqueue took the key first: answer with its write
      await this.addJob(id, validated.kind, idempotencyKey);
      this.logger.info({ writeId: id, kind: validated.kind, actAs }, 'write queued');
      return { id, idempotencyKey, status: 'queued', created: true };
    }
  }

  /** The write with this id, or undefined. */
  getWrite(id: string): Promise<WriteRecord | undefined> {
    return this.store.get(id);
  }

  /**
   * The startup sweep: every write still `queued` or `sending` whose job is missing from BullMQ (Redis
   * refused it, Redis lost it, or BullMQ gave up on a stalled job) is queued again. A write found
   * `sending` keeps that status, so the worker treats its outcome as possibly ambiguous.
   *
   * A finished job still holding the write's id must be removed first (BullMQ ignores an `add` whose
   * job id exists). When that removal fails (the job is locked by a worker, Redis refused) or the job
   * is not waiting afterwards, the write is NOT counted as re-queued: its `enqueue_error` says why
   * (`bizops-sync write ID` shows it), the failure is logged, and it is listed in `failed`.
   * @returns the ids queued again, and the writes that could not be
   */
  async requeueMissing(): Promise<{ requeued: string[]; failed: { writeId: string; error: string }[] }> {
    const requeued: string[] = [];
    const failed: { writeId: string; error: string }[] = [];
    for (const write of await this.store.unfinished()) {
      const job = await this.queue.getJob(write.id);
      const state = job ? await job.getState() : 'missing';
      if (PENDING_JOB_STATES.has(state)) {
        if (write.enqueueError !== null) await this.store.setEnqueueError(write.id, null);
        continue;
      }
      try {
        if (job) await job.remove();
        await this.queue.add('write', { writeId: write.id, kind: write.kind }, writeJobOptions(write.id, this.retrySchedule));
        const after = await this.queue.getJob(write.id);
        const afterState = after ? await after.getState() : 'missing';
        if (!PENDING_JOB_STATES.has(afterState)) throw new Error(`its job is still ${afterState} after the add`);
      } catch (error) {
        const message = `could not re-queue (job ${state}): ${error instanceof Error ? error.message : String(error)}`;
        await this.store.setEnqueueError(write.id, message);
        failed.push({ writeId: write.id, error: message });
        this.logger.error({ writeId: write.id, kind: write.kind, status: write.status, jobState: state, error: message }, 'write NOT re-queued by the startup sweep');
        continue;
      }
      await this.store.setEnqueueError(write.id, null);
      requeued.push(write.id);
      this.logger.warn({ writeId: write.id, kind: write.kind, status: write.status, jobState: state }, 'write re-queued by the startup sweep');
    }
    return { requeued, failed };
  }

  /** Closes the queue connection (when the intake opened it). The mirror connection stays open. */
  async close(): Promise<void> {
    await this.closeQueue();
  }

  private checkActAs(kind: string, actAs: string | undefined): string {
    const name = actAs ?? 'default';
    if (typeof name !== 'string' || !TOKEN_NAME.test(name)) {
      throw new WriteValidationError(kind, [{ field: 'actAs', rule: 'must be a token name (letters, digits, _ . -)' }]);
    }
    if (this.tokenNames && !this.tokenNames.includes(name)) {
      throw new WriteValidationError(kind, [{ field: 'actAs', rule: `no token named "${name}" is configured (configured: ${this.tokenNames.join(', ')})` }]);
    }
    return name;
  }

  private checkIdempotencyKey(kind: string, key: string | undefined): string {
    if (key === undefined) return `auto_${randomUUID()}`;
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      throw new WriteValidationError(kind, [{ field: 'idempotencyKey', rule: 'must be 1 to 200 printable characters without spaces' }]);
    }
    return key;
  }

  /** Adds the job; on failure marks the row and throws WriteQueueError. */
  private async addJob(id: string, kind: string, idempotencyKey: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add('write', { writeId: id, kind }, writeJobOptions(id, this.retrySchedule)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Redis did not accept the job within ${this.enqueueTimeoutMs} ms`)), this.enqueueTimeoutMs);
        }),
      ]);
      await this.store.setEnqueueError(id, null);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await this.store.setEnqueueError(id, message);
      this.logger.error({ writeId: id, kind, error: message }, 'write stored but not queued');
      throw new WriteQueueError(id, idempotencyKey, error);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
}
