/**
 * The brokers sink tests publish to: the shared ones `.ci/run` starts (NATS with JetStream on
 * 127.0.0.1:4222, RabbitMQ on 127.0.0.1:5672, Redis at REDIS_URL; NATS_URL and RABBITMQ_URL point
 * elsewhere), each test in names of its own; a NATS, Redis or RabbitMQ server of the test's own where a test
 * kills and restarts or pauses it (on a free port, its store in a temp dir, kept across restarts); a
 * TCP proxy where a test resets connections, holds the broker's answers back (late confirms) or
 * filters what the client sends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { waitFor } from '../helpers.ts';
import { freePort } from '../free-port.ts';

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const RABBITMQ_URL = process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A name no other test run uses (letters and digits). */
export function uniqueName(prefix: string): string {
  return `${prefix}${process.pid}x${randomBytes(4).toString('hex')}`;
}

/** True when something accepts TCP connections on `port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The lines of the log files in `logDir` (a broker's own) that match `pattern` (every line by default); none when there are none. */
export function brokerLog(logDir: string, pattern: RegExp = /./): string[] {
  try {
    return readdirSync(logDir).flatMap((file) => readFileSync(join(logDir, file), 'utf8').split('\n').filter((line) => pattern.test(line)));
  } catch {
    return [];
  }
}

/**
 * Resolves once something accepts connections on `port`, within `timeoutMs`.
 * @throws Error when `started` exits before listening (its port taken, its store unreadable), with `log()`
 */
async function untilListening(started: ChildProcess, port: number, command: string, timeoutMs: number, log: () => string): Promise<void> {
  const gone = () => started.exitCode !== null || started.signalCode !== null;
  await waitFor(async () => gone() || (await listening(port)), `${command} on port ${port}`, timeoutMs, 25);
  if (gone()) throw new Error(`${command} exited (code ${started.exitCode}, signal ${started.signalCode}) before listening on port ${port}${log() ? `; its log: ${log()}` : ''}`);
}

/** A broker process of the test's own, on a free port, killed and restarted with its store kept. */
export interface OwnBroker {
  url: string;
  /** Starts (again) on the same port with the same store; resolves when it accepts connections. */
  start(): Promise<void>;
  /** SIGKILL; resolves when the process is gone (a paused one too). */
  kill(): Promise<void>;
  /** SIGSTOP: the process stops answering (the kernel still accepts connections and takes bytes); `resume()` (SIGCONT) undoes it. */
  pause(): void;
  resume(): void;
}

/** Runs `command` with `args(port)` on a free port, `scheme://127.0.0.1:port`. */
async function ownBroker(command: string, scheme: string, args: (port: number) => string[]): Promise<OwnBroker> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(command, args(port), { stdio: 'ignore' });
    child = started;
    await untilListening(started, port, command, 20_000, () => '');
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
  return { url: `${scheme}://127.0.0.1:${port}`, start, kill, pause: () => child?.kill('SIGSTOP'), resume: () => child?.kill('SIGCONT') };
}

/**
 * A `nats-server -js` of the test's own on a free port, its JetStream store in `storeDir`; with
 * `monitorPort`, its HTTP monitoring (`/connz`: the client connections) on that port.
 */
export function startOwnNats(storeDir: string, monitorPort?: number): Promise<OwnBroker> {
  const monitor = monitorPort === undefined ? [] : ['-m', String(monitorPort)];
  return ownBroker('nats-server', 'nats', (port) => ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir, ...monitor]);
}

/**
 * A `redis-server` of the test's own on a free port, its append-only file in `dir` written before
 * each answer (`appendfsync always`): what it acknowledged survives a SIGKILL.
 */
export function startOwnRedis(dir: string): Promise<OwnBroker> {
  return ownBroker('redis-server', 'redis', (port) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir]);
}

/**
 * A `rabbitmq-server` of the test's own (Debian's package, run as this user): AMQP on a free port,
 * its Erlang distribution on another, node `bizops<port>@localhost`, its store (mnesia, the durable
 * queues' messages) and logs in `dir`, kept across restarts; no plugins. `kill()` is a SIGKILL of
 * the whole process group (the script, the Erlang VM and its helpers). Starts in about 6 s (about
 * 4 s of CPU). Its schedulers sleep when idle instead of spinning (`+sbwt none`): beside a busy test
 * suite the spinning took CPU from the other tests.
 */
export async function startOwnRabbit(dir: string): Promise<OwnBroker> {
  const port = await freePort();
  let distPort = await freePort();
  while (distPort === port) distPort = await freePort(); // both drawn before either is bound
  writeFileSync(join(dir, 'enabled_plugins'), '[].\n');
  const env = {
    ...process.env,
    HOME: dir, // its Erlang cookie
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_NODENAME: `bizops${port}@localhost`,
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_PID_FILE: join(dir, 'rabbitmq.pid'),
    RABBITMQ_CONFIG_FILE: join(dir, 'none'),
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '+sbwt none +sbwtdcpu none +sbwtdio none',
  };
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn('/usr/lib/rabbitmq/bin/rabbitmq-server', [], { env, stdio: 'ignore', detached: true });
    child = started;
    await untilListening(started, port, 'rabbitmq-server', 60_000, () => brokerLog(join(dir, 'log')).slice(-20).join(' | '));
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running?.pid || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    process.kill(-running.pid, 'SIGKILL');
    await exited;
    await waitFor(async () => !(await listening(port)), `rabbitmq-server on port ${port} gone`, 20_000, 25);
  };
  await start();
  const signal = (name: NodeJS.Signals) => {
    if (child?.pid) process.kill(-child.pid, name);
  };
  return { url: `amqp://guest:guest@127.0.0.1:${port}`, start, kill, pause: () => signal('SIGSTOP'), resume: () => signal('SIGCONT') };
}

/** A TCP proxy in front of a broker: `reset()` cuts every connection; `holdAnswers(true)` keeps the broker's bytes back until released (`releaseHeld()` passes those held so far). */
export interface BrokerProxy {
  port: number;
  /** Connections opened through it so far. */
  connections: number;
  /** Connections the client closed while their broker side was still open. */
  closedByClient: number;
  reset(): void;
  holdAnswers(hold: boolean): void;
  /** Chunks of the broker's answers held back now. */
  readonly heldChunks: number;
  /** Passes the answers held back so far, and goes on holding the later ones. */
  releaseHeld(): void;
  close(): Promise<void>;
}

/** Options of `startProxy`. */
export interface ProxyOptions {
  /**
   * Called at each new connection: its filter of the client's bytes, returning what of each chunk
   * goes on to the broker (the rest is dropped). Without it, everything goes on.
   */
  clientFilter?: () => (data: Buffer) => Buffer;
}

export async function startProxy(targetPort: number, options: ProxyOptions = {}): Promise<BrokerProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let held = false;
  const waiting: { socket: Socket; data: Buffer }[] = [];
  const proxy: BrokerProxy = {
    port: 0,
    connections: 0,
    closedByClient: 0,
    reset() {
      for (const { client, upstream } of pairs) {
        client.resetAndDestroy();
        upstream.destroy();
      }
      pairs.clear();
      waiting.length = 0;
    },
    holdAnswers(hold) {
      held = hold;
      if (!hold) proxy.releaseHeld();
    },
    get heldChunks() {
      return waiting.length;
    },
    releaseHeld() {
      for (const { socket, data } of waiting.splice(0)) if (!socket.destroyed) socket.write(data);
    },
    async close() {
      proxy.reset();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((client) => {
    proxy.connections += 1;
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    const pair = { client, upstream };
    pairs.add(pair);
    const filter = options.clientFilter?.();
    client.on('data', (data) => {
      const passed = filter ? filter(data) : data;
      if (passed.length > 0) upstream.write(passed);
    });
    upstream.on('data', (data) => {
      if (held) waiting.push({ socket: client, data });
      else client.write(data);
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    // Before `end`, which destroys the other side: the client's first error or close, with the broker's side still open.
    let clientGone = false;
    const onClientGone = () => {
      if (!clientGone && !upstream.destroyed) proxy.closedByClient += 1;
      clientGone = true;
    };
    client.on('error', onClientGone);
    client.on('close', onClientGone);
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  proxy.port = typeof address === 'object' && address ? address.port : 0;
  return proxy;
}
