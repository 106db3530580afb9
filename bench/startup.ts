/**
 * Benchmark: start-up of the `bizops-sync` command. Every command pays it before it does anything:
 * a one-page `sync`, `status`, `write ID`, and a backfill's wall time against its rate bound.
 *
 * One simulator in this process (no rate limit; 40 deals, so a deals sync is one page); a mirror
 * backfilled once by the command itself; then 5 rounds, each running once, as a user would
 * (`node bin/bizops-sync.js ...`, a child process to its exit):
 *   - floor:    `node -e 0`, Node's own start-up, what no command can go below;
 *   - libraries: bench/startup-libraries.js, loading only the libraries a `sync` needs before its
 *               first request (commander, zod, undici's pool, ioredis, better-sqlite3), compile cache
 *               on: the floor of any command built on these libraries;
 *   - help:     `bizops-sync --help`, start-up and nothing else;
 *   - status:   `bizops-sync status` on the existing mirror (read-only, no API);
 *   - sync:     `bizops-sync sync --stream deals --no-progress`, one incremental page from the simulator
 *               (Redis answers: the shared rate budget is used, as in production);
 *   - backfill: `bizops-sync backfill --stream deals --no-progress`, a complete scan of one page.
 * Figures: each command's wall time, ms, as min / median / max of the 5 runs; its median over the
 * floor's median (the ratio start-up chases: 1.0 is Node itself); its CPU time (user + system, ms,
 * median; it stretches much less than the wall time when other processes share the CPUs, so it is
 * the figure to compare across runs on a loaded machine); and its peak RSS, MB (median). For `sync`
 * and `backfill` also the CPU time to the first page (min / median / max): the command's CPU time
 * (every thread, from /proc, in steps of 10 ms) when the first bytes of its first HTTP request reach
 * the simulator, through a TCP relay in front of it that reads it (the reachability probe before it
 * connects and sends nothing, so it does not count).
 * Rounds interleave the commands, so a burst of load on a shared machine hits all of them alike.
 *
 * Run alone: `node bench/startup.ts` (prints JSON).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSimulator } from '@bizops-sync/simulator';
import { childCpuMs, machineLoad, runMeasured, spread } from './runs.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const LIBRARIES = fileURLToPath(new URL('./startup-libraries.js', import.meta.url));
const RUNS = 5;

/** The commands measured, in the order each round runs them; `floor` first. */
const COMMANDS: readonly { name: string; args: readonly string[] }[] = [
  { name: 'floor', args: ['-e', '0'] },
  { name: 'libraries', args: [LIBRARIES] },
  { name: 'help', args: [BIN, '--help'] },
  { name: 'status', args: [BIN, 'status'] },
  { name: 'sync', args: [BIN, 'sync', '--stream', 'deals', '--no-progress'] },
  { name: 'backfill', args: [BIN, 'backfill', '--stream', 'deals', '--no-progress'] },
];

/** The commands whose CPU time to the first page is measured. */
const FIRST_PAGE_COMMANDS: ReadonlySet<string> = new Set(['sync', 'backfill']);

/**
 * A TCP relay to `port` on 127.0.0.1 that calls `onFirstBytes` when the first bytes of a connection
 * arrive from the client (an HTTP request's start), before relaying them.
 */
async function startRelay(port: number, onFirstBytes: () => void): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((socket) => {
    const upstream = connect(port, '127.0.0.1');
    socket.once('data', onFirstBytes);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-startup-'));
  const simulator = await startSimulator({ rateLimit: false, size: { transactions: 60, deals: 40, onboardings: 10 } });
  // The command being measured (its /usr/bin/time's pid) and its CPU time when its first request arrived.
  let measuredPid: number | undefined;
  let firstRequestCpuMs: number | undefined;
  const relay = await startRelay(Number(new URL(simulator.url).port), () => {
    if (measuredPid !== undefined && firstRequestCpuMs === undefined) firstRequestCpuMs = childCpuMs(measuredPid);
  });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    BIZOPS_BASE_URL: relay.url,
    BIZOPS_TOKEN: String(simulator.tokens.admin),
    BIZOPS_DB: join(dir, 'mirror.db'),
    BIZOPS_RATE_LIMIT_PER_MIN: '100000',
    BIZOPS_LOG_LEVEL: 'warn',
    BIZOPS_LOG_FORMAT: 'json',
  };
  try {
    // The mirror `status` reads and `sync` continues (not measured).
    await runMeasured(process.execPath, [BIN, 'backfill', '--no-progress'], env);
    const wall = new Map<string, number[]>(COMMANDS.map(({ name }) => [name, []]));
    const rss = new Map<string, number[]>(COMMANDS.map(({ name }) => [name, []]));
    const cpu = new Map<string, number[]>(COMMANDS.map(({ name }) => [name, []]));
    const firstPageCpu = new Map<string, number[]>(COMMANDS.map(({ name }) => [name, []]));
    for (let round = 0; round < RUNS; round += 1) {
      for (const { name, args } of COMMANDS) {
        firstRequestCpuMs = undefined;
        const measured = await runMeasured(process.execPath, args, env, (pid) => (measuredPid = pid));
        measuredPid = undefined;
        wall.get(name)!.push(measured.wallMs);
        rss.get(name)!.push(measured.peakRssMb);
        cpu.get(name)!.push(measured.cpuMs);
        if (FIRST_PAGE_COMMANDS.has(name)) {
          if (firstRequestCpuMs === undefined) throw new Error(`${name}: no request reached the simulator`);
          firstPageCpu.get(name)!.push(firstRequestCpuMs);
        }
      }
    }
    const floor = median(wall.get('floor')!);
    const figures: Record<string, number | string> = { machine: machineLoad(), runs: RUNS };
    for (const { name } of COMMANDS) {
      figures[`${name}: wall ms (min / median / max)`] = spread(wall.get(name)!, 0);
      if (name !== 'floor') figures[`${name}: median / floor median`] = Number((median(wall.get(name)!) / floor).toFixed(2));
      figures[`${name}: CPU ms (median)`] = Number(median(cpu.get(name)!).toFixed(0));
      if (FIRST_PAGE_COMMANDS.has(name)) {
        figures[`${name}: CPU ms to the first page (min / median / max)`] = spread(firstPageCpu.get(name)!, 0);
        figures[`${name}: CPU to the first page over the libraries' CPU (median)`] = Number((median(firstPageCpu.get(name)!) / median(cpu.get('libraries')!)).toFixed(2));
      }
      figures[`${name}: peak RSS MB (median)`] = Number(median(rss.get(name)!).toFixed(0));
    }
    return figures;
  } finally {
    await relay.close();
    await simulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(JSON.stringify(await run(), null, 2));
