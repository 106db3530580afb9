/**
 * Repeats a measurement and prints its spread: benchmarks report each figure as
 * `min / median / max` of several runs, because the machine they run on is often shared.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** `min / median / max` of `values`, each rounded to `digits`. */
export function spread(values: readonly number[], digits = 3): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2]! : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  return [sorted[0]!, median, sorted.at(-1)!].map((value) => value.toFixed(digits)).join(' / ');
}

/** Runs `measure` `times` times one after another; each result in order. */
export async function repeat<T>(times: number, measure: (run: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let run = 0; run < times; run += 1) results.push(await measure(run));
  return results;
}

/** The 1-minute load average and the CPU count, to print beside the figures of a shared machine. */
export function machineLoad(): string {
  const [one] = readFileSync('/proc/loadavg', 'utf8').split(' ');
  const cpus = readFileSync('/proc/cpuinfo', 'utf8').split('\n').filter((line) => line.startsWith('processor')).length;
  return `load ${String(one)} on ${cpus} CPUs`;
}

/** One child process run to its end (`runMeasured`): peak RSS (MB), wall time (ms), CPU time (user + system, ms) and the bytes it wrote to stdout. */
export interface MeasuredRun {
  peakRssMb: number;
  wallMs: number;
  cpuMs: number;
  stdoutBytes: number;
}

/**
 * Runs a child process to its end under `/usr/bin/time`, discarding its stdout (read as fast as it
 * comes), and returns its peak resident set size (the kernel's maxrss, MB), wall time, and CPU time
 * (user + system, ms, in steps of 10 ms): on a shared machine the wall time stretches with the
 * load, the CPU time much less. `onSpawn` receives the pid of `/usr/bin/time`, whose only child is
 * the command (`childCpuMs` reads the command's CPU time while it runs).
 * @throws Error when the child exits non-zero
 */
export function runMeasured(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  onSpawn?: (timePid: number) => void,
): Promise<MeasuredRun> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn('/usr/bin/time', ['-f', 'maxrss_kb=%M cpu_s=%U+%S', command, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) onSpawn?.(child.pid);
    let stdoutBytes = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdoutBytes += chunk.length));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('close', (code) => {
      const match = /maxrss_kb=(\d+) cpu_s=([\d.]+)\+([\d.]+)/.exec(stderr);
      if (code !== 0 || !match) {
        reject(new Error(`${command} ${args.join(' ')} exited with ${String(code)}: ${stderr.slice(-500)}`));
        return;
      }
      resolve({ peakRssMb: Number(match[1]) / 1024, wallMs: performance.now() - started, cpuMs: (Number(match[2]) + Number(match[3])) * 1000, stdoutBytes });
    });
  });
}

/**
 * CPU time (user + system, ms, every thread, in steps of 10 ms: the kernel's clock ticks) the only
 * child of process `parentPid` has used so far, read from /proc (Linux), or undefined when it has
 * no child (not started yet, or ended). With `runMeasured`'s `onSpawn`: a command's CPU time at a
 * moment of its run, e.g. when its first request reaches a server.
 */
export function childCpuMs(parentPid: number): number | undefined {
  try {
    const [child] = readFileSync(`/proc/${parentPid}/task/${parentPid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    if (child === undefined) return undefined;
    // Fields after the command's name (which may hold spaces, in parentheses): utime and stime are fields 14 and 15.
    const fields = readFileSync(`/proc/${child}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The kernel's clock ticks per second (`getconf CLK_TCK`): 100 on Linux. */
const CLOCK_TICKS_PER_SECOND = 100;
