/**
 * What `status` says of the daemons serving a mirror when none answers (src/status/daemon-parts.ts),
 * on both back ends: no daemon recorded (one line, naming the configured address that did not answer
 * either); a recorded daemon that does not answer (its parts as it last wrote them, with their age,
 * and a warning in the verdict); another process answering at a recorded or configured address (never
 * taken for the daemon). The live case, a real daemon answering, is test/daemon/locked-start.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { statusText } from '../../cli/commands/status.ts';
import { readStatus } from '../../jobs/status.ts';
import { DaemonRecord } from '../../src/daemon/daemon-record.ts';
import type { PartStatus } from '../../src/daemon/part-supervisor.ts';
import { openMirrorConnection } from '../../src/mirror/open.ts';
import type { SqlConnection } from '../../src/mirror/sql/executor.ts';
import { tempDir, testMirrorLocation, type TempDir } from '../helpers.ts';
import { freePort } from '../free-port.ts';

let dir: TempDir | undefined;
let connection: SqlConnection | undefined;
let server: Server | undefined;
afterEach(async () => {
  await connection?.close();
  if (server) await new Promise((resolve) => server!.close(resolve));
  dir?.remove();
  dir = connection = server = undefined;
});

/** A mirror in place (migrated), its location and a connection to it. */
async function mirror(): Promise<string> {
  dir = tempDir();
  const location = testMirrorLocation(dir.file('mirror.db'));
  connection = await openMirrorConnection(location);
  return location;
}

/** An address where nothing listens (test/free-port.ts). */
async function closedUrl(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}

/** Another process on a port: answers `/readyz` with `body`. */
async function answering(body: unknown): Promise<string> {
  server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const RETRYING: PartStatus = { part: 'leases', state: 'retrying', required: true, since: '2026-01-01T00:00:00.000Z', error: 'stream:deals: the mirror file is locked by another process', failures: 4 };
const RUNNING: PartStatus = { part: 'scheduler', state: 'running', required: true, since: '2026-01-01T00:00:00.000Z' };

it('says in one line that no daemon is recorded, and that none answers at the configured address', async () => {
  const location = await mirror();
  const configured = await closedUrl();
  const status = await readStatus(location, { daemonUrl: configured });
  expect(status.daemons).toEqual({ daemons: [], none: `no daemon recorded in the mirror, and nothing listens at ${configured} (http.host/http.port): no daemon is running for it` });
  // No daemon is not a verdict of its own (one-off syncs need none).
  expect(status.verdict).toMatchObject({ ok: true });
  const lines = (await statusText(status)).split('\n');
  expect(lines.filter((line) => line.startsWith('daemon'))).toEqual([`daemon: ${status.daemons.none}`]);
  // Without a configured address (http.port 0), the rows alone.
  expect((await readStatus(location)).daemons).toEqual({ daemons: [], none: 'no daemon recorded in the mirror (none running, or none has written to it yet)' });
});

it('shows a recorded daemon that does not answer with the parts it last wrote and their age, and warns in the verdict', async () => {
  const location = await mirror();
  const url = await closedUrl();
  const record = new DaemonRecord({ executor: connection!, instance: 'host-a:4242:0badf00d', connection: 'default', url, startedAt: '2026-01-01T00:00:00.000Z', parts: () => [RETRYING, RUNNING], intervalMs: 60_000 });
  expect(await record.write()).toBe(true);
  const status = await readStatus(location);
  expect(status.daemons.none).toBeNull();
  expect(status.daemons.daemons).toEqual([
    {
      instance: 'host-a:4242:0badf00d',
      connection: 'default',
      url,
      pid: process.pid,
      hostname: expect.any(String),
      startedAt: '2026-01-01T00:00:00.000Z',
      source: 'stored',
      seenAt: expect.any(String),
      error: 'did not answer (ECONNREFUSED)',
      parts: [RETRYING, RUNNING],
    },
  ]);
  // Stored states are not counted as parts down (they may be old): the silence is the warning.
  expect(status.verdict).toMatchObject({ ok: false, text: '1 recorded daemon not answering', parts: [{ tone: 'warn', target: { kind: 'daemon' } }] });
  const text = await statusText(status);
  expect(text).toMatch(new RegExp(`daemon: pid ${process.pid} on \\S+, ${url}, up since 2026-01-01T00:00:00.000Z: did not answer \\(ECONNREFUSED\\); its parts as it last wrote them, \\d+ s ago \\(\\S+\\):\\n`));
  expect(text).toMatch(/\n {2}leases +retrying +2026-01-01T00:00:00.000Z +4 failure\(s\): stream:deals: the mirror file is locked by another process\n/);
  // Its stop deletes its row.
  await record.stop();
  expect((await readStatus(location)).daemons.daemons).toEqual([]);
});

it('never takes another process at a recorded or configured address for the daemon', async () => {
  const location = await mirror();
  // A daemon of another mirror (another instance, another mirror key) answers where this one was recorded.
  const other = await answering({ ready: true, reason: 'ok', status: 200, checkedAt: null, parts: { leases: RUNNING }, daemon: { instance: 'host-b:1:00000000', pid: 1, startedAt: '2026-01-01T00:00:00.000Z', mirrors: { default: '0123456789abcdef' } } });
  await new DaemonRecord({ executor: connection!, instance: 'host-a:4242:0badf00d', connection: 'default', url: other, startedAt: '2026-01-01T00:00:00.000Z', parts: () => [RETRYING], intervalMs: 60_000 }).write();
  const recorded = await readStatus(location);
  expect(recorded.daemons.daemons).toMatchObject([{ source: 'stored', error: `another process answers at ${other} (daemon host-b:1:00000000)`, parts: [RETRYING] }]);
  // With no row, the configured address counts only when it serves this mirror.
  await connection!.run('DELETE FROM daemons');
  const configured = await readStatus(location, { daemonUrl: other });
  expect(configured.daemons).toEqual({ daemons: [], none: `no daemon recorded in the mirror; the daemon answering at ${other} (http.host/http.port) serves another mirror` });
});
