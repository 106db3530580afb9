/**
 * The services the soak breaks, of its own so nobody else's tests feel it: a redis-server on a free
 * port (killed, restarted empty, flushed), a second one the Redis Streams sink publishes to (with
 * `appendfsync always`, so a kill and restart keeps every entry it acknowledged: docs/sinks.md), and
 * a `nats-server -js` the NATS JetStream sink publishes to (its store in a temp dir, kept across a
 * kill and restart on the same port), and a PostgreSQL server started on first use (backends
 * terminated, the server restarted: test/postgres-server.ts, the helper the test suite uses).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { startPostgresServer, type TestPostgresServer } from '../test/postgres-server.ts';
import { adoptChild } from './processes.ts';
import { freePort } from '../test/free-port.ts';

/** The soak's own redis-server (without persistence a restart comes back empty). */
export interface SoakRedis {
  url: string;
  /** Starts it (again) on its port (empty unless it persists; nothing when it runs); resolves when it answers PING. */
  start(): Promise<void>;
  /** SIGKILL; resolves when the process is gone. */
  kill(): Promise<void>;
  /** FLUSHALL: every key gone, the connections stay. */
  flush(): Promise<void>;
  /** SIGSTOP: it stops answering (the kernel still takes connections and bytes); `resume()` (SIGCONT) undoes it. */
  pause(): void;
  resume(): void;
}

/** A broker process of the soak's own on a free port, killed and started again with its store kept. */
export interface SoakBroker {
  /** `nats://127.0.0.1:PORT`. */
  url: string;
  /** Starts it (again) on its port with its store (nothing when it runs); resolves when it accepts connections (15 s at most, else throws). */
  start(): Promise<void>;
  /** SIGKILL; resolves when the process is gone. */
  kill(): Promise<void>;
  /** SIGSTOP: it stops answering (the kernel still takes connections and bytes); `resume()` (SIGCONT) undoes it. */
  pause(): void;
  resume(): void;
}

/** The soak's own Redis, sink brokers and (on demand) PostgreSQL. */
export interface SoakServices {
  redis: SoakRedis;
  /** The Redis the Redis Streams sink publishes to: every write fsynced before its answer, so a restart keeps them. */
  sinkRedis: SoakRedis;
  /** The NATS server (JetStream, file store kept across restarts) the NATS JetStream sink publishes to. */
  nats: SoakBroker;
  /** The soak's PostgreSQL server, started on the first call. */
  postgres(): Promise<TestPostgresServer>;
  close(): Promise<void>;
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

/** A redis-server on a free port; with `dir`, an append-only file there fsynced on every write. */
async function startRedis(dir?: string): Promise<SoakRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const persistence = dir ? ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir] : ['--appendonly', 'no'];
  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...persistence], { stdio: 'ignore' });
    adoptChild(started);
    child = started;
    const deadline = Date.now() + 15_000;
    while (!(await answers(url))) {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url,
    start,
    kill,
    pause: () => signalRunning(child, 'SIGSTOP'),
    resume: () => signalRunning(child, 'SIGCONT'),
    async flush() {
      const client = new Redis(url, { maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      try {
        await client.flushall();
      } finally {
        client.disconnect();
      }
    },
  };
}

/** True when something accepts TCP connections on `port` of 127.0.0.1. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A `nats-server -js` on a free port, its JetStream store in `storeDir` (kept across restarts). */
async function startNats(storeDir: string): Promise<SoakBroker> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    const started = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' });
    adoptChild(started);
    child = started;
    const deadline = Date.now() + 15_000;
    while (!(await listening(port))) {
      if (Date.now() > deadline) throw new Error(`nats-server on port ${port} did not accept connections within 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url: `nats://127.0.0.1:${port}`, start, kill, pause: () => signalRunning(child, 'SIGSTOP'), resume: () => signalRunning(child, 'SIGCONT') };
}

/** Sends `signal` to `child` when it runs (a stopped process still counts: SIGCONT wakes it). */
function signalRunning(child: ChildProcess | undefined, signal: NodeJS.Signals): void {
  if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
}

/** Starts the soak's Redis and sink brokers; PostgreSQL waits for its first use. */
export async function startServices(): Promise<SoakServices> {
  const redis = await startRedis();
  const sinkDir = mkdtempSync(join(tmpdir(), 'bizops-soak-sink-redis-'));
  const sinkRedis = await startRedis(sinkDir);
  const natsDir = mkdtempSync(join(tmpdir(), 'bizops-soak-nats-'));
  const nats = await startNats(natsDir);
  let postgres: Promise<TestPostgresServer> | undefined;
  return {
    redis,
    sinkRedis,
    nats,
    postgres: () => (postgres ??= startPostgresServer()),
    async close() {
      try {
        await redis.kill();
        await sinkRedis.kill();
        await nats.kill();
        rmSync(sinkDir, { recursive: true, force: true });
        rmSync(natsDir, { recursive: true, force: true });
      } finally {
        // pg_ctl runs the server detached from the soak: nothing but this stops it.
        if (postgres) await (await postgres).stop();
      }
    },
  };
}
