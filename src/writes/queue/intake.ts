/**
 * Intake: where a write enters the queue (docs/writes.md). Validation first (an invalid write is
 * refused with a field-level message; nothing is stored or queued), then the `writes` row with status
 * `queued` (durable in the mirror database: from here the write is ACCEPTED), then the BullMQ job
 * (job id = write id). Every answer is honest: either nothing was kept and the call throws, or the
 * write is kept and the call answers it (accepted). If Redis refuses the job, the row says so
 * (`enqueue_error`, also in the answer) and the sweeper of any process running writes
 * (src/writes/queue/sweeper.ts), or the same idempotency key sent again, queues it later.
 *
 *   const intake = new WriteIntake({ connection: sqliteConnection(db), queue: { redis: config.redisUrl }, tokenNames: Object.keys(config.tokens) });
 *   const { id } = await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 1250, description: 'Catering' });
 *   (await intake.getWrite(id))?.status; // 'queued' -> 'sending' -> 'succeeded'
 *   await intake.close();
 */
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { silentLogger, type Logger } from '../../logging/logger.ts';
import type { SqlConnection } from '../../mirror/sql/executor.ts';
import { IdempotencyConflictError, WriteValidationError } from '../write-errors.ts';
import type { WriteKindName, WritePayload } from '../kinds/index.ts';
import { openWriteQueue, writeJobOptions, type WriteJobData, type WriteQueueLocation, type WriteRetrySchedule } from './write-queue.ts';
import { payloadHash, WriteStore, type WriteRecord, type WriteStatus } from '../write-store.ts';
import { WriteSweeper, type SweepResult } from './sweeper.ts';
import { validateWritePayload } from '../validation.ts';

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
  /**
   * Set when the write is kept but its queue job could not be added now (Redis did not answer): it
   * is accepted all the same, and the sweeper (or the same idempotency key sent again) queues it.
   */
  enqueueError?: string;
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
   * Validates, stores and queues a write (typed by kind). Once stored the write is accepted, even
   * when Redis refuses its job (`enqueueError` in the answer; the sweeper queues it later).
   * @returns the write's id, idempotency key and status
   * @throws WriteValidationError (`transaction.create: amount: must be at least 1 (cents)`): nothing stored or queued
   * @throws IdempotencyConflictError when the key names a write with another kind, payload or `actAs`: nothing stored
   * @throws the database driver's error when the row could not be stored: nothing kept
   */
  enqueueWrite<K extends WriteKindName>(kind: K, payload: WritePayload<K>, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    return this.enqueue(kind, payload, options);
  }

  /** `enqueueWrite` for input not typed at compile time (CLI, HTTP; `kind` as received): same checks, same errors. */
  async enqueue(kind: unknown, payload: unknown, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    const validated = validateWritePayload(kind, payload);
    const actAs = this.checkActAs(validated.kind, options.actAs);
    const idempotencyKey = this.checkIdempotencyKey(validated.kind, options.idempotencyKey);
    for (;;) {
      const existing = await this.store.findByIdempotencyKey(idempotencyKey);
      if (existing) {
        if (existing.kind !== validated.kind) throw new IdempotencyConflictError(idempotencyKey, existing.id, `kind (${existing.kind})`);
        if (existing.payloadHash !== payloadHash(validated.payload)) throw new IdempotencyConflictError(idempotencyKey, existing.id, 'payload');
        if (existing.actAs !== actAs) throw new IdempotencyConflictError(idempotencyKey, existing.id, `actAs (${existing.actAs})`);
        // Stored earlier while Redis was down: this call is a retry that may queue it.
        const enqueueError =
          existing.enqueueError !== null && (existing.status === 'queued' || existing.status === 'sending') ? await this.addJob(existing.id, existing.kind, true) : undefined;
        const status = (await this.store.get(existing.id))?.status ?? existing.status;
        return { id: existing.id, idempotencyKey, status, created: false, ...(enqueueError === undefined ? {} : { enqueueError }) };
      }
      const id = `wr_${randomUUID()}`;
      const stored = await this.store.insert({ id, idempotencyKey, kind: validated.kind, payload: validated.payload, actAs });
      if (!stored) continue; // a concurrent enqueue took the key first: answer with its write
      // Stored: accepted from here on, whatever Redis says.
      const enqueueError = await this.addJob(id, validated.kind);
      this.logger.info({ writeId: id, kind: validated.kind, actAs, ...(enqueueError === undefined ? {} : { enqueueError }) }, enqueueError === undefined ? 'write queued' : 'write accepted; the sweeper queues it');
      return { id, idempotencyKey, status: 'queued', created: true, ...(enqueueError === undefined ? {} : { enqueueError }) };
    }
  }

  /** The write with this id, or undefined. */
  getWrite(id: string): Promise<WriteRecord | undefined> {
    return this.store.get(id);
  }

  /**
   * One sweep (src/writes/queue/sweeper.ts): every unfinished write nobody holds a claim on whose job is
   * missing from BullMQ (Redis refused it, Redis lost it, or BullMQ gave up on a stalled job) is
   * queued again. A write that could not be is listed in `failed`, its `enqueue_error` says why.
   * @throws the Redis or database error when either does not answer
   */
  requeueMissing(): Promise<SweepResult> {
    return new WriteSweeper({ store: this.store, queue: this.queue, retrySchedule: this.retrySchedule, logger: this.logger }).sweep();
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

  /**
   * Adds the write's job (waiting at most `enqueueTimeoutMs`).
   * @returns undefined when added, else why not (also noted on the row; the sweeper queues it later)
   */
  private async addJob(id: string, kind: string, clearError = false): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.queue.add('write', { writeId: id, kind }, writeJobOptions(id, this.retrySchedule)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`Redis did not accept the job within ${this.enqueueTimeoutMs} ms`)), this.enqueueTimeoutMs);
        }),
      ]);
      if (clearError) await this.store.setEnqueueError(id, null).catch(() => undefined);
      return undefined;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      // Best effort: the sweeper finds the write by its missing job, noted or not.
      await this.store.setEnqueueError(id, message).catch(() => undefined);
      this.logger.warn({ writeId: id, kind, error: message }, 'write stored (accepted) but not queued yet: the sweeper queues it');
      return message;
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
}
