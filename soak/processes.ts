/**
 * The project's processes as a user runs them: `bizops-sync daemon`, `worker` and one-off commands,
 * spawned from bin/bizops-sync.js with the soak's configuration file, killed (SIGKILL), paused
 * (SIGSTOP/SIGCONT) and stopped (SIGTERM) by the schedule. Each keeps the tail of its log for a
 * failure report, and says when it exited without being asked to.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** bin/bizops-sync.js of this checkout. */
export const BIN = fileURLToPath(new URL('../bin/bizops-sync.js', import.meta.url));

/** Every process the soak started that may still run: killed when the soak itself is stopped. */
export const LIVE_CHILDREN = new Set<ChildProcess>();

/** Set once the soak is being stopped: a child started after that (a step still running) is killed at once. */
let stopping = false;

/**
 * Tracks a child the soak started until it exits, so a stopped soak leaves nothing running. A child
 * adopted after {@link killAllChildren} (a schedule's step restarting Redis while the soak stops) is
 * killed at once.
 */
export function adoptChild(child: ChildProcess): void {
  if (stopping) {
    child.kill('SIGKILL');
    return;
  }
  LIVE_CHILDREN.add(child);
  child.once('exit', () => LIVE_CHILDREN.delete(child));
}

/** Kills every child still running (SIGCONT first, so a paused one dies too), and every child started from now on. */
export function killAllChildren(): void {
  stopping = true;
  for (const child of LIVE_CHILDREN) {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  }
}

/** How many of a process's last log lines a failure report shows. */
const TAIL_LINES = 40;

/** One spawned bizops-sync process. */
export class SoakProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Its last log lines (stderr and stdout), oldest first. */
  readonly tail: string[] = [];
  /** Its last warning and error log lines (level warn and above), which the info lines would push out of `tail`. */
  readonly warnings: string[] = [];
  /** stdout as a whole (one-off commands print their result there). */
  stdout = '';
  /** The daemon's HTTP base URL once it logged it. */
  url: string | undefined;
  /** Set when the soak asked it to end (a kill or a stop), so its exit is not a failure. */
  expectedExit = false;
  paused = false;
  /** True once a `worker` process logged that its write worker started (it has its Redis connections). */
  workerStarted = false;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Its whole log, line by line, when `SOAK_LOG_DIR` names a directory: `<dir>/<pid>-<name>.log`. */
  readonly logFile: string | undefined;
  #urlWaiters: ((url: string) => void)[] = [];

  /**
   * @param name how reports name it (`daemon#1`, `worker#2`, `sync#3`)
   * @param args the command and its arguments (`['daemon']`)
   * @param env the process environment (the soak's configuration file, log format json)
   */
  constructor(name: string, args: string[], env: NodeJS.ProcessEnv) {
    this.name = name;
    this.child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    adoptChild(this.child);
    const logDir = process.env.SOAK_LOG_DIR;
    if (logDir) {
      mkdirSync(logDir, { recursive: true });
      this.logFile = join(logDir, `${this.child.pid ?? 'none'}-${name.replace('#', '-')}.log`);
    }
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    let pending = '';
    this.child.stderr!.on('data', (chunk: Buffer) => {
      pending += String(chunk);
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) this.#line(line);
    });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += String(chunk);
    });
  }

  #line(line: string): void {
    if (this.logFile) appendFileSync(this.logFile, `${line}\n`);
    const kept = line.length > 600 ? `${line.slice(0, 600)}...` : line;
    this.tail.push(kept);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
    if (/"level":"(warn|error|fatal)"/.test(line)) {
      this.warnings.push(kept);
      if (this.warnings.length > TAIL_LINES) this.warnings.shift();
    }
    if (line.includes('write worker started')) this.workerStarted = true;
    if (this.url !== undefined || !line.includes('HTTP server listening')) return;
    try {
      const entry = JSON.parse(line) as { url?: unknown };
      if (typeof entry.url === 'string') {
        this.url = entry.url;
        for (const waiter of this.#urlWaiters.splice(0)) waiter(entry.url);
      }
    } catch {
      // not a JSON log line
    }
  }

  /** True while the process runs (paused included). */
  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the daemon's HTTP URL. @throws Error when the process exits first or `timeoutMs` passes */
  async httpUrl(timeoutMs = 30_000): Promise<string> {
    if (this.url) return this.url;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} did not open its HTTP port within ${timeoutMs} ms`)), timeoutMs);
      this.#urlWaiters.push((url) => {
        clearTimeout(timer);
        resolve(url);
      });
      void this.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (code ${code}, signal ${signal}) before opening its HTTP port`));
      });
    });
  }

  /** SIGKILL (a crash); resolves once it is gone. */
  async kill(): Promise<void> {
    this.expectedExit = true;
    if (!this.alive) return;
    this.child.kill('SIGKILL');
    await this.exited;
    this.paused = false;
  }

  /** SIGSTOP: the process stands still (a VM pause, a stop-the-world stall). */
  pause(): void {
    if (!this.alive || this.paused) return;
    this.child.kill('SIGSTOP');
    this.paused = true;
  }

  /** SIGCONT after `pause`. */
  resume(): void {
    if (!this.alive || !this.paused) return;
    this.child.kill('SIGCONT');
    this.paused = false;
  }

  /**
   * SIGTERM (a graceful stop) and waits for the exit.
   * @returns the exit code (the daemon promises 0); null when it had to be killed after `timeoutMs`
   */
  async stop(timeoutMs = 15_000): Promise<number | null> {
    this.expectedExit = true;
    this.resume();
    if (!this.alive) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const { code, signal } = await this.exited;
    clearTimeout(timer);
    return signal === 'SIGKILL' ? null : code;
  }

  /** Its exit, as a line for a report: `daemon#1 exited with code 1`. */
  describeExit(): string {
    return `${this.name} exited with code ${this.child.exitCode}${this.child.signalCode ? ` (signal ${this.child.signalCode})` : ''}`;
  }
}

/**
 * Runs one command to its end.
 * @returns its exit code, stdout and log tail
 */
export async function runCommand(name: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<{ code: number | null; stdout: string; tail: string[] }> {
  const command = new SoakProcess(name, args, env);
  const timer = setTimeout(() => command.child.kill('SIGKILL'), timeoutMs);
  const { code } = await command.exited;
  clearTimeout(timer);
  return { code, stdout: command.stdout, tail: command.tail };
}
