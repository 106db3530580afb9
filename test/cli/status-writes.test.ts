/**
 * `status` names the writes needing review (the newest first), from the report the console shows
 * too (src/status/): what a person must look at, without a query of their own.
 */
import { afterEach, expect, it } from 'vitest';
import { openMirror } from '../../src/mirror/database.ts';
import { sqliteConnection } from '../../src/mirror/sql/sqlite.ts';
import { readMirrorReport } from '../../src/status/mirror-status.ts';
import { WriteStore } from '../../src/writes/write-store.ts';
import { runCli, tempDir, type TempDir } from '../helpers.ts';

let dir: TempDir | undefined;
afterEach(() => {
  dir?.remove();
  dir = undefined;
});

it('status lists the writes needing review by id, the latest first, and counts the rest', { timeout: 60_000 }, async () => {
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

  const report = await readMirrorReport(connection, { needsReviewLimit: 1 });
  expect(report.writes).toEqual({ failed: 1, needs_review: 2 });
  expect(report.writesNeedingReview).toEqual([expect.objectContaining({ id: 'wr_second', kind: 'email.send', outcome: 'the response was lost; not sent again' })]);
  await connection.close();

  const status = await runCli(['status', '--db', dir.file('mirror.db')], { PATH: process.env.PATH, HOME: process.env.HOME });
  expect(status.code, status.stderr).toBe(0);
  expect(status.stdout).toContain('writes: 1 failed, 2 needs_review');
  expect(status.stdout).toContain('writes needing review: wr_second, wr_first (bizops-sync write ID shows why)');
  const json = JSON.parse((await runCli(['status', '--json', '--db', dir.file('mirror.db')], { PATH: process.env.PATH, HOME: process.env.HOME })).stdout) as { writesNeedingReview: { id: string }[] };
  expect(json.writesNeedingReview.map((write) => write.id)).toEqual(['wr_second', 'wr_first']);
});
