/**
 * Benchmark: how fast a start-up failure ends (docs/operations.md "Start-up failures"). A mirror path
 * that cannot be created must end the command with one line and exit 2 within 2 s, never spin.
 *
 * For each path (a directory under /proc, /dev/null, a file used as a directory) and each command
 * (`sync`, `daemon`), 3 runs of `node bin/bizops-sync.js <command>` to its exit under `/usr/bin/time`
 * (a run still going after 30 s is killed and counted as 30 s). Figures per case: the exit code and
 * stderr lines of the last run, the wall time's median, ms, over the 2 s goal (a ratio: <= 1 meets
 * it), and the CPU time (user + system, ms, median), which stays near Node's own start-up when
 * nothing spins.
 *
 * Run alone: `node bench/startup-failures.ts` (prints JSON).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineLoad } from './runs.ts';

const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));
const RUNS = 3;
const GOAL_MS = 2000;
const KILL_AFTER_MS = 30_000;

interface Ended {
  code: number | null;
  lines: number;
  wallMs: number;
  cpuMs: number;
}

/** One run to its exit (killed after 30 s), with its wall and CPU time. */
function runToExit(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Ended> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn('/usr/bin/time', ['-f', 'cpu_s=%U+%S', process.execPath, BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    child.on('close', (code) => {
      clearTimeout(killer);
      const match = /cpu_s=([\d.]+)\+([\d.]+)/.exec(stderr);
      const ours = stderr.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('cpu_s=') && !line.startsWith('Command exited'));
      resolve({ code, lines: ours.length, wallMs: performance.now() - started, cpuMs: match ? (Number(match[1]) + Number(match[2])) * 1000 : Number.NaN });
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function run(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'bizops-startup-failures-'));
  const plain = join(dir, 'plain');
  writeFileSync(plain, 'x');
  const paths: readonly [string, string][] = [
    ['proc', '/proc/nope/x.db'],
    ['dev-null', '/dev/null'],
    ['file-as-dir', `${plain}/x.db`],
  ];
  const figures: Record<string, number | string> = { machine: machineLoad() };
  try {
    for (const command of ['sync', 'daemon']) {
      for (const [name, path] of paths) {
        const env = { PATH: process.env.PATH, BIZOPS_BASE_URL: 'http://127.0.0.1:9', BIZOPS_TOKEN: 'tok_bench', BIZOPS_DB: path, BIZOPS_HTTP_PORT: '0', BIZOPS_LOG_LEVEL: 'silent' };
        const ended: Ended[] = [];
        for (let round = 0; round < RUNS; round += 1) ended.push(await runToExit([command], env));
        const last = ended.at(-1)!;
        figures[`${command} ${name}: exit code, stderr lines`] = `${String(last.code)}, ${last.lines}`;
        figures[`${command} ${name}: wall ms median / 2 s goal`] = (median(ended.map((each) => each.wallMs)) / GOAL_MS).toFixed(2);
        figures[`${command} ${name}: CPU ms median`] = Math.round(median(ended.map((each) => each.cpuMs)));
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await run(), null, 2));
