/**
 * The one line an operator reads first (docs/operations.md "The verdict"): `all 5 streams ok`, or
 * what needs a look, worst first: `2 streams failing since 23:48 UTC, 1 endpoint paused until
 * 00:15 UTC, 3 writes failed`. Each part names what it counts and points at the rows it comes from
 * (the console links them; `status` prints them below). Shared by the `status` command and the
 * operator console, so the two never disagree. Also the short form of an error (`shortError`).
 */
import type { PartStatus } from '../daemon/part-supervisor.ts';
import type { StreamStatus } from './mirror-status.ts';

/** What one part of the verdict points at: the rows an operator opens next. */
export type VerdictTarget =
  | { kind: 'stream'; stream: string }
  | { kind: 'endpoint'; endpoint: string }
  | { kind: 'writes'; status: 'failed' | 'needs_review' }
  | { kind: 'mirror' }
  | { kind: 'daemon' };

/** One part of the verdict: its words, how bad (`bad`: broken now; `warn`: look when you can), and its first row. */
export interface VerdictPart {
  text: string;
  tone: 'bad' | 'warn';
  target: VerdictTarget;
}

/** The verdict: `ok` when nothing needs a look; `text` the line; `parts` its pieces, worst first. */
export interface Verdict {
  ok: boolean;
  text: string;
  parts: VerdictPart[];
}

/** What the verdict reads of a webhook endpoint (src/notify/webhooks' listing). Times are ISO 8601. */
export interface VerdictEndpoint {
  name: string;
  /** False once disabled (410 Gone, or failing for `disableAfterDays`). */
  enabled: boolean;
  /** First failed attempt of its current streak; null while it answers. */
  failingSince: string | null;
  /** When it next tries; null when nothing waits. */
  nextAttemptAt: string | null;
}

/** What the verdict is made of. */
export interface VerdictInput {
  /** The streams to judge (the configured ones in the console; every stream that ran in `status`). */
  streams: readonly StreamStatus[];
  endpoints?: readonly VerdictEndpoint[];
  /** Writes that failed within `FAILED_WRITES_RECENT_HOURS` (the latest terminal 4xx). */
  recentFailedWrites?: number;
  /** Writes parked as `needs_review`. */
  writesNeedingReview?: number;
  /**
   * The daemons serving the mirror (src/status/daemon-parts.ts): a required part of a daemon that
   * answered (`live`) that is starting, retrying or stopped counts as down; a recorded daemon that
   * did not answer (`stored`) is a warning.
   */
  daemons?: readonly { source: 'live' | 'stored'; parts: readonly Pick<PartStatus, 'part' | 'state' | 'required'>[] }[];
  /** Why the mirror could not be read, when it could not (nothing else is known then). */
  mirrorError?: string | null;
  now: Date;
}

/** `1 stream`, `2 streams`. */
function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * A time as short as it can be read unambiguously next to `now`: `23:48 UTC` within the same UTC
 * day, `2026-04-01 23:48 UTC` otherwise; `?` for none.
 */
export function shortTime(iso: string | null | undefined, now: Date): string {
  if (!iso) return '?';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const text = at.toISOString();
  const clock = `${text.slice(11, 16)} UTC`;
  return text.slice(0, 10) === now.toISOString().slice(0, 10) ? clock : `${text.slice(0, 10)} ${clock}`;
}

/** The earliest of some ISO times (null when none). */
function earliest(times: readonly (string | null)[]): string | null {
  let first: string | null = null;
  for (const time of times) if (time !== null && (first === null || time < first)) first = time;
  return first;
}

/**
 * The verdict over one connection's streams, endpoints and writes. A stream is judged by its
 * operational condition (`failing`, `stale`: what alerts follow), then by a last run that failed
 * short of that, then by what waits on a person (unsupported, tombstones held, quarantined records).
 */
export function verdictOf(input: VerdictInput): Verdict {
  const parts: VerdictPart[] = [];
  const { now } = input;
  if (input.mirrorError) {
    parts.push({ text: 'the mirror could not be read', tone: 'bad', target: { kind: 'mirror' } });
    return { ok: false, text: parts[0]!.text, parts };
  }
  const daemons = input.daemons ?? [];
  const down = daemons.flatMap((daemon) => (daemon.source === 'live' ? daemon.parts.filter((part) => part.required && part.state !== 'running' && part.state !== 'standby') : []));
  if (down.length > 0) {
    parts.push({ text: `${count(down.length, 'daemon part')} down (${down.map((part) => `${part.part} ${part.state}`).join(', ')})`, tone: 'bad', target: { kind: 'daemon' } });
  }
  const streams = input.streams;
  const failing = streams.filter((stream) => stream.supported && stream.condition.condition === 'failing');
  if (failing.length > 0) {
    parts.push({ text: `${count(failing.length, 'stream')} failing since ${shortTime(earliest(failing.map((s) => s.condition.since)), now)}`, tone: 'bad', target: { kind: 'stream', stream: failing[0]!.stream } });
  }
  const stale = streams.filter((stream) => stream.supported && stream.condition.condition === 'stale');
  if (stale.length > 0) {
    parts.push({ text: `${count(stale.length, 'stream')} stale since ${shortTime(earliest(stale.map((s) => s.condition.since)), now)}`, tone: 'bad', target: { kind: 'stream', stream: stale[0]!.stream } });
  }
  const endpoints = input.endpoints ?? [];
  const disabled = endpoints.filter((endpoint) => !endpoint.enabled);
  if (disabled.length > 0) parts.push({ text: `${count(disabled.length, 'endpoint')} disabled`, tone: 'bad', target: { kind: 'endpoint', endpoint: disabled[0]!.name } });
  const paused = endpoints.filter((endpoint) => endpoint.enabled && endpoint.failingSince !== null);
  if (paused.length > 0) {
    const next = earliest(paused.map((endpoint) => endpoint.nextAttemptAt));
    const text = next !== null && next > now.toISOString() ? `paused until ${shortTime(next, now)}` : `failing since ${shortTime(earliest(paused.map((endpoint) => endpoint.failingSince)), now)}`;
    parts.push({ text: `${count(paused.length, 'endpoint')} ${text}`, tone: 'bad', target: { kind: 'endpoint', endpoint: paused[0]!.name } });
  }
  const failedWrites = input.recentFailedWrites ?? 0;
  if (failedWrites > 0) parts.push({ text: `${count(failedWrites, 'write')} failed`, tone: 'bad', target: { kind: 'writes', status: 'failed' } });
  const review = input.writesNeedingReview ?? 0;
  if (review > 0) parts.push({ text: `${count(review, 'write')} ${review === 1 ? 'needs' : 'need'} review`, tone: 'bad', target: { kind: 'writes', status: 'needs_review' } });
  const lastRunFailed = streams.filter((stream) => stream.supported && stream.condition.condition === 'ok' && stream.lastError !== null);
  if (lastRunFailed.length > 0) {
    parts.push({ text: `${count(lastRunFailed.length, 'stream')} with a failed last run`, tone: 'warn', target: { kind: 'stream', stream: lastRunFailed[0]!.stream } });
  }
  const silent = daemons.filter((daemon) => daemon.source === 'stored').length;
  if (silent > 0) parts.push({ text: `${count(silent, 'recorded daemon')} not answering`, tone: 'warn', target: { kind: 'daemon' } });
  const unsupported = streams.filter((stream) => !stream.supported);
  if (unsupported.length > 0) parts.push({ text: `${count(unsupported.length, 'stream')} unsupported`, tone: 'warn', target: { kind: 'stream', stream: unsupported[0]!.stream } });
  const held = streams.filter((stream) => stream.deletionHold !== null || (stream.partitions?.list ?? []).some((partition) => partition.deletionHold !== null));
  if (held.length > 0) parts.push({ text: `tombstones held on ${count(held.length, 'stream')}`, tone: 'warn', target: { kind: 'stream', stream: held[0]!.stream } });
  const quarantined = streams.filter((stream) => stream.rejected > 0);
  if (quarantined.length > 0) {
    const records = quarantined.reduce((sum, stream) => sum + stream.rejected, 0);
    parts.push({ text: `${count(records, 'record')} quarantined`, tone: 'warn', target: { kind: 'stream', stream: quarantined[0]!.stream } });
  }
  if (parts.length > 0) return { ok: false, text: parts.map((part) => part.text).join(', '), parts };
  const running = streams.filter((stream) => stream.lastRun.mode !== null).length;
  const ok = running === streams.length ? `all ${count(streams.length, 'stream')} ok` : `${running} of ${count(streams.length, 'stream')} ok, ${streams.length - running} not run yet`;
  return { ok: true, text: endpoints.length > 0 ? `${ok}, ${count(endpoints.length, 'endpoint')} delivering` : ok, parts };
}

/** An error in a few words and the whole of it: the short form for a table cell, the detail on demand. */
export interface ShortError {
  /** `HTTP 503 · GET /transactions: Service unavailable` (at most about 80 characters). */
  short: string;
  /** The error as it was kept. */
  detail: string;
}

/** The longest short form, characters. */
const SHORT_ERROR_LENGTH = 80;

/**
 * The short form of a kept error line: its HTTP status (`HTTP 503`), the request it answered
 * (method and path, without the query), then the start of its message; the whole line stays as
 * `detail`. A line without a status or a request is cut to about 80 characters at a word.
 */
export function shortError(line: string): ShortError {
  const status = /\bHTTP (\d{3})\b/.exec(line)?.[1];
  const request = /\b(GET|POST|PUT|PATCH|DELETE) (\/[^\s?):,]*)/.exec(line);
  // The message: what is left once the status prefix, the request and the partition prefix are out.
  let message = line
    .replace(/^partition [^:]+: /, '')
    .replace(/^HTTP \d{3}: /, '')
    .replace(/\s*\((?:HTTP \d{3} from [^)]*|(?:GET|POST|PUT|PATCH|DELETE) [^)]*)\)/g, '')
    .replace(/^(?:GET|POST|PUT|PATCH|DELETE) \S+: /, '')
    .trim();
  if (status && new RegExp(`^HTTP ${status}$`).test(message)) message = '';
  const partition = /^partition ([^:]+): /.exec(line)?.[1];
  // A message that starts with its status already (`HTTP 502 from the receiver`) is not led by it again.
  const statusInMessage = status !== undefined && message.startsWith(`HTTP ${status}`);
  const head = [status && !statusInMessage ? `HTTP ${status}` : '', request ? `${request[1]} ${request[2]}` : ''].filter(Boolean).join(' · ');
  let short = [partition ? `partition ${partition}` : '', head].filter(Boolean).join(': ');
  if (message) short = short ? `${short}: ${message}` : message;
  if (short.length > SHORT_ERROR_LENGTH) {
    const cut = short.slice(0, SHORT_ERROR_LENGTH);
    const space = cut.lastIndexOf(' ');
    short = `${space > SHORT_ERROR_LENGTH / 2 ? cut.slice(0, space) : cut}…`;
  }
  return { short, detail: line };
}
