/**
 * Helpers for the daemon tests: the real `bizops-sync daemon` process, a real webhook receiver
 * (node:http on 127.0.0.1), and a Prometheus exposition-format checker. Polling: test/helpers.ts `waitFor`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BIN } from '../helpers.ts';


/** A fresh Standard Webhooks secret. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Environment for a CLI child: PATH and HOME only, JSON logs, plus `extra`. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, BIZOPS_LOG_FORMAT: 'json', BIZOPS_LOG_LEVEL: 'debug', ...extra };
}

/** A `bizops-sync daemon` child process. */
export interface DaemonProcess {
  child: ChildProcess;
  /** Parsed JSON log lines so far. */
  logs: Record<string, unknown>[];
  /** Raw stderr. */
  stderr(): string;
  /** The HTTP server's base URL, once it logged it. */
  url: Promise<string>;
  /** Resolves when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `node bin/bizops-sync.js daemon` with `env` (use `BIZOPS_HTTP_PORT=0`: the URL is read from the log). */
export function spawnDaemon(env: NodeJS.ProcessEnv): DaemonProcess {
  const child = spawn(process.execPath, [BIN, 'daemon'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  let pending = '';
  let resolveUrl: (url: string) => void = () => undefined;
  let rejectUrl: (error: Error) => void = () => undefined;
  const url = new Promise<string>((resolve, reject) => {
    resolveUrl = resolve;
    rejectUrl = reject;
  });
  child.stdout!.resume();
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += String(chunk);
    pending += String(chunk);
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        if (entry.component === 'http' && typeof entry.url === 'string') resolveUrl(entry.url);
      } catch {
        // not a log line (an error message)
      }
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      rejectUrl(new Error(`the daemon exited (code ${code}, signal ${signal}) before listening: ${stderr}`));
      resolve({ code, signal });
    });
  });
  return { child, logs, stderr: () => stderr, url, exited };
}

/** Sends SIGTERM and resolves with the exit and how long it took, ms. */
export async function terminate(daemon: DaemonProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
  const started = performance.now();
  if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill(signal);
  const result = await daemon.exited;
  return { ...result, ms: performance.now() - started };
}

/** One webhook request as received. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() at arrival. */
  at: number;
}

/** A real webhook receiver on 127.0.0.1. `handler` may answer itself (return true) or leave it to the default 204. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  handler: (request: ReceivedWebhook, response: ServerResponse) => boolean = () => false;
  #server: Server | null = null;
  url = '';

  async start(): Promise<this> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const received = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        this.received.push(received);
        if (!this.handler(received, response)) response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    return this;
  }

  /** The received webhook-ids, in arrival order. */
  ids(): string[] {
    return this.received.map((request) => String(request.headers['webhook-id']));
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = null;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

const METRIC_NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"';
// prom-client writes a NaN as `Nan` (an event-loop lag with no sample yet); Prometheus reads a
// value with Go's ParseFloat, which takes NaN in any case.
const VALUE = '(?:[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][+-]?\\d+)?|[Nn][Aa][Nn]|[+-]Inf)';
const SAMPLE = new RegExp(`^(${METRIC_NAME})(\\{(?:${LABEL})(?:,${LABEL})*,?\\})? (${VALUE})(?: -?\\d+)?$`);
const HELP = new RegExp(`^# HELP (${METRIC_NAME}) .*$`);
const TYPE = new RegExp(`^# TYPE (${METRIC_NAME}) (counter|gauge|histogram|summary|untyped)$`);

/** A parsed sample. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parses Prometheus text exposition format 0.0.4, strictly: every line is a HELP, a TYPE, a sample
 * or blank; each sample's family was declared by a TYPE line before it.
 * @throws Error quoting the first line that breaks the format
 */
export function parsePrometheusText(text: string): { samples: MetricSample[]; types: Map<string, string> } {
  const types = new Map<string, string>();
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const help = HELP.exec(line);
    if (help) continue;
    const type = TYPE.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a valid exposition-format line: ${JSON.stringify(line)}`);
    const name = sample[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count|total|created)$/, '');
    if (!types.has(family) && !types.has(name)) throw new Error(`sample ${name} has no TYPE line before it`);
    const labels: Record<string, string> = {};
    for (const match of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[match[1]!] = match[2]!;
    const raw = sample[3]!;
    samples.push({ name, labels, value: raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw) });
  }
  return { samples, types };
}

/** The value of the first sample named `name` whose labels include `labels`, or undefined. */
export function sampleValue(samples: readonly MetricSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))?.value;
}
