/**
 * The startup sweep never loses a re-queue silently: when the finished job that
 * still holds a write's id cannot be removed (here: locked by another worker, in a real BullMQ queue
 * on Redis), the following `add` would be a no-op; the sweep reports the write as NOT re-queued,
 * its `enqueue_error` says why, and a sweep after the lock is gone queues it.
 */
import { randomUUID } from 'node:crypto';
import { UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WriteIntake } from '../../src/writes/queue/index.ts';
import { REDIS_URL, writeTestBed, type WriteTestBed } from './support.ts';

let bed: WriteTestBed;
let intake: WriteIntake;
let redis: Redis;

beforeEach(async () => {
  bed = await writeTestBed();
  intake = new WriteIntake({ connection: bed.connection, queue: { redis: REDIS_URL, prefix: bed.prefix, queueName: bed.queueName } });
  redis = new Redis(REDIS_URL);
});

afterEach(async () => {
  await intake.close();
  redis.disconnect();
  await bed.cleanup();
});

/** Takes the write's job as a worker would and fails it, leaving the row `queued` (a worker died before recording anything). */
async function failJobBehindTheRow(writeId: string): Promise<void> {
  const worker = new Worker(bed.queueName, null, { connection: new Redis(REDIS_URL, { maxRetriesPerRequest: null }), prefix: bed.prefix, autorun: false });
  try {
    const token = randomUUID();
    const job = await worker.getNextJob(token);
    expect(job?.id).toBe(writeId);
    await job!.moveToFailed(new UnrecoverableError('job stalled more than allowable limit'), token, false);
  } finally {
    await worker.close();
  }
  expect(await (await intake.queue.getJob(writeId))!.getState()).toBe('failed');
}

describe('the startup sweep', () => {
  it('a job that cannot be removed: the write is reported NOT re-queued, with the reason on its row; the next sweep queues it', async () => {
    const { id } = await intake.enqueueWrite('transaction.create', { type: 'INCOME', amount: 700, description: 'requeue' });
    await failJobBehindTheRow(id);
    const lockKey = `${bed.prefix}:${bed.queueName}:${id}:lock`;
    await redis.set(lockKey, 'another-worker');

    const blocked = await intake.requeueMissing();
    expect(blocked.requeued).toEqual([]);
    expect(blocked.failed).toEqual([{ writeId: id, error: expect.stringMatching(/^could not re-queue \(job failed\): .*locked/) }]);
    expect(await intake.getWrite(id)).toMatchObject({ status: 'queued', enqueueError: expect.stringMatching(/could not re-queue/) });
    expect(await (await intake.queue.getJob(id))!.getState()).toBe('failed');

    await redis.del(lockKey);
    const freed = await intake.requeueMissing();
    expect(freed).toEqual({ requeued: [id], failed: [] });
    expect(await intake.getWrite(id)).toMatchObject({ status: 'queued', enqueueError: null });
    expect(await (await intake.queue.getJob(id))!.getState()).toBe('waiting');
  });
});
