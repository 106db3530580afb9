/**
 * The soak oracle's check of `bizops-sync changes` (soak/oracle.ts `changesCommandProblems`): the
 * command run as a user runs it over a real mirror holds against the changelog read from it, and a
 * line that is not JSON, an event left out and an event printed differently are each named.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { transactionsStream } from '../../src/streams/definitions.ts';
import { openMirrorReader } from '../../soak/mirror-reader.ts';
import { changesCommandProblems, readChangelog } from '../../soak/oracle.ts';
import { fixtureEnv, runCli } from '../helpers.ts';
import { tempMirror, type TempMirror } from '../notify/helpers.ts';

let mirror: TempMirror;
beforeEach(async () => {
  mirror = await tempMirror();
});
afterEach(() => mirror.cleanup());

it('holds what bizops-sync changes prints against the changelog, and names a line that is not JSON, an event left out and one printed differently', async () => {
  const record = { id: 'txn_1', type: 'INCOME', status: 'PENDING', amount: 100, description: 'caf\u00e9 "quoted"', date: '2026-01-01' };
  const store = new MirrorStore(mirror.connection);
  await store.applyRecords(transactionsStream, [record, { ...record, id: 'txn_2' }]);
  await store.applyRecords(transactionsStream, [{ ...record, status: 'CONFIRMED' }]);
  const reader = await openMirrorReader(mirror.path);
  const changes = await readChangelog(reader);
  await reader.close();
  expect(changes.map((change) => change.type)).toEqual(['transaction.created', 'transaction.created', 'transaction.confirmed']);

  const printed = await runCli(['changes', '--since', '0', '--db', mirror.path], fixtureEnv());
  expect(printed.code).toBe(0);
  expect(changesCommandProblems(printed.stdout, changes)).toEqual([]);

  const lines = printed.stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(3);
  expect(changesCommandProblems(lines.slice(0, 2).join('\n'), changes)).toEqual([expect.stringMatching(/^changes: bizops-sync changes printed 2 events through seq \d+, the changelog holds 3$/)]);
  const altered = [lines[0]!, lines[1]!.replace('caf\u00e9', 'cafe'), lines[2]!];
  expect(changesCommandProblems(altered.join('\n'), changes)).toEqual([expect.stringMatching(/^changes: bizops-sync changes printed .*"cafe.* where the changelog holds .*"caf\u00e9/)]);
  expect(changesCommandProblems([...lines, '{"seq":'].join('\n'), changes)).toEqual([expect.stringMatching(/^changes: line 4 of bizops-sync changes is not JSON/)]);
  // Every line cut short: the first named, all counted, none of the changelog's events printed.
  expect(changesCommandProblems(lines.map((line) => line.slice(0, -1)).join('\n'), changes)).toEqual([
    expect.stringMatching(/^changes: line 1 of bizops-sync changes is not JSON/),
    'changes: 3 lines of bizops-sync changes are not JSON',
    expect.stringMatching(/printed 0 events through seq \d+, the changelog holds 3$/),
  ]);
});
