/**
 * The console's HTML, rendered on the server with hono's `html` tagged template
 * (docs/decisions.md "Operator console"): every interpolated value is escaped unless it is itself
 * a template (nested templates and arrays of them are kept as they are); nothing here marks a
 * string raw. The pages need no JavaScript and load nothing from elsewhere: one stylesheet from the
 * daemon (`/console/console.css`), a `<meta http-equiv="refresh">` for the periodic refresh.
 *
 * What is shown comes from `ConnectionSnapshot`s (console-snapshot.ts: masked already); no secret
 * reaches a template (the sign-in form never echoes what was typed).
 */
import { html } from 'hono/html';
import type { WebhookEndpointListing } from '../notify/delivery/target-admin.ts';
import type { WebhookAttempt } from '../notify/delivery/attempts.ts';
import type { LeaseState } from '../mirror/leases.ts';
import type { ConsumerListing } from '../notify/pull/consumers.ts';
import type { StreamStatus, WriteNeedingReview } from '../status/mirror-status.ts';
import type { ConnectionSnapshot } from './console-snapshot.ts';
import type { FinishedRun } from './recent-runs.ts';

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
${view.connections.map((connection) => connectionSection(connection, view))}
</main>`;
  return String(await layout('bizops-sync console', view.refreshSeconds, body));
}

function connectionSection(connection: ConnectionSnapshot, view: ConsoleView): Fragment {
  const id = `connection-${connection.name}`;
  const report = connection.report;
  return html`<section class="connection" aria-labelledby="${id}">
<h2 id="${id}">Connection ${connection.name}</h2>
${connection.error ? html`<p class="notice error" role="alert">${connection.error}</p>` : ''}
${report
    ? html`<p class="meta">Changelog at seq ${report.changelogSeq}${report.oldestSeq > 1 ? `, kept from seq ${report.oldestSeq}` : ''}.</p>
${streamsTable(connection, report.streams)}
${streamNotes(report.streams)}
${recentRunsTable(connection)}
${webhooksSection(connection, view)}
${consumersTable(report.consumers)}
${writesSection(report.writes, report.writesNeedingReview)}
${leasesTable(connection, report.leases)}`
    : ''}
</section>`;
}

/**
 * A few words for a stream's state, and its CSS class. `failing` and `stale` are the stream's
 * operational condition (the one `stream.failing` / `stream.stale` events and the alert rules
 * follow: `sync.failingAfterRuns` failed runs in a row, no success for its stale interval); one
 * failed run short of that reads `last run failed`.
 */
function streamState(stream: StreamStatus, running: string | undefined): { text: string; tone: 'ok' | 'warn' | 'bad' | 'idle' } {
  if (!stream.supported) return { text: 'unsupported', tone: 'warn' };
  if (running) return { text: `running (${running})`, tone: 'ok' };
  const { condition, failedRuns, since } = stream.condition;
  if (condition === 'failing') return { text: `failing since ${time(since)}: ${count(failedRuns, 'failed run')} in a row`, tone: 'bad' };
  if (condition === 'stale') return { text: `stale: no success since ${time(stream.lastRun.succeededAt)}`, tone: 'bad' };
  if (stream.lastError) return { text: 'last run failed', tone: 'warn' };
  if (stream.deletionHold) return { text: 'tombstones held', tone: 'warn' };
  if (stream.inProgress) return { text: 'waiting to resume', tone: 'warn' };
  if (!stream.lastRun.mode) return { text: 'not run yet', tone: 'idle' };
  return { text: 'ok', tone: 'ok' };
}

function streamsTable(connection: ConnectionSnapshot, streams: readonly StreamStatus[]): Fragment {
  const shown = streams.filter((stream) => connection.streams.includes(stream.stream) || stream.lastRun.mode !== null);
  return html`<table class="streams">
<caption>Streams</caption>
<thead><tr><th scope="col">Stream</th><th scope="col">State</th><th scope="col">Records</th><th scope="col">Tombstoned</th><th scope="col">Cursor</th><th scope="col">Lag</th><th scope="col">Last success</th><th scope="col">Last run</th><th scope="col">Quarantined</th><th scope="col">Last error</th></tr></thead>
<tbody>
${shown.map((stream) => {
    const running = connection.activeRuns.find((run) => run.stream === stream.stream)?.reason;
    const state = streamState(stream, running);
    const run = stream.lastRun;
    return html`<tr>
<th scope="row">${stream.stream}</th>
<td><span class="state ${state.tone}">${state.text}</span></td>
<td class="num">${stream.records}</td>
<td class="num">${stream.tombstoned}</td>
<td>${time(stream.cursor)}</td>
<td>${stream.lagSeconds === null ? '-' : duration(stream.lagSeconds)}</td>
<td>${time(run.succeededAt)}</td>
<td>${lastRun(run)}</td>
<td class="num${stream.rejected > 0 ? ' bad' : ''}">${stream.rejected}</td>
<td class="error-text">${stream.lastError ?? ''}</td>
</tr>`;
  })}
</tbody>
</table>`;
}

/** The "Last run" cell: the counts of a finished run; a run still going (or stopped) has none of its own yet. */
function lastRun(run: StreamStatus['lastRun']): string {
  if (!run.mode) return '-';
  if (run.state === 'running') return `${run.mode}: in progress since ${time(run.startedAt)}`;
  if (run.state === 'unfinished') return `${run.mode}: stopped before its end (started ${time(run.startedAt)}; the next run resumes it)`;
  return `${run.mode}: ${count(run.requests ?? 0, 'request')}, ${count(run.records ?? 0, 'record')}, ${count(run.changes ?? 0, 'change')}; ended ${time(run.finishedAt)}`;
}

/** The remarks `status` prints under its table, for the streams they concern. */
function streamNotes(streams: readonly StreamStatus[]): Fragment {
  const notes: string[] = [];
  for (const s of streams) {
    if (s.lastScan?.outcome === 'incomplete') {
      notes.push(`${s.stream}: the last scan was incomplete (${s.lastScan.reason}): ${s.lastScan.distinctIds} distinct records listed of a total of ${s.lastScan.total}; no record was counted missing and the cursor stayed`);
    }
    if (s.deletionHold) {
      const hold = s.deletionHold;
      notes.push(
        `${s.stream}: ${hold.count} tombstones HELD since ${time(hold.since)}: the last complete scan no longer listed ${hold.count} of ${hold.live} live records, more than sync.massDeletionShare (${hold.share}); nothing was tombstoned. If the API really deleted them: bizops-sync backfill --stream ${s.stream} --confirm-deletions`,
      );
    }
    if (s.skipped) notes.push(`${s.stream}: skipped by syncs: ${s.skipped}`);
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
  return html`<table class="runs">
<caption>Recent runs (this daemon, latest ${runs.length})</caption>
<thead><tr><th scope="col">Stream</th><th scope="col">Finished</th><th scope="col">Run</th><th scope="col">Outcome</th><th scope="col">Requests</th><th scope="col">Records</th><th scope="col">Changes</th><th scope="col">Took</th><th scope="col">Error</th></tr></thead>
<tbody>
${runs.map(
    (run) => html`<tr>
<th scope="row">${run.stream}</th>
<td>${time(run.finishedAt)}</td>
<td>${run.reason} (${run.mode})${run.resumed ? ', resumed' : ''}</td>
<td><span class="state ${run.status === 'succeeded' ? 'ok' : run.status === 'failed' ? 'bad' : 'warn'}">${run.status}</span></td>
<td class="num">${run.pages}</td>
<td class="num">${run.records}</td>
<td class="num">${run.changes}</td>
<td>${duration(run.durationMs / 1000)}</td>
<td class="error-text">${run.error ?? ''}</td>
</tr>`,
  )}
</tbody>
</table>`;
}

/** The endpoint's state in a few words, and its CSS class. */
function endpointState(endpoint: WebhookEndpointListing): { text: string; tone: 'ok' | 'warn' | 'bad' | 'idle' } {
  if (!endpoint.registered) return { text: 'not registered yet', tone: 'idle' };
  if (!endpoint.enabled) return { text: `disabled: ${endpoint.disabledReason ?? endpoint.disabledKind ?? 'no reason kept'}`, tone: 'bad' };
  if (endpoint.failingSince) return { text: `failing since ${time(endpoint.failingSince)}${endpoint.pausedUntil ? `, paused until ${time(endpoint.pausedUntil)}` : ''}`, tone: 'bad' };
  if (!endpoint.configured) return { text: 'no longer configured', tone: 'idle' };
  return { text: 'delivering', tone: 'ok' };
}

/** `HTTP 500`, or `no answer`. */
function answer(status: number | null): string {
  return status === null ? 'no answer' : `HTTP ${status}`;
}

function webhooksSection(connection: ConnectionSnapshot, view: ConsoleView): Fragment {
  if (connection.webhooks.length === 0) return html`<p class="meta">No webhook endpoint is configured.</p>`;
  return html`<table class="webhooks">
<caption>Webhook endpoints</caption>
<thead><tr><th scope="col">Endpoint</th><th scope="col">URL</th><th scope="col">State</th><th scope="col">Lag</th><th scope="col">Failures in a row</th><th scope="col">Given up</th><th scope="col">Held back</th><th scope="col">Delivered</th><th scope="col">Last attempt</th><th scope="col">Next attempt</th><th scope="col">Last error</th>${view.mayAct ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
<tbody>
${connection.webhooks.map((endpoint) => {
    const state = endpointState(endpoint);
    return html`<tr>
<th scope="row">${endpoint.name}</th>
<td class="url">${endpoint.url}</td>
<td><span class="state ${state.tone}">${state.text}</span></td>
<td>${count(endpoint.lagEvents, 'event')}${endpoint.lagEvents > 0 ? `, ${duration(endpoint.lagSeconds)}` : ''}</td>
<td class="num${endpoint.consecutiveFailures > 0 ? ' bad' : ''}">${endpoint.consecutiveFailures}</td>
<td class="num">${endpoint.failedEvents}</td>
<td class="num">${endpoint.heldEvents}</td>
<td class="num">${endpoint.deliveredCount}</td>
<td>${endpoint.lastAttemptAt ? `${answer(endpoint.lastStatus)} at ${time(endpoint.lastAttemptAt)}` : '-'}</td>
<td>${time(endpoint.nextAttemptAt)}</td>
<td class="error-text">${endpoint.lastError ?? ''}</td>
${view.mayAct ? html`<td class="actions">${endpointActions(connection.name, endpoint, view.csrfToken ?? '')}</td>` : ''}
</tr>`;
  })}
</tbody>
</table>
${connection.webhooks.filter((endpoint) => endpoint.recentAttempts.length > 0).map((endpoint) => attemptsTable(endpoint.name, endpoint.recentAttempts))}`;
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
  return html`<table class="attempts">
<caption>Recent attempts of ${endpoint}</caption>
<thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Seq</th><th scope="col">Attempt</th><th scope="col">Outcome</th><th scope="col">Answer</th><th scope="col">Latency</th><th scope="col">Error</th></tr></thead>
<tbody>
${attempts.map(
    (attempt) => html`<tr>
<td>${time(attempt.attemptedAt)}</td>
<td>${attempt.type} <code>${attempt.eventId}</code></td>
<td class="num">${attempt.seq ?? '-'}</td>
<td class="num">${attempt.attempt}</td>
<td><span class="state ${attempt.outcome === 'delivered' ? 'ok' : 'bad'}">${attempt.outcome}</span></td>
<td>${answer(attempt.status)}</td>
<td>${Math.round(attempt.latencyMs)} ms</td>
<td class="error-text">${attempt.error ?? ''}</td>
</tr>`,
  )}
</tbody>
</table>`;
}

/** The named consumers of the changelog over HTTP (docs/mirror.md "Named consumers"); nothing when there are none. */
function consumersTable(consumers: readonly ConsumerListing[]): Fragment {
  if (consumers.length === 0) return html``;
  return html`<table class="consumers">
<caption>Changelog consumers</caption>
<thead><tr><th scope="col">Consumer</th><th scope="col">At seq</th><th scope="col">Lag</th><th scope="col">Last read</th><th scope="col">Last acknowledged</th></tr></thead>
<tbody>
${consumers.map(
    (consumer) => html`<tr>
<th scope="row">${consumer.name}</th>
<td class="num">${consumer.cursor}</td>
<td>${count(consumer.lagEvents, 'event')}${consumer.lagEvents > 0 ? `, ${duration(consumer.lagSeconds)}` : ''}</td>
<td>${time(consumer.lastReadAt)}</td>
<td>${time(consumer.lastAckAt)}</td>
</tr>`,
  )}
</tbody>
</table>`;
}

function writesSection(writes: Record<string, number>, needingReview: readonly WriteNeedingReview[]): Fragment {
  return html`<table class="writes">
<caption>Writes by status</caption>
<thead><tr>${WRITE_STATUSES.map((status) => html`<th scope="col">${status.replace('_', ' ')}</th>`)}</tr></thead>
<tbody><tr>${WRITE_STATUSES.map((status) => html`<td class="num${status === 'needs_review' && (writes[status] ?? 0) > 0 ? ' bad' : ''}">${writes[status] ?? 0}</td>`)}</tr></tbody>
</table>
${needingReview.length === 0
    ? html`<p class="meta">No write needs review.</p>`
    : html`<table class="review">
<caption>Writes needing review${(writes.needs_review ?? 0) > needingReview.length ? ` (latest ${needingReview.length} of ${writes.needs_review})` : ''}</caption>
<thead><tr><th scope="col">Write</th><th scope="col">Kind</th><th scope="col">Parked at</th><th scope="col">Why</th><th scope="col">Error</th></tr></thead>
<tbody>
${needingReview.map(
    (write) => html`<tr>
<th scope="row"><code>${write.id}</code></th>
<td>${write.kind}</td>
<td>${time(write.updatedAt)}</td>
<td>${write.outcome ?? ''}</td>
<td class="error-text">${write.error ?? ''}</td>
</tr>`,
  )}
</tbody>
</table>
<p class="hint"><code>bizops-sync write ID</code> shows a write whole; docs/writes.md says how to settle one.</p>`}`;
}

function leasesTable(connection: ConnectionSnapshot, leases: readonly LeaseState[]): Fragment {
  if (leases.length === 0) return html`<p class="meta">No lease taken yet.</p>`;
  return html`<table class="leases">
<caption>Leases</caption>
<thead><tr><th scope="col">Lease</th><th scope="col">Held by</th><th scope="col">Fence</th><th scope="col">Until</th><th scope="col">State</th></tr></thead>
<tbody>
${leases.map((lease) => {
    const mine = connection.heldLeases.includes(lease.name);
    const state = lease.free ? 'free' : mine ? 'held by this daemon' : 'held by another process';
    return html`<tr>
<th scope="row">${lease.name}</th>
<td>${lease.free ? '-' : (lease.holder ?? '-')}</td>
<td class="num">${lease.fence}</td>
<td>${lease.free ? '-' : time(lease.expiresAt)}</td>
<td><span class="state ${lease.free ? 'idle' : mine ? 'ok' : 'warn'}">${state}</span></td>
</tr>`;
  })}
</tbody>
</table>`;
}
