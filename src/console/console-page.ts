/**
 * The console's HTML, rendered on the server with hono's `html` tagged template
 * (docs/decisions.md "Operator console"): every interpolated value is escaped unless it is itself
 * a template (nested templates and arrays of them are kept as they are); nothing here marks a
 * string raw. The pages need no JavaScript and load nothing from elsewhere: one stylesheet from the
 * daemon (`/console/console.css`), a `<meta http-equiv="refresh">` for the periodic refresh.
 *
 * What is shown comes from `ConnectionSnapshot`s (console-snapshot.ts: masked already); no secret
 * reaches a template (the sign-in form never echoes what was typed).
 *
 * The page leads with the verdict (src/status/verdict.ts), each part a link to its rows; a stream's
 * state reads its condition first and what it is doing second (`failing since 23:48 UTC (3 failed
 * runs in a row), retrying`); errors show short (HTTP status, request, start of the message) with
 * the whole text in a `<details>`; lags and requests are small SVG plots drawn here (no script).
 * On a narrow screen (a phone) the secondary columns (`.wide`) are hidden and each table scrolls
 * inside its own box, the page never wider than the screen.
 */
import { html } from 'hono/html';
import type { WebhookEndpointListing } from '../notify/delivery/target-admin.ts';
import type { WebhookAttempt } from '../notify/delivery/attempts.ts';
import type { LeaseState } from '../mirror/leases.ts';
import type { ConsumerListing } from '../notify/pull/consumers.ts';
import type { FailedWrite, MirrorReport, PartitionStatus, StreamStatus, WriteNeedingReview } from '../status/mirror-status.ts';
import { shortError, shortTime, type VerdictTarget } from '../status/verdict.ts';
import type { HistoryPoint, HistorySnapshot } from './console-history.ts';
import type { ConnectionSnapshot } from './console-snapshot.ts';
import type { FinishedRun } from './recent-runs.ts';
import type { RunRetrying } from './run-retries.ts';

/** A rendered piece of HTML (hono's escaped string, or a promise of one). */
type Fragment = ReturnType<typeof html>;

/** The paths the console answers (console-routes.ts). */
export const CONSOLE_PATHS = {
  page: '/',
  json: '/console.json',
  stylesheet: '/console/console.css',
  signIn: '/console/sign-in',
  signOut: '/console/sign-out',
  replay: '/console/webhooks/replay',
  enable: '/console/webhooks/enable',
  retry: '/console/webhooks/retry',
} as const;

/** The write statuses, in the order a person reads them (docs/writes.md "Statuses and events"). */
const WRITE_STATUSES = ['queued', 'sending', 'succeeded', 'failed', 'needs_review'] as const;

/** `2026-04-02 10:11:12 UTC` from an ISO time; `-` for none. */
function time(iso: string | null | undefined): string {
  if (!iso) return '-';
  const parsed = new Date(iso);
  if (Number.isNaN(parsed.getTime())) return iso;
  return `${parsed.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** `0.4 s`, `45 s`, `12 min`, `3.5 h`, `2.1 days` from seconds. */
function duration(seconds: number): string {
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86_400).toFixed(1)} days`;
}

/** `1 page`, `2 pages`. */
function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The shell of every page. `refreshSeconds` 0: no refresh. */
function layout(title: string, refreshSeconds: number, body: Fragment): Fragment {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refreshSeconds > 0 ? html`<meta http-equiv="refresh" content="${refreshSeconds}">` : ''}
<title>${title}</title>
<link rel="stylesheet" href="${CONSOLE_PATHS.stylesheet}">
</head>
<body>
${body}
</body>
</html>
`;
}

/** What the sign-in page shows. */
export interface SignInView {
  /** Why the last sign-in was refused; absent on the first view. */
  error?: string;
  /** True when `http.writeApiKey` is configured: the form offers the write key (actions). */
  writeKeyConfigured: boolean;
}

/** The sign-in form: POSTs the read key (and optionally the write key); nothing typed is shown back. */
export async function renderSignIn(view: SignInView): Promise<string> {
  const body = html`<main class="sign-in">
<h1>bizops-sync console</h1>
<p>Sign in with the daemon's read key (<code>BIZOPS_READ_API_KEY</code>).</p>
${view.error ? html`<p class="notice error" role="alert">${view.error}</p>` : ''}
<form method="post" action="${CONSOLE_PATHS.signIn}">
<label>Read key <input type="password" name="key" autocomplete="current-password" required autofocus></label>
${view.writeKeyConfigured
    ? html`<label>Write key, for the action buttons (optional) <input type="password" name="writeKey" autocomplete="off"></label>`
    : ''}
<button type="submit">Sign in</button>
</form>
</main>`;
  return String(await layout('Sign in · bizops-sync console', 0, body));
}

/** A page with one message (a refused form) and the way back to the console. */
export async function renderMessage(message: string): Promise<string> {
  const body = html`<main class="sign-in">
<h1>bizops-sync console</h1>
<p class="notice error" role="alert">${message}</p>
<p><a href="${CONSOLE_PATHS.page}">Back to the console</a></p>
</main>`;
  return String(await layout('bizops-sync console', 0, body));
}

/** What the console page shows. */
export interface ConsoleView {
  connections: ConnectionSnapshot[];
  /** When the snapshot was taken. */
  now: Date;
  /** Seconds between refreshes; 0: none. */
  refreshSeconds: number;
  /** The signed-in session's CSRF token; null for a bearer request (no forms then). */
  csrfToken: string | null;
  /** True when the session may use the action buttons (it gave the write key). */
  mayAct: boolean;
  /** True when `http.writeApiKey` is configured. */
  writeKeyConfigured: boolean;
  /** The outcome of the last action, shown once. */
  notice?: { kind: 'ok' | 'error'; text: string };
}

/** The console page. */
export async function renderConsole(view: ConsoleView): Promise<string> {
  const refresh =
    view.refreshSeconds > 0
      ? html`refreshes every ${view.refreshSeconds} s (<a href="/?refresh=0">stop</a>)`
      : html`not refreshing (<a href="/">refresh every 30 s</a>)`;
  const actionsHint =
    view.csrfToken !== null && !view.mayAct && view.writeKeyConfigured
      ? html`<p class="hint">Actions (replay, enable) need the write key: sign out and sign in with it too.</p>`
      : '';
  const body = html`<header>
<h1>bizops-sync console</h1>
<p class="meta">As of ${time(view.now.toISOString())}; ${refresh}.</p>
${view.csrfToken !== null
    ? html`<form method="post" action="${CONSOLE_PATHS.signOut}" class="sign-out"><input type="hidden" name="csrf" value="${view.csrfToken}"><button type="submit">Sign out</button></form>`
    : ''}
</header>
${view.notice ? html`<p class="notice ${view.notice.kind}" role="${view.notice.kind === 'error' ? 'alert' : 'status'}">${view.notice.text}</p>` : ''}
${actionsHint}
<main>
${verdictSection(view.connections)}
${view.connections.map((connection) => connectionSection(connection, view))}
</main>`;
  return String(await layout('bizops-sync console', view.refreshSeconds, body));
}

/** The id of the rows a verdict part points at (the link's `#...`). */
function anchorOf(connection: string, target: VerdictTarget): string {
  switch (target.kind) {
    case 'stream':
      return `stream-${connection}-${target.stream}`;
    case 'endpoint':
      return `endpoint-${connection}-${target.endpoint}`;
    case 'writes':
      return `writes-${connection}-${target.status}`;
    case 'mirror':
    case 'daemon':
      return `connection-${connection}`;
  }
}

/** The verdict, first on the page: one line per connection, each part a link to its rows. */
function verdictSection(connections: readonly ConnectionSnapshot[]): Fragment {
  const ok = connections.every((connection) => connection.verdict.ok);
  const tone = ok ? 'ok' : connections.some((connection) => connection.verdict.parts.some((part) => part.tone === 'bad')) ? 'bad' : 'warn';
  return html`<section class="verdict ${tone}" aria-label="Verdict">
${connections.map((connection) => {
    const verdict = connection.verdict;
    const prefix = connections.length > 1 ? html`<a href="#connection-${connection.name}">${connection.name}</a>: ` : '';
    return html`<p class="verdict-line">${prefix}${verdict.ok
      ? html`<span class="state ok">${verdict.text}</span>`
      : verdict.parts.map((part, index) => html`${index > 0 ? ', ' : ''}<a class="state ${part.tone}" href="#${anchorOf(connection.name, part.target)}">${part.text}</a>`)}</p>`;
  })}
</section>`;
}

function connectionSection(connection: ConnectionSnapshot, view: ConsoleView): Fragment {
  const id = `connection-${connection.name}`;
  const report = connection.report;
  return html`<section class="connection" aria-labelledby="${id}">
<h2 id="${id}">Connection ${connection.name}</h2>
${connection.error ? html`<p class="notice error" role="alert">${connection.error}</p>` : ''}
${report
    ? html`<p class="meta">Changelog at seq ${report.changelogSeq}${report.oldestSeq > 1 ? `, kept from seq ${report.oldestSeq}` : ''}.</p>
${requestsFigure(connection.history)}
${streamsTable(connection, report.streams, view.now)}
${streamNotes(report.streams)}
${recentRunsTable(connection)}
${webhooksSection(connection, view)}
${webhooksSection(connection, view, 'sinks')}
${consumersTable(report.consumers)}
${writesSection(connection.name, report.writes, report.writesNeedingReview, report.failedWrites)}
${leasesTable(connection, report.leases, report.waiting)}`
    : ''}
</section>`;
}

/** A table in a box of its own that scrolls sideways on a narrow screen (the page itself never does). */
function scrolling(table: Fragment): Fragment {
  return html`<div class="scroll">${table}</div>`;
}

/** An error cell's content: the short form (HTTP status, request, the message's start), the whole line on demand. */
function errorText(line: string | null | undefined): Fragment | string {
  if (!line) return '';
  const { short, detail } = shortError(line);
  if (short === detail) return detail;
  return html`<details><summary>${short}</summary><p class="detail">${detail}</p></details>`;
}

/** Plot size, px (the viewBox; the stylesheet may scale it). */
const PLOT = { width: 120, height: 28, pad: 2 } as const;

/** The span the points cover, in words (`3.0 h`, `12 min`). */
function spanOf(points: readonly HistoryPoint[]): string {
  return duration(Math.max(0, (Date.parse(points.at(-1)!.at) - Date.parse(points[0]!.at)) / 1000));
}

/**
 * A line of `points` (oldest first) as an inline SVG: x by time, y from 0 to the peak, the last
 * point marked. `label` names it for a screen reader and as its tooltip.
 */
function linePlot(points: readonly HistoryPoint[], what: string, format: (value: number) => string): Fragment {
  if (points.length === 0) return html``;
  const { width, height, pad } = PLOT;
  const peak = Math.max(1, ...points.map((point) => point.value));
  const first = Date.parse(points[0]!.at);
  const span = Date.parse(points.at(-1)!.at) - first;
  const coordinates = points.map((point) => {
    const x = span > 0 ? pad + ((Date.parse(point.at) - first) / span) * (width - 2 * pad) : width - pad;
    const y = height - pad - (point.value / peak) * (height - 2 * pad);
    return [Math.round(x * 10) / 10, Math.round(y * 10) / 10] as const;
  });
  const [lastX, lastY] = coordinates.at(-1)!;
  const label = `${what} over the last ${spanOf(points)}: ${count(points.length, 'sample')}, now ${format(points.at(-1)!.value)}, peak ${format(peak)}`;
  return html`<svg class="plot" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${label}" data-samples="${points.length}"><title>${label}</title><polyline points="${coordinates.map(([x, y]) => `${x},${y}`).join(' ')}"></polyline><circle cx="${lastX}" cy="${lastY}" r="2"></circle></svg>`;
}

/** Seconds of lag, for a plot's label. */
function lagWords(seconds: number): string {
  return seconds === 0 ? 'none' : duration(seconds);
}

/** The requests this daemon sent per sample interval, as bars against the limit line. */
function requestsFigure(history: HistorySnapshot | null): Fragment {
  if (!history || history.requests.length === 0) return html``;
  const points = history.requests;
  const { pad } = PLOT;
  const width = 240;
  const height = 36;
  const peak = Math.max(history.requestLimit, ...points.map((point) => point.value), 1);
  const bar = (width - 2 * pad) / points.length;
  const y = (value: number) => Math.round((height - pad - (value / peak) * (height - 2 * pad)) * 10) / 10;
  const every = history.sampleMs === 60_000 ? 'minute' : history.sampleMs % 60_000 === 0 ? `${history.sampleMs / 60_000} minutes` : `${history.sampleMs / 1000} s`;
  const label = `Requests per ${every} (this daemon) over the last ${spanOf(points)}: ${count(points.length, 'sample')}, now ${points.at(-1)!.value}, peak ${Math.max(...points.map((point) => point.value))}; the limit is ${Math.round(history.requestLimit * 10) / 10}`;
  return html`<figure class="requests"><svg class="plot bars" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${label}" data-samples="${points.length}"><title>${label}</title>${points.map(
    (point, index) =>
      html`<rect class="${point.value > history.requestLimit ? 'over' : ''}" x="${Math.round((pad + index * bar) * 10) / 10}" y="${y(point.value)}" width="${Math.max(0.5, Math.round(bar * 8) / 10)}" height="${Math.round((height - pad - y(point.value)) * 10) / 10}"></rect>`,
  )}<line class="limit" x1="${pad}" x2="${width - pad}" y1="${y(history.requestLimit)}" y2="${y(history.requestLimit)}"></line></svg><figcaption>${label}</figcaption></figure>`;
}

/**
 * A stream's state: its condition first, what it is doing second, and its CSS class. `failing` and
 * `stale` are the stream's operational condition (the one `stream.failing` / `stream.stale` events
 * and the alert rules follow: `sync.failingAfterRuns` failed runs in a row, no success for its stale
 * interval); one failed run short of that reads `last run failed`. A run in progress adds
 * `running (sync)`, or `retrying` while its requests fail or after a failed run: the state is never
 * green while the stream fails.
 */
function streamState(stream: StreamStatus, running: ConnectionSnapshot['activeRuns'][number] | undefined, now: Date): { text: string; tone: 'ok' | 'warn' | 'bad' | 'idle' } {
  const { condition, failedRuns, since } = stream.condition;
  let text: string;
  let tone: 'ok' | 'warn' | 'bad' | 'idle';
  if (!stream.supported) [text, tone] = ['unsupported', 'warn'];
  else if (condition === 'failing') [text, tone] = [`failing since ${shortTime(since, now)} (${count(failedRuns, 'failed run')} in a row)`, 'bad'];
  else if (condition === 'stale') [text, tone] = [`stale: no success since ${shortTime(stream.lastRun.succeededAt, now)}`, 'bad'];
  else if (stream.lastError) [text, tone] = ['last run failed', 'warn'];
  else if (stream.deletionHold) [text, tone] = ['tombstones held', 'warn'];
  else if (stream.inProgress && !running) [text, tone] = ['waiting to resume', 'warn'];
  else if (!stream.lastRun.mode) [text, tone] = ['not run yet', 'idle'];
  else [text, tone] = ['ok', 'ok'];
  if (!running) return { text, tone };
  if (running.retrying) {
    const retrying = `retrying (${retryWords(running.retrying, now)})`;
    return { text: text === 'ok' ? retrying : `${text}, ${retrying}`, tone: tone === 'bad' ? 'bad' : 'warn' };
  }
  if (tone === 'bad' || stream.lastError) return { text: `${text}, retrying (${running.reason})`, tone };
  return { text: `${text}, running (${running.reason})`, tone };
}

/** `3 retries since 23:48 UTC, HTTP 503`. */
function retryWords(retrying: RunRetrying, now: Date): string {
  const status = /\bHTTP (\d{3})\b/.exec(retrying.lastError)?.[1];
  return `${count(retrying.retries, 'retry', 'retries')} since ${shortTime(retrying.since, now)}${status ? `, HTTP ${status}` : ''}`;
}

function streamsTable(connection: ConnectionSnapshot, streams: readonly StreamStatus[], now: Date): Fragment {
  const shown = streams.filter((stream) => connection.streams.includes(stream.stream) || stream.lastRun.mode !== null);
  const history = connection.history;
  return scrolling(html`<table class="streams cards">
<caption>Streams</caption>
<thead><tr><th scope="col">Stream</th><th scope="col">State</th><th scope="col">Records</th><th scope="col" class="wide">Tombstoned</th><th scope="col" class="wide">Cursor</th><th scope="col">Lag</th><th scope="col" class="wide">Last success</th><th scope="col">Last run</th><th scope="col" class="wide">Quarantined</th><th scope="col">Last error</th></tr></thead>
<tbody>
${shown.map((stream) => {
    const running = connection.activeRuns.find((run) => run.stream === stream.stream);
    const state = streamState(stream, running, now);
    const run = stream.lastRun;
    const lagPoints = history?.streams[stream.stream] ?? [];
    return html`<tr id="stream-${connection.name}-${stream.stream}">
<th scope="row">${stream.stream}</th>
<td data-label="State"><span class="state ${state.tone}">${state.text}</span></td>
<td data-label="Records" class="num">${stream.records}</td>
<td data-label="Tombstoned" class="num wide">${stream.tombstoned}</td>
<td data-label="Cursor" class="wide">${time(stream.cursor)}</td>
<td data-label="Lag" class="lag">${stream.lagSeconds === null ? '-' : duration(stream.lagSeconds)} ${linePlot(lagPoints, `${stream.stream} lag`, lagWords)}</td>
<td data-label="Last success" class="wide">${time(run.succeededAt)}</td>
<td data-label="Last run">${lastRun(run, stream.lastError)}</td>
<td data-label="Quarantined" class="num wide${stream.rejected > 0 ? ' bad' : ''}">${stream.rejected}</td>
<td data-label="Last error" class="error-text">${errorText(stream.lastError)}</td>
</tr>
${(stream.partitions?.list ?? []).map((partition) => partitionRow(stream, stream.partitions!.param, partition))}`;
  })}
</tbody>
</table>`);
}

/** A partition's row under its stream's (`locationId=loc_1`): its own records, cursor, lag and runs. */
function partitionRow(stream: StreamStatus, param: string, partition: PartitionStatus): Fragment {
  const tone = partition.lastError ? 'warn' : partition.deletionHold ? 'warn' : !partition.lastRun.mode ? 'idle' : 'ok';
  const text = partition.lastError ? 'last run failed' : partition.deletionHold ? 'tombstones held' : partition.inProgress ? 'waiting to resume' : !partition.lastRun.mode ? 'not run yet' : 'ok';
  return html`<tr class="partition" data-stream="${stream.stream}">
<th scope="row">${param}=${partition.partition}</th>
<td data-label="State"><span class="state ${tone}">${text}</span></td>
<td data-label="Records" class="num">${partition.records}</td>
<td data-label="Tombstoned" class="num wide">${partition.tombstoned}</td>
<td data-label="Cursor" class="wide">${time(partition.cursor)}</td>
<td data-label="Lag" class="lag">${partition.lagSeconds === null ? '-' : duration(partition.lagSeconds)}</td>
<td data-label="Last success" class="wide">${time(partition.lastRun.succeededAt)}</td>
<td data-label="Last run">${lastRun(partition.lastRun, partition.lastError)}</td>
<td data-label="Quarantined" class="num wide"></td>
<td data-label="Last error" class="error-text">${errorText(partition.lastError)}</td>
</tr>`;
}

/**
 * The "Last run" cell: the counts of the last finished run, a failed one's own (`failed after 3
 * pages, ...`: the pages it read before it failed); a run still going (or stopped) has none of its own yet.
 */
function lastRun(run: StreamStatus['lastRun'], lastError: string | null): string {
  if (!run.mode) return '-';
  if (run.state === 'running') return `${run.mode}: in progress since ${time(run.startedAt)}`;
  if (run.state === 'unfinished') return `${run.mode}: stopped before its end (started ${time(run.startedAt)}; the next run resumes it)`;
  const figures = (unit: string) => `${count(run.requests ?? 0, unit)}, ${count(run.records ?? 0, 'record')}, ${count(run.changes ?? 0, 'change')}`;
  // A failed run counts the pages it read (its failing request read none).
  if (lastError) return `${run.mode}: failed after ${figures('page')}; ended ${time(run.finishedAt)}`;
  return `${run.mode}: ${figures('request')}; ended ${time(run.finishedAt)}`;
}

/** The remarks `status` prints under its table, for the streams they concern. */
function streamNotes(streams: readonly StreamStatus[]): Fragment {
  const notes: string[] = [];
  for (const s of streams) {
    if (s.lastScan?.outcome === 'incomplete') {
      notes.push(`${s.stream}: the last scan was incomplete (${s.lastScan.reason}): ${s.lastScan.distinctIds} distinct records listed of a total of ${s.lastScan.total}; no record was counted missing and the cursor stayed`);
    }
    if (s.lastScan?.missesWithheld) notes.push(`${s.stream}: ${withheldText(s.lastScan)}`);
    if (s.deletionHold) {
      const hold = s.deletionHold;
      notes.push(
        `${s.stream}: ${hold.count} tombstones HELD since ${time(hold.since)}: the last complete scan no longer listed ${hold.count} of ${hold.live} live records, more than sync.massDeletionShare (${hold.share}); nothing was tombstoned. If the API really deleted them: bizops-sync backfill --stream ${s.stream} --confirm-deletions`,
      );
    }
    if (s.skipped) notes.push(`${s.stream}: skipped by syncs: ${s.skipped}`);
    if (s.unlistedRecords) notes.push(`${s.stream}: the list held ${s.unlistedRecords.records} record(s) the incremental syncs had not listed (found ${time(s.unlistedRecords.at)}); the next sync is a complete scan`);
    if (s.recordClockLagSeconds > 0) notes.push(`${s.stream}: record timestamps lag the cursor's clock by ${s.recordClockLagSeconds} s; incremental syncs widen their overlap by it`);
    if (s.undeclaredFields.length > 0) {
      notes.push(`${s.stream}: fields the spec does not show (kept in raw, compared like any other): ${s.undeclaredFields.map((f) => `${f.field} (since ${time(f.firstSeenAt)}, e.g. ${f.exampleRecordId})`).join(', ')}`);
    }
    if (s.rejected > 0) notes.push(`${s.stream}: ${count(s.rejected, 'record')} quarantined in rejected_records (they failed the schema)`);
    if (s.inProgress) notes.push(`${s.stream}: an unfinished ${s.inProgress.reason} (${s.inProgress.mode}) stands at offset ${s.inProgress.offset} of ${s.inProgress.total ?? '?'}; the next run resumes it`);
  }
  return notes.length === 0 ? html`` : html`<ul class="notes">${notes.map((note) => html`<li>${note}</li>`)}</ul>`;
}

function recentRunsTable(connection: ConnectionSnapshot): Fragment {
  const runs: FinishedRun[] = Object.values(connection.recentRuns)
    .flat()
    .sort((a, b) => b.finishedAt.localeCompare(a.finishedAt));
  if (runs.length === 0) return html`<p class="meta">No run finished since the daemon started.</p>`;
  return scrolling(html`<table class="runs cards">
<caption>Recent runs (this daemon, latest ${runs.length})</caption>
<thead><tr><th scope="col">Stream</th><th scope="col">Finished</th><th scope="col">Run</th><th scope="col">Outcome</th><th scope="col">Requests</th><th scope="col">Records</th><th scope="col">Changes</th><th scope="col">Took</th><th scope="col">Error</th></tr></thead>
<tbody>
${runs.map(
    (run) => html`<tr>
<th scope="row">${run.stream}</th>
<td data-label="Finished">${time(run.finishedAt)}</td>
<td data-label="Run">${run.reason} (${run.mode})${run.resumed ? ', resumed' : ''}</td>
<td data-label="Outcome"><span class="state ${run.status === 'succeeded' ? 'ok' : run.status === 'failed' ? 'bad' : 'warn'}">${run.status}</span></td>
<td data-label="Requests" class="num">${run.pages}</td>
<td data-label="Records" class="num">${run.records}</td>
<td data-label="Changes" class="num">${run.changes}</td>
<td data-label="Took">${duration(run.durationMs / 1000)}</td>
<td data-label="Error" class="error-text">${errorText(run.error)}</td>
</tr>`,
  )}
</tbody>
</table>`);
}

/** The endpoint's state in a few words, and its CSS class. */
function endpointState(endpoint: WebhookEndpointListing, now: Date): { text: string; tone: 'ok' | 'warn' | 'bad' | 'idle' } {
  if (!endpoint.registered) return { text: 'not registered yet', tone: 'idle' };
  if (!endpoint.enabled) return { text: `disabled: ${endpoint.disabledReason ?? endpoint.disabledKind ?? 'no reason kept'}`, tone: 'bad' };
  if (endpoint.failingSince) {
    const paused = endpoint.pausedUntil !== null && endpoint.pausedUntil > now.toISOString();
    return { text: `failing since ${shortTime(endpoint.failingSince, now)}, ${paused ? `paused until ${shortTime(endpoint.pausedUntil, now)}` : 'retrying'}`, tone: 'bad' };
  }
  if (!endpoint.configured) return { text: 'no longer configured', tone: 'idle' };
  return { text: 'delivering', tone: 'ok' };
}

/** `HTTP 500`, or `no answer`. */
function answer(status: number | null): string {
  return status === null ? 'no answer' : `HTTP ${status}`;
}

/** The webhook endpoints' table, or the sinks' (docs/sinks.md: the same delivery state, their kind beside the URL). */
function webhooksSection(connection: ConnectionSnapshot, view: ConsoleView, family: 'webhooks' | 'sinks' = 'webhooks'): Fragment {
  const targets = family === 'webhooks' ? connection.webhooks : (connection.sinks ?? []);
  if (targets.length === 0) return family === 'webhooks' ? html`<p class="meta">No webhook endpoint is configured.</p>` : html``;
  return html`${scrolling(html`<table class="webhooks cards">
<caption>${family === 'webhooks' ? 'Webhook endpoints' : 'Sinks'}</caption>
<thead><tr><th scope="col">${family === 'webhooks' ? 'Endpoint' : 'Sink'}</th><th scope="col" class="wide">URL</th><th scope="col">State</th><th scope="col">Lag</th><th scope="col">Failures in a row</th><th scope="col" class="wide">Given up</th><th scope="col" class="wide">Held back</th><th scope="col" class="wide">Delivered</th><th scope="col">Last attempt</th><th scope="col" class="wide">Next attempt</th><th scope="col">Last error</th>${view.mayAct ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
<tbody>
${targets.map((endpoint) => {
    const state = endpointState(endpoint, view.now);
    const lagPoints = connection.history?.endpoints[endpoint.name] ?? [];
    return html`<tr id="endpoint-${connection.name}-${endpoint.name}">
<th scope="row">${endpoint.name}</th>
<td data-label="URL" class="url wide">${family === 'sinks' ? `${endpoint.kind} ` : ''}${endpoint.url}</td>
<td data-label="State"><span class="state ${state.tone}">${state.text}</span></td>
<td data-label="Lag" class="lag">${count(endpoint.lagEvents, 'event')}${endpoint.lagEvents > 0 ? `, ${duration(endpoint.lagSeconds)}` : ''} ${linePlot(lagPoints, `${endpoint.name} delivery lag`, lagWords)}</td>
<td data-label="Failures in a row" class="num${endpoint.consecutiveFailures > 0 ? ' bad' : ''}">${endpoint.consecutiveFailures}</td>
<td data-label="Given up" class="num wide">${endpoint.failedEvents}</td>
<td data-label="Held back" class="num wide">${endpoint.heldEvents}</td>
<td data-label="Delivered" class="num wide">${endpoint.deliveredCount}</td>
<td data-label="Last attempt">${endpoint.lastAttemptAt ? `${answer(endpoint.lastStatus)} at ${time(endpoint.lastAttemptAt)}` : '-'}</td>
<td data-label="Next attempt" class="wide">${time(endpoint.nextAttemptAt)}</td>
<td data-label="Last error" class="error-text">${errorText(endpoint.lastError)}</td>
${view.mayAct ? html`<td data-label="Actions" class="actions">${endpointActions(connection.name, endpoint, view.csrfToken ?? '')}</td>` : ''}
</tr>`;
  })}
</tbody>
</table>`)}
${targets.filter((endpoint) => endpoint.recentAttempts.length > 0).map((endpoint) => attemptsTable(endpoint.name, endpoint.recentAttempts))}`;
}

/** Enable (when disabled), retry now (when paused) and replay from a seq, each a form carrying the session's CSRF token. */
function endpointActions(connection: string, endpoint: WebhookEndpointListing, csrfToken: string): Fragment {
  if (!endpoint.registered) return html``;
  const hidden = html`<input type="hidden" name="csrf" value="${csrfToken}"><input type="hidden" name="connection" value="${connection}"><input type="hidden" name="endpoint" value="${endpoint.name}">`;
  return html`${!endpoint.enabled
    ? html`<form method="post" action="${CONSOLE_PATHS.enable}">${hidden}<button type="submit">Enable ${endpoint.name}</button></form>`
    : ''}${endpoint.enabled && endpoint.pausedUntil !== null
    ? html`<form method="post" action="${CONSOLE_PATHS.retry}">${hidden}<button type="submit">Retry ${endpoint.name} now</button></form>`
    : ''}
<form method="post" action="${CONSOLE_PATHS.replay}" class="replay">${hidden}<label>Re-send events after seq <input type="number" name="since" min="0" max="${endpoint.deliveredSeq ?? 0}" required></label><button type="submit">Replay ${endpoint.name}</button></form>`;
}

function attemptsTable(endpoint: string, attempts: readonly WebhookAttempt[]): Fragment {
  return scrolling(html`<table class="attempts cards">
<caption>Recent attempts of ${endpoint}</caption>
<thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Seq</th><th scope="col">Attempt</th><th scope="col">Outcome</th><th scope="col">Answer</th><th scope="col">Latency</th><th scope="col">Error</th></tr></thead>
<tbody>
${attempts.map(
    (attempt) => html`<tr>
<td data-label="When">${time(attempt.attemptedAt)}</td>
<td data-label="Event">${attempt.type} <code>${attempt.eventId}</code></td>
<td data-label="Seq" class="num">${attempt.seq ?? '-'}</td>
<td data-label="Attempt" class="num">${attempt.attempt}</td>
<td data-label="Outcome"><span class="state ${attempt.outcome === 'delivered' ? 'ok' : 'bad'}">${attempt.outcome}</span></td>
<td data-label="Answer">${answer(attempt.status)}</td>
<td data-label="Latency">${Math.round(attempt.latencyMs)} ms</td>
<td data-label="Error" class="error-text">${errorText(attempt.error)}</td>
</tr>`,
  )}
</tbody>
</table>`);
}

/** The named consumers of the changelog over HTTP (docs/mirror.md "Named consumers"); nothing when there are none. */
function consumersTable(consumers: readonly ConsumerListing[]): Fragment {
  if (consumers.length === 0) return html``;
  return scrolling(html`<table class="consumers cards">
<caption>Changelog consumers</caption>
<thead><tr><th scope="col">Consumer</th><th scope="col">At seq</th><th scope="col">Lag</th><th scope="col">Last read</th><th scope="col">Last acknowledged</th></tr></thead>
<tbody>
${consumers.map(
    (consumer) => html`<tr>
<th scope="row">${consumer.name}</th>
<td data-label="At seq" class="num">${consumer.cursor}</td>
<td data-label="Lag">${count(consumer.lagEvents, 'event')}${consumer.lagEvents > 0 ? `, ${duration(consumer.lagSeconds)}` : ''}</td>
<td data-label="Last read">${time(consumer.lastReadAt)}</td>
<td data-label="Last acknowledged">${time(consumer.lastAckAt)}</td>
</tr>`,
  )}
</tbody>
</table>`);
}

function writesSection(connection: string, writes: Record<string, number>, needingReview: readonly WriteNeedingReview[], failed: readonly FailedWrite[]): Fragment {
  return html`${scrolling(html`<table class="writes">
<caption>Writes by status</caption>
<thead><tr>${WRITE_STATUSES.map((status) => html`<th scope="col">${status.replace('_', ' ')}</th>`)}</tr></thead>
<tbody><tr>${WRITE_STATUSES.map((status) => html`<td class="num${(status === 'needs_review' || status === 'failed') && (writes[status] ?? 0) > 0 ? ' bad' : ''}">${writes[status] ?? 0}</td>`)}</tr></tbody>
</table>`)}
${needingReview.length === 0
    ? html`<p class="meta">No write needs review.</p>`
    : scrolling(html`<table class="review cards" id="writes-${connection}-needs_review">
<caption>Writes needing review${(writes.needs_review ?? 0) > needingReview.length ? ` (latest ${needingReview.length} of ${writes.needs_review})` : ''}</caption>
<thead><tr><th scope="col">Write</th><th scope="col">Kind</th><th scope="col">Parked at</th><th scope="col">Why</th><th scope="col">Error</th></tr></thead>
<tbody>
${needingReview.map(
    (write) => html`<tr>
<th scope="row"><code>${write.id}</code></th>
<td data-label="Kind">${write.kind}</td>
<td data-label="Parked at">${time(write.updatedAt)}</td>
<td data-label="Why">${write.outcome ?? ''}</td>
<td data-label="Error" class="error-text">${errorText(write.error)}</td>
</tr>`,
  )}
</tbody>
</table>`)}
${failed.length === 0
    ? ''
    : scrolling(html`<table class="failed-writes cards" id="writes-${connection}-failed">
<caption>Failed writes${(writes.failed ?? 0) > failed.length ? ` (latest ${failed.length} of ${writes.failed})` : ''}</caption>
<thead><tr><th scope="col">Write</th><th scope="col">Kind</th><th scope="col">Failed at</th><th scope="col">Answer</th><th scope="col">Error</th></tr></thead>
<tbody>
${failed.map(
    (write) => html`<tr>
<th scope="row"><code>${write.id}</code></th>
<td data-label="Kind">${write.kind}</td>
<td data-label="Failed at">${time(write.finishedAt)}</td>
<td data-label="Answer">${write.httpStatus === null ? '-' : `HTTP ${write.httpStatus}`}</td>
<td data-label="Error" class="error-text">${errorText(write.error)}</td>
</tr>`,
  )}
</tbody>
</table>`)}
${needingReview.length + failed.length > 0 ? html`<p class="hint"><code>bizops-sync write ID</code> shows a write whole; docs/writes.md says how to settle one.</p>` : ''}`;
}

function leasesTable(connection: ConnectionSnapshot, leases: readonly LeaseState[], waiting: MirrorReport['waiting']): Fragment {
  if (leases.length === 0) return html`<p class="meta">No lease taken yet.</p>`;
  // A stream a one-off run waits for (--wait): the daemon yields it (docs/operations.md "A one-off run beside the daemon (--wait)").
  const waiterOf = new Map<string, string>(waiting.map((wait) => [`stream:${wait.stream}`, wait.waiter ?? '?'] as const));
  return scrolling(html`<table class="leases cards">
<caption>Leases</caption>
<thead><tr><th scope="col">Lease</th><th scope="col">Held by</th><th scope="col">Fence</th><th scope="col">Until</th><th scope="col">State</th></tr></thead>
<tbody>
${leases.map((lease) => {
    const mine = connection.heldLeases.includes(lease.name);
    const waiter = waiterOf.get(lease.name);
    const state = waiter !== undefined ? `yielded to a waiting one-off run (${waiter})` : lease.free ? 'free' : mine ? 'held by this daemon' : 'held by another process';
    return html`<tr>
<th scope="row">${lease.name}</th>
<td data-label="Held by">${lease.free ? '-' : (lease.holder ?? '-')}</td>
<td data-label="Fence" class="num">${lease.fence}</td>
<td data-label="Until">${lease.free ? '-' : time(lease.expiresAt)}</td>
<td data-label="State"><span class="state ${waiter !== undefined || lease.free ? 'idle' : mine ? 'ok' : 'warn'}">${state}</span></td>
</tr>`;
  })}
</tbody>
</table>`);
}

/** Why the last complete scan counted no record missing (`ScanOutcome.missesWithheld`), in words. */
function withheldText(scan: NonNullable<StreamStatus['lastScan']>): string {
  return scan.missesWithheld === 'unnamed-items'
    ? `the last complete scan listed ${scan.unnamed ?? 0} item(s) without an id (quarantined), so it counted no record missing: nothing is tombstoned while the list serves records it does not name`
    : `the last complete scan listed ${scan.distinctIds} distinct records, more than the list's total of ${scan.total}: the total is wrong, so it counted no record missing (nothing is tombstoned)`;
}
