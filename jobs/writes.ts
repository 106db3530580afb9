/**
 * Jobs of the write queue (the `enqueue` and `worker` commands). Wiring only: the intake and the
 * worker of src/writes do the work. `write ID` only reads the mirror: jobs/show-write.ts.
 */
import type { Config } from '../src/config/index.ts';
import type { Logger } from '../src/logging/index.ts';
import type { EnqueueOptions, EnqueueResult } from '../src/writes/queue/index.ts';
import { openContext, type ContextOptions } from './context.ts';

/**
 * `bizops-sync enqueue`: validates, stores and queues one write.
 * @throws WriteValidationError (nothing queued), IdempotencyConflictError;
 *   RedisUnavailableError naming REDIS_URL when Redis does not answer (nothing stored)
 */
export async function enqueueWriteJob(
  config: Config,
  write: { kind: string; payload: unknown } & EnqueueOptions,
  options: Pick<ContextOptions, 'logger' | 'redisKeys'> = {},
): Promise<EnqueueResult> {
  const context = await openContext(config, { ...options, rateBudget: 'required' });
  try {
    const queue = await context.writeQueue();
    return await queue.enqueue(write.kind, write.payload, { idempotencyKey: write.idempotencyKey, actAs: write.actAs });
  } finally {
    await context.close();
  }
}

/**
 * `bizops-sync worker`: runs a write worker until `signal` aborts, then stops gracefully (requests in
 * flight finish; writes waiting for a slot run again later).
 * @throws RedisUnavailableError naming REDIS_URL when Redis does not answer
 */
export async function runWorkerJob(config: Config, options: { concurrency?: number; logger: Logger; signal: AbortSignal }): Promise<void> {
  const context = await openContext(config, { logger: options.logger, rateBudget: 'required' });
  try {
    const queue = await context.writeQueue();
    const worker = await queue.startWorker({ concurrency: options.concurrency });
    options.logger.info({ concurrency: options.concurrency ?? 4, requeued: worker.requeued.length, requeueFailed: worker.requeueFailed.length }, 'write worker started');
    await new Promise<void>((resolve) => {
      if (options.signal.aborted) resolve();
      else options.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    options.logger.info('write worker stopping');
  } finally {
    await context.close();
  }
}
