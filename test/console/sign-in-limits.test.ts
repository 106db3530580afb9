/**
 * The console's sign-in under a flood (docs/operations.md "Operator console"): sessions capped per
 * key and per address, so that 1,000 sign-ins with the read key never sign out the write-key
 * operator; wrong keys throttled per address and for everyone with a growing pause (a sign-in
 * during a pause is refused unchecked), logged once per burst, while `/readyz`, bearer-key scripts
 * and other addresses go on. The console's routes on the daemon's HTTP server over real HTTP, each
 * request from a chosen loopback address (127.0.0.0/8 all reaches 127.0.0.1); the throttle's clock is
 * the test's, so nothing waits on time.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { consoleRoutes } from '../../src/console/console-routes.ts';
import { RouteTable } from '../../src/http/route-table.ts';
import { addressKey } from '../../src/console/sign-in-throttle.ts';
import { startDaemonHttpServer, type RunningHttpServer } from '../../src/daemon/http-server.ts';
import { ReadinessProbe } from '../../src/daemon/readiness.ts';
import { capturingLogger } from '../helpers.ts';

const READ_KEY = 'read-key-throttle-0123456789';
const WRITE_KEY = 'write-key-throttle-0123456789';

let server: RunningHttpServer;
let clock: number;
let lines: string[];
const agents = new Map<string, Agent>();

beforeEach(async () => {
  clock = Date.parse('2026-03-01T09:00:00Z');
  const captured = capturingLogger();
  lines = captured.lines;
  const readiness = new ReadinessProbe({ check: async () => undefined, cacheMs: 60_000 });
  server = await startDaemonHttpServer({
    host: '127.0.0.1',
    port: 0,
    readiness: () => readiness.current(),
    metrics: async () => ({ contentType: 'text/plain', body: '' }),
    routes: new RouteTable({ readKey: READ_KEY }).mount(consoleRoutes({ readKey: READ_KEY, writeKey: WRITE_KEY, connections: [], secrets: [], logger: captured.logger, now: () => clock })),
  });
});
afterEach(async () => {
  await server.close();
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request to the daemon from the loopback address `from` (kept alive per address). */
function call(from: string, method: string, path: string, options: { form?: Record<string, string>; headers?: Record<string, string> } = {}): Promise<Answer> {
  let agent = agents.get(from);
  if (!agent) agents.set(from, (agent = new Agent({ keepAlive: true, localAddress: from })));
  const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      `${server.url}${path}`,
      { method, agent, headers: { ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }), ...options.headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

/** Signs in from `from`; the session cookie (`name=value`), or the refusal. */
async function signIn(from: string, key: string, writeKey = ''): Promise<{ status: number; cookie?: string; retryAfter?: string; body: string }> {
  const answer = await call(from, 'POST', '/console/sign-in', { form: { key, writeKey } });
  const cookie = answer.headers['set-cookie']?.[0]?.split(';')[0];
  return { status: answer.status, ...(cookie ? { cookie } : {}), ...(answer.headers['retry-after'] ? { retryAfter: String(answer.headers['retry-after']) } : {}), body: answer.body };
}

/** The status `/console.json` answers that session cookie (200 signed in, 401 signed out). */
async function sessionStatus(cookie: string): Promise<number> {
  return (await call('127.0.0.1', 'GET', '/console.json', { headers: { cookie } })).status;
}

/** `/readyz`, and a script's bearer read of `/console.json`, from `from`. */
async function othersGoOn(from: string): Promise<void> {
  expect((await call(from, 'GET', '/readyz')).status).toBe(200);
  expect((await call(from, 'GET', '/console.json', { headers: { authorization: `Bearer ${READ_KEY}` } })).status).toBe(200);
}

const refusedLines = () => lines.filter((line) => line.includes('console sign-in refused'));

describe('addressKey', () => {
  it('counts an IPv4 address as itself (IPv4-mapped too) and an IPv6 address by its /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002::9')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey(undefined)).toBe('unknown');
  });
});

describe('console sessions', () => {
  it('1,000 read-key sign-ins never sign out the write-key operator; sessions are capped per key (500) and per address (20)', async () => {
    const operator = await signIn('127.0.0.1', READ_KEY, WRITE_KEY);
    expect(operator.status).toBe(303);
    const reader = await signIn('127.0.0.2', READ_KEY);
    // The flood: 1,000 read-key sign-ins from 50 addresses, 20 each.
    const flood: string[] = [];
    for (let index = 0; index < 1000; index += 1) flood.push((await signIn(`127.0.1.${index % 50}`, READ_KEY)).cookie!);
    expect(await sessionStatus(operator.cookie!)).toBe(200);
    // Past 500 read-key sessions the read-key ones expiring first went: the earlier reader's, the flood's first half.
    expect(await sessionStatus(reader.cookie!)).toBe(401);
    expect(await sessionStatus(flood[499]!)).toBe(401);
    expect(await sessionStatus(flood[500]!)).toBe(200);
    // One address past 20 sessions drops its own oldest only.
    const own: string[] = [];
    for (let index = 0; index < 21; index += 1) own.push((await signIn('127.0.0.3', READ_KEY)).cookie!);
    expect(await sessionStatus(own[0]!)).toBe(401);
    expect(await sessionStatus(own[1]!)).toBe(200);
    expect(await sessionStatus(flood[999]!)).toBe(200);
    expect(await sessionStatus(operator.cookie!)).toBe(200);
  });
});

describe('wrong keys at the sign-in', () => {
  it('pause an address for longer after each, refused unchecked while paused, logged once per burst; other addresses, /readyz and bearer scripts go on', async () => {
    const guesser = '127.0.2.1';
    for (let guess = 1; guess <= 5; guess += 1) expect((await signIn(guesser, `wrong-key-${guess}-0000000000`)).status).toBe(401);
    // The sixth wrong key pauses the address for 1 s, then 2, 4, 8: even the right key is refused unchecked meanwhile.
    let pause = 1;
    for (let round = 0; round < 4; round += 1, pause *= 2) {
      expect((await signIn(guesser, 'wrong-key-again-000000000')).status).toBe(401);
      const refused = await signIn(guesser, READ_KEY);
      expect({ status: refused.status, retryAfter: refused.retryAfter }).toEqual({ status: 429, retryAfter: String(pause) });
      expect(refused.body).toContain('Too many wrong keys from your address');
      await othersGoOn(guesser);
      expect((await signIn('127.0.2.2', READ_KEY)).status).toBe(303);
      clock += pause * 1000 - 1;
      expect((await signIn(guesser, READ_KEY)).status).toBe(429);
      clock += 1;
    }
    // A wrong write key is a guess too.
    expect((await signIn(guesser, READ_KEY, 'wrong-write-key-0000000000')).status).toBe(401);
    expect((await signIn(guesser, READ_KEY)).retryAfter).toBe(String(pause));
    expect(refusedLines()).toHaveLength(1);
    expect(refusedLines()[0]).toContain('"address":"127.0.2.1"');

    // The right key once the pause ends: the count starts over, and the next burst is logged again.
    clock += pause * 1000;
    expect((await signIn(guesser, READ_KEY)).status).toBe(303);
    for (let guess = 1; guess <= 5; guess += 1) expect((await signIn(guesser, 'wrong-key-later-0000000000')).status).toBe(401);
    expect(refusedLines()).toHaveLength(2);
  });

  it('spread over many addresses, pause everyone after 100, logged once; /readyz and bearer scripts go on', async () => {
    for (let index = 0; index < 100; index += 1) expect((await signIn(`127.0.3.${index % 25}`, `wrong-${index}-00000000000000`)).status).toBe(401);
    expect((await signIn('127.0.3.200', READ_KEY)).status).toBe(303);
    expect((await signIn('127.0.3.201', 'wrong-101-00000000000000')).status).toBe(401);
    const refused = await signIn('127.0.3.202', READ_KEY);
    expect({ status: refused.status, retryAfter: refused.retryAfter }).toEqual({ status: 429, retryAfter: '1' });
    expect(refused.body).toContain('Too many wrong keys from many addresses');
    await othersGoOn('127.0.3.202');
    expect(lines.filter((line) => line.includes('console sign-in paused for everyone'))).toHaveLength(1);
    expect(refusedLines()).toHaveLength(26);
    clock += 1000;
    expect((await signIn('127.0.3.202', READ_KEY)).status).toBe(303);
  });
});
