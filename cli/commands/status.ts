/**
 * `bizops-sync status [--json] [--details]`: the verdict line first, then per stream (and partition)
 * rows, cursor, last run and last error (short; `--details` prints them whole), the endpoints and
 * writes needing a look. Loads its job (SQLite, the mirror's stores) when it runs.
 */
import type { Command } from 'commander';
import type { DaemonParts, MirrorStatus, StreamStatus } from '../../jobs/status.ts';
import type { ShortError } from '../../src/status/index.ts';
import { MirrorMissingError } from '../../jobs/mirror-errors.ts';
import { mirrorPaths } from '../../src/config/index.ts';
import { mirrorPath } from '../shared.ts';

export function registerStatusCommand(program: Command): void {
  program
    .command('status')
    .description("show the daemon's parts (live from the daemon, or as it last wrote them), each stream (records mirrored, cursor, last run, last error, any run waiting to resume) and the writes by status; every connection when several are configured")
    .option('--json', 'print JSON instead of a table (keyed by connection when several are shown)')
    .option('--details', 'print each error whole under the table (the table shows it short: HTTP status, request, the start of the message)')
    .option('--db <path>', 'the mirror: a file, or a postgres:// URL (default: the connection\'s dbPath: BIZOPS_DB, the config file, or ./data/mirror.db)')
    .option('--connection <name>', 'only this configured connection (default: every one)')
    .action(async (options: { json?: boolean; details?: boolean; db?: string; connection?: string }) => {
      const { paths } = mirrorPaths();
      const [{ readStatus: readMirror, configuredDaemonUrl }, { shortError }] = await Promise.all([import('../../jobs/status.ts'), import('../../src/status/index.ts')]);
      // A daemon that cannot write the mirror (its file locked) is not recorded there: the configured address is asked then.
      const daemonUrl = configuredDaemonUrl();
      const readStatus = (dbPath: string) => readMirror(dbPath, { daemonUrl });
      const formatStatus = (status: MirrorStatus) => formatStatusText(status, { shortError, details: options.details === true });
      if (options.db !== undefined || options.connection !== undefined || paths.length === 1) {
        const status = await readStatus(mirrorPath(options.db, options.connection));
        process.stdout.write(options.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
        return;
      }
      // Several connections: each one's status, read one after another (each its own file).
      // A connection whose mirror does not exist yet is shown as such (exit 1), the others still are.
      const statuses: { connection: string; status: MirrorStatus | { error: string } }[] = [];
      for (const { connection, dbPath } of paths) {
        try {
          statuses.push({ connection, status: await readStatus(dbPath) });
        } catch (error) {
          if (!(error instanceof MirrorMissingError)) throw error;
          process.exitCode = 1;
          statuses.push({ connection, status: { error: error.message } });
        }
      }
      if (options.json) {
        process.stdout.write(`${JSON.stringify(Object.fromEntries(statuses.map(({ connection, status }) => [connection, status])), null, 2)}\n`);
        return;
      }
      const section = (status: MirrorStatus | { error: string }) => ('error' in status ? `${status.error}\n` : formatStatus(status));
      process.stdout.write(statuses.map(({ connection, status }) => `== connection ${connection} ==\n${section(status)}`).join('\n'));
    });
}

/**
 * The "last run" cell: `backfill/complete: 12 req, 1,100 rec, 3 chg` for a finished run (`FAILED after
 * 2 req, ...` for a failed one: its own figures); a run still
 * going (or stopped before its end) has no counts of its own yet, so it says so instead of showing
 * the previous run's or zeros.
 */
function describeLastRun(lastRun: StreamStatus['lastRun'], lastError: string | null): string {
  if (!lastRun.mode) return '-';
  if (lastRun.state === 'running') return `${lastRun.mode}: in progress since ${lastRun.startedAt}`;
  if (lastRun.state === 'unfinished') return `${lastRun.mode}: stopped before its end (started ${lastRun.startedAt}; the next run resumes it)`;
  // A failed run's own figures (what it did before it failed), said as such.
  return `${lastRun.mode}: ${lastError ? 'FAILED after ' : ''}${lastRun.requests ?? 0} req, ${lastRun.records ?? 0} rec, ${lastRun.changes ?? 0} chg`;
}

/** How errors are shown: short in the table (`shortError`), whole below it with `details`. */
interface ErrorDisplay {
  shortError: (line: string) => ShortError;
  details: boolean;
}

/** Rows of cells as fixed-width lines, the header first (the last column unpadded). */
function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const format = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [format(header), ...rows.map(format)];
}

/**
 * The text `bizops-sync status` prints for one mirror (`readStatus`'s answer): the verdict, the table,
 * then the warnings; errors short unless `options.details` (`--details`).
 */
export async function statusText(status: MirrorStatus, options: { details?: boolean } = {}): Promise<string> {
  const { shortError } = await import('../../src/status/index.ts');
  return formatStatusText(status, { shortError, details: options.details === true });
}

/** A readable table of the status, led by its verdict. */
function formatStatusText(status: MirrorStatus, errors: ErrorDisplay): string {
  const short = (line: string | null) => (line === null ? '-' : errors.shortError(line).short);
  const lines = [
    `${status.verdict.ok ? 'ok' : 'NEEDS A LOOK'}: ${status.verdict.text}`,
    `mirror: ${status.database} (changelog at seq ${status.changelogSeq}${status.oldestSeq > 1 ? `, kept from seq ${status.oldestSeq}` : ''})`,
  ];
  lines.push(...daemonLines(status.daemons, new Date()));
  if (status.quickCheck !== 'ok') {
    lines.push(
      status.backend === 'postgres'
        ? `WARNING: the mirror's schema is incomplete (${status.quickCheck}); run \`bizops-sync sync\` (or start the daemon) to create what is missing`
        : `WARNING: the mirror is damaged (PRAGMA quick_check: ${status.quickCheck}); restore it from a backup, or move it away and run \`bizops-sync backfill\``,
    );
  }
  lines.push('');
  const header = ['stream', 'records', 'tombstoned', 'cursor', 'last success', 'last run', 'last error'];
  // A partitioned stream's partitions follow it, one row each: `  locationId=loc_1`.
  const rows = status.streams.flatMap((s) => [
    [s.stream + (s.supported ? '' : ' (unsupported)'), String(s.records), String(s.tombstoned), s.cursor ?? '-', s.lastRun.succeededAt ?? '-', describeLastRun(s.lastRun, s.lastError), short(s.lastError)],
    ...(s.partitions?.list ?? []).map((p) => [
      `  ${s.partitions!.param}=${p.partition}`,
      String(p.records),
      String(p.tombstoned),
      p.cursor ?? '-',
      p.lastRun.succeededAt ?? '-',
      describeLastRun(p.lastRun, p.lastError),
      short(p.lastError),
    ]),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const format = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  lines.push(format(header), ...rows.map(format));
  if (status.unsupported.length > 0) {
    lines.push('', `unsupported streams: ${status.unsupported.join(', ')} (their list answered 404; records arrive from write responses only; asked again by the daemon at its start, by a sync every sync.unsupportedProbeSeconds, by a backfill at once)`);
  }
  for (const s of status.streams) {
    if (s.lastScan?.outcome === 'incomplete') {
      lines.push(
        '',
        `${s.stream}: the last scan was INCOMPLETE (${s.lastScan.reason}): ${s.lastScan.distinctIds} distinct records listed of a total of ${s.lastScan.total}; no record was counted missing and the cursor stayed`,
      );
    }
    if (s.lastScan?.missesWithheld) lines.push('', `WARNING: ${s.stream}: ${withheldText(s.lastScan)}`);
    if (s.deletionHold) {
      const hold = s.deletionHold;
      lines.push(
        '',
        `WARNING: ${s.stream}: ${hold.count} tombstones HELD since ${hold.since}: the last complete scan no longer listed ${hold.count} of ${hold.live} live records, more than sync.massDeletionShare (${hold.share}); nothing was tombstoned. If the API really deleted them: bizops-sync backfill --stream ${s.stream} --confirm-deletions`,
      );
    }
    if (s.condition.condition === 'failing' || s.condition.condition === 'stale') {
      lines.push('', `WARNING: ${s.stream}: ${s.condition.condition.toUpperCase()} since ${s.condition.since ?? '?'} (${s.condition.failedRuns} failed run(s) in a row; last success ${s.lastRun.succeededAt ?? 'never'})`);
    }
    if (s.skipped) lines.push('', `${s.stream}: skipped by syncs: ${s.skipped}`);
    if (s.unlistedRecords) {
      lines.push('', `WARNING: ${s.stream}: the list held ${s.unlistedRecords.records} record(s) the incremental syncs had not listed (found ${s.unlistedRecords.at}): the records' clock lags by more than they allowed for; the next sync is a complete scan (docs/sync.md "Record clock")`);
    }
    if (s.recordClockLagSeconds > 0) {
      lines.push('', `WARNING: ${s.stream}: record timestamps lag the cursor's clock by ${s.recordClockLagSeconds} s; incremental syncs widen their overlap by it (the server's clocks disagree: docs/sync.md "Record clock")`);
    }
    if (s.undeclaredFields.length > 0) {
      lines.push('', `${s.stream}: fields the spec does not show (kept in raw, compared like any other): ${s.undeclaredFields.map((f) => `${f.field} (since ${f.firstSeenAt}, e.g. ${f.exampleRecordId})`).join(', ')}`);
    }
    if (s.rejected > 0) lines.push('', `${s.stream}: ${s.rejected} record(s) quarantined in rejected_records (they failed the schema; see docs/operations.md "Quarantined records")`);
    if (s.inProgress) {
      lines.push('', `${s.stream}: an unfinished ${s.inProgress.reason} (${s.inProgress.mode}) stands at offset ${s.inProgress.offset} of ${s.inProgress.total ?? '?'}; the next run resumes it`);
    }
    if (s.partitions?.sources) lines.push('', `${s.stream}: partitions: ${s.partitions.sources.describe}`);
    for (const p of s.partitions?.list ?? []) {
      const name = `${s.stream} ${s.partitions!.param}=${p.partition}`;
      if (p.lastScan?.outcome === 'incomplete') lines.push('', `${name}: the last scan was INCOMPLETE (${p.lastScan.reason}): ${p.lastScan.distinctIds} distinct records listed of a total of ${p.lastScan.total}; no record was counted missing and the cursor stayed`);
      if (p.lastScan?.missesWithheld) lines.push('', `WARNING: ${name}: ${withheldText(p.lastScan)}`);
      if (p.deletionHold) lines.push('', `WARNING: ${name}: ${p.deletionHold.count} tombstones HELD since ${p.deletionHold.since} (more than sync.massDeletionShare of its ${p.deletionHold.live} live records); if the API really deleted them: bizops-sync backfill --stream ${s.stream} --confirm-deletions`);
      if (p.condition && (p.condition.condition === 'failing' || p.condition.condition === 'stale')) {
        lines.push('', `WARNING: ${name}: ${p.condition.condition.toUpperCase()} since ${p.condition.since ?? '?'} (${p.condition.failedRuns} failed run(s) in a row; last success ${p.lastRun.succeededAt ?? 'never'})`);
      }
      if (p.rejected) lines.push('', `${name}: ${p.rejected} record(s) quarantined in rejected_records (see docs/operations.md "Quarantined records")`);
      if (p.inProgress) lines.push('', `${name}: an unfinished ${p.inProgress.reason} (${p.inProgress.mode}) stands at offset ${p.inProgress.offset} of ${p.inProgress.total ?? '?'}; the next run resumes it`);
    }
  }
  if (errors.details) {
    const whole = status.streams.flatMap((s) => [
      ...(s.lastError ? [`  ${s.stream}: ${s.lastError}`] : []),
      ...(s.partitions?.list ?? []).filter((p) => p.lastError).map((p) => `  ${s.stream} ${s.partitions!.param}=${p.partition}: ${p.lastError}`),
    ]);
    if (whole.length > 0) lines.push('', 'errors:', ...whole);
  }
  const sinks = status.endpoints.filter((endpoint) => endpoint.kind !== 'webhook');
  if (sinks.length > 0) {
    lines.push('', ...table(['sink', 'kind', 'cursor', 'lag', 'state'], sinks.map((sink) => [
      sink.name,
      sink.kind,
      String(sink.deliveredSeq),
      `${Math.max(0, status.changelogSeq - sink.deliveredSeq)} events`,
      !sink.enabled ? 'disabled' : sink.failingSince ? `failing since ${sink.failingSince}` : 'publishing',
    ])));
  }
  for (const endpoint of status.endpoints) {
    const what = endpoint.kind === 'webhook' ? 'webhook endpoint' : `${endpoint.kind} sink`;
    const commands = endpoint.kind === 'webhook' ? 'webhooks' : 'sinks';
    if (!endpoint.enabled) lines.push('', `WARNING: ${what} ${endpoint.name}: DISABLED (${commands} list says why; ${commands} enable ${endpoint.name} re-enables it)`);
    else if (endpoint.failingSince) {
      const next = endpoint.nextAttemptAt && endpoint.nextAttemptAt > new Date().toISOString() ? `, paused until ${endpoint.nextAttemptAt} (${commands} retry ${endpoint.name} ends the pause)` : ', retrying';
      const answer = endpoint.kind === 'webhook' ? ` (last answer ${endpoint.lastStatus === null ? 'none' : `HTTP ${endpoint.lastStatus}`})` : '';
      lines.push('', `WARNING: ${what} ${endpoint.name}: failing since ${endpoint.failingSince}${next}${answer}`);
    }
  }
  if (status.consumers.length > 0) {
    lines.push(
      '',
      `consumers: ${status.consumers.map((consumer) => `${consumer.name} at seq ${consumer.cursor} (${consumer.lagEvents} events / ${Math.round(consumer.lagSeconds)} s behind, last read ${consumer.lastReadAt ?? 'never'})`).join('; ')}`,
    );
  }
  const held = status.leases.filter((lease) => !lease.free);
  if (status.waiting.length > 0) {
    lines.push('', `yielded to a waiting one-off run (--wait): ${status.waiting.map((wait) => `${wait.stream} (waiter ${wait.waiter}, request live until ${wait.until})`).join('; ')}`);
  }
  if (held.length > 0) lines.push('', `leases: ${held.map((lease) => `${lease.name} held by ${lease.holder} (fence ${lease.fence}, until ${lease.expiresAt})`).join('; ')}`);
  const writes = Object.entries(status.writes);
  lines.push('', `writes: ${writes.length ? writes.map(([state, count]) => `${count} ${state}`).join(', ') : 'none'}`);
  if (status.writes.needs_review) {
    const listed = status.writesNeedingReview.map((write) => write.id);
    const more = status.writes.needs_review - listed.length;
    lines.push(`  writes needing review: ${listed.join(', ')}${more > 0 ? ` and ${more} more` : ''} (bizops-sync write ID shows why)`);
  }
  if (status.failedWrites.length > 0) {
    const more = (status.writes.failed ?? 0) - status.failedWrites.length;
    lines.push(`  failed writes${more > 0 ? ` (latest ${status.failedWrites.length} of ${status.writes.failed})` : ''}:`);
    for (const write of status.failedWrites) {
      const error = write.error === null ? '-' : errors.details ? write.error : errors.shortError(write.error).short;
      lines.push(`    ${write.id}  ${write.kind}  ${write.finishedAt ?? '-'}  ${write.httpStatus === null ? '' : `HTTP ${write.httpStatus}: `}${error}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** How long ago `iso` was, in words (`12 s`, `3 min`, `2 h`, `4 d`). */
function ageOf(iso: string, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

/**
 * The daemon lines of `status`: per daemon serving the mirror, who it is and whether it answered,
 * then one row per part (state, since when, failures and the short error, or what it waits for);
 * or the one line saying no daemon was found.
 */
function daemonLines(report: MirrorStatus['daemons'], now: Date): string[] {
  if (report.daemons.length === 0) return [`daemon: ${report.none ?? 'none found'}`];
  return report.daemons.flatMap((daemon: DaemonParts) => {
    const who = [daemon.pid === null ? null : `pid ${daemon.pid}${daemon.hostname ? ` on ${daemon.hostname}` : ''}`, daemon.url, daemon.startedAt ? `up since ${daemon.startedAt}` : null, daemon.connection === 'default' ? null : `connection ${daemon.connection}`]
      .filter(Boolean)
      .join(', ');
    const head =
      daemon.source === 'live'
        ? `daemon: ${who}: its parts now:`
        : `daemon: ${who}: ${daemon.error ?? 'did not answer'}; its parts as it last wrote them, ${daemon.seenAt ? `${ageOf(daemon.seenAt, now)} ago (${daemon.seenAt})` : 'at an unknown time'}:`;
    const rows = daemon.parts.map((part) => [
      `  ${part.part}`,
      part.state + (part.required ? '' : ' (not required)'),
      part.since,
      part.state === 'retrying' ? `${part.failures ?? '?'} failure(s): ${part.error ?? '?'}` : (part.reason ?? ''),
    ]);
    return [head, ...(rows.length > 0 ? table(['  part', 'state', 'since', 'error or reason'], rows).map((line) => line.trimEnd()) : ['  (no parts recorded)'])];
  });
}

/** Why the last complete scan counted no record missing (`ScanOutcome.missesWithheld`), in words. */
function withheldText(scan: NonNullable<StreamStatus['lastScan']>): string {
  return scan.missesWithheld === 'unnamed-items'
    ? `the last complete scan listed ${scan.unnamed ?? 0} item(s) without an id (quarantined), so it counted no record missing: nothing is tombstoned while the list serves records it does not name`
    : `the last complete scan listed ${scan.distinctIds} distinct records, more than the list's total of ${scan.total}: the total is wrong, so it counted no record missing (nothing is tombstoned)`;
}
