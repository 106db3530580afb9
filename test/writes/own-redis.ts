/**
 * A Redis of the test's own (redis-server on a free port, no persistence: `--save "" --appendonly no`),
 * for tests that kill, restart or flush Redis: never the shared one other engineers' tests use.
 * `kill()` is SIGKILL; `start()` brings it back on the same port, EMPTY (what a restart without
 * persistence or a failover to an empty replica does); `stop()` ends it for good.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { waitFor } from '../helpers.ts';
import { freePort } from '../free-port.ts';

export interface OwnRedis {
  url: string;
  port: number;
  /** Starts (again) on the same port, empty; resolves when it answers PING. */
  start(): Promise<void>;
  /** SIGKILL; resolves when the process is gone. */
  kill(): Promise<void>;
  /** FLUSHALL: every key gone, the connections stay. */
  flush(): Promise<void>;
  /** Ends it (SIGKILL) for good. */
  stop(): Promise<void>;
}

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Starts a Redis of the test's own on a free port. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitFor(() => answers(url), `redis-server on port ${port} to answer`, 10_000, 50);
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url,
    port,
    start,
    kill,
    async flush() {
      const client = new Redis(url);
      try {
        await client.flushall();
      } finally {
        client.disconnect();
      }
    },
    stop: kill,
  };
}
