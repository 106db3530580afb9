/**
 * `status` names the writes needing review (the newest first) and the failed ones with their error,
 * from the report the console shows too (src/status/): what a person must look at, without a query
 * of their own. Its first line is the verdict; an error is short in the table, whole with --details.
 */
import { afterEach, expect, it } from 'vitest';
import { openMirror } from '../../src/mirror/database.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { StreamConditionStore } from '../../src/mirror/stream-condition-store.ts';
import { readMirrorReport } from '../../src/status/mirror-status.ts';
import { WriteStore } from '../../src/writes/write-store.ts';
import { runCli, tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

it('status leads with the verdict, lists the writes needing review by id (the latest first) and the failed ones with their error; errors short unless --details', { timeout: 60_000 }, async () => {
  dir = tempDir();
  const connection = sqliteConnection(openMirror(dir.file('mirror.db')));
  const writes = new WriteStore(connection);
  const park = async (id: string, status: 'needs_review' | 'failed') => {
    await writes.insert({ id, idempotencyKey: `key-${id}`, kind: 'email.send', payload: { subject: id }, actAs: 'default' });
    await writes.finish(id, null, { status, outcome: status === 'failed' ? 'refused' : 'the response was lost; not sent again', error: 'the outcome is unknown' });
  };
  await park('wr_first', 'needs_review');
  await park('wr_refused', 'failed');
  await park('wr_second', 'needs_review');
  await connection.run("UPDATE writes SET updated_at = '2026-01-01T00:00:00.000Z' WHERE id = 'wr_first'");
  // A write refused long ago: listed, but not news for the verdict (24 hours).
  await park('wr_refused_long_ago', 'failed');
  await connection.run("UPDATE writes SET finished_at = '2026-01-01T00:00:00.000Z', updated_at = '2026-01-01T00:00:00.000Z' WHERE id = 'wr_refused_long_ago'");
  // A stream failing after three failed runs; its last run read 2 pages before the third failed.
  const outage = 'HTTP 503: Service unavailable: upstream maintenance (GET /deals?limit=100&offset=200&sortBy=createdAt&sortOrder=asc&updatedAfter=2026-01-01T00:00:00.000Z)';
  const since = new Date(Date.now() - 60_000).toISOString();
  await new MirrorStore(connection).updateSyncState('deals', { last_run_mode: 'sync/incremental', last_run_started_at: since, last_run_finished_at: since, last_run_requests: 2, last_run_records: 200, last_run_changes: 3, last_error: outage });
  await new StreamConditionStore(connection).write('deals', { condition: 'failing', failedRuns: 3, since }, since);

  const report = await readMirrorReport(connection, { needsReviewLimit: 1 });
  expect(report.writes).toEqual({ failed: 2, needs_review: 2 });
  expect(report.recentFailedWrites).toBe(1);
  expect(report.failedWrites.map((write) => write.id)).toEqual(['wr_refused', 'wr_refused_long_ago']);
  expect(report.writesNeedingReview).toEqual([expect.objectContaining({ id: 'wr_second', kind: 'email.send', outcome: 'the response was lost; not sent again' })]);
  await connection.close();

  const status = await runCli(['status', '--db', dir.file('mirror.db')], { PATH: process.env.PATH, HOME: process.env.HOME });
  expect(status.code, status.stderr).toBe(0);
  const lines = status.stdout.split('\n');
  expect(lines[0]).toMatch(/^NEEDS A LOOK: 1 stream failing since \d\d:\d\d UTC, 1 write failed, 2 writes need review$/);
  expect(status.stdout).toContain('writes: 2 failed, 2 needs_review');
  expect(status.stdout).toContain('writes needing review: wr_second, wr_first (bizops-sync write ID shows why)');
  expect(status.stdout).toMatch(/failed writes:\n {4}wr_refused {2}email\.send {2}\S+ {2}the outcome is unknown\n {4}wr_refused_long_ago /);
  // The table: the failed run's own figures; its error short, with the HTTP status and the request.
  const deals = lines.find((line) => line.startsWith('deals '))!;
  expect(deals).toContain('sync/incremental: FAILED after 2 req, 200 rec, 3 chg');
  expect(deals).toMatch(/ HTTP 503 · GET \/deals: Service unavailable: upstream maintenance$/);
  expect(status.stdout).not.toContain('offset=200');
  const details = await runCli(['status', '--details', '--db', dir.file('mirror.db')], { PATH: process.env.PATH, HOME: process.env.HOME });
  expect(details.stdout).toContain(`errors:\n  deals: ${outage}\n`);
  const json = JSON.parse((await runCli(['status', '--json', '--db', dir.file('mirror.db')], { PATH: process.env.PATH, HOME: process.env.HOME })).stdout) as { writesNeedingReview: { id: string }[] };
  expect(json.writesNeedingReview.map((write) => write.id)).toEqual(['wr_second', 'wr_first']);
});
