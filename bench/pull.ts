/**
 * Benchmark: the pull API (`GET /changes?after=SEQ&limit=L`, docs/mirror.md "Reading over HTTP")
 * against a plain HTTP server doing the same work, and against the HTTP floor.
 *
 * A mirror of N created transaction events (bench/changelog.ts `buildMirror`, default 100,000,
 * `BENCH_PULL_EVENTS`), opened as the daemon opens it (a `nonBlocking` connection); the daemon's
 * HTTP server (`startDaemonHttpServer`) with the daemon's route table (jobs/daemon-routes.ts
 * `daemonRouteTable`: every route it mounts for one connection, the changelog's behind a read key)
 * on it, in this process. A
 * first pass reads every page of each size through it and keeps each answer's body. Two baselines:
 *   - the plain server (bench/plain-pull-server.ts): `node:http` and better-sqlite3 on the same
 *     file, the same key check, page query, per-event encoding and bytes, written by hand; its
 *     pages are checked byte for byte against the kept bodies. The goal is against it;
 *   - the HTTP floor: a `node:http` server answering each request with the kept body (nothing read
 *     nor encoded): what serving the bytes alone costs, for scale.
 * Then rounds of: a reader paging through the whole changelog (one request at a time, keep-alive,
 * each body parsed as a consumer would) from the three at once, page by page: each page asked of
 * each server in turn, in every order of the three by turns, so that a burst of load on a shared
 * machine falls on all three alike. The reader, the servers and the mirror share
 * this process: the CPU time (`process.cpuUsage`) of each request is the server's plus the
 * reader's, the reader's the same in all three; a server's pass is the sum over its requests.
 *
 * Figures per page size (100, the default, and 1000): events per CPU second of the project's server
 * over the plain server's (goal >= 0.95) and over the floor's, and each one's events per CPU second;
 * min / median / max of `BENCH_PULL_RUNS` rounds (default 3); `BENCH_PULL_SIZES` (default
 * `100,1000`) the page sizes. Run alone: `node bench/pull.ts` (prints JSON).
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { daemonRouteTable } from '../jobs/daemon-routes.ts';
import { startDaemonHttpServer } from '../src/daemon/http-server.ts';
import { openMirror } from '../src/mirror/database.ts';
import { sqliteConnection } from '../src/mirror/sql/sqlite.ts';
import { ChangeSignal } from '../src/notify/pull/change-signal.ts';
import { buildMirror } from './changelog.ts';
import { startPlainPullServer } from './plain-pull-server.ts';
import { machineLoad, repeat, spread } from './runs.ts';

const READ_KEY = 'bench-read-key-0123456789abcdef';
const SIZES = (process.env.BENCH_PULL_SIZES ?? '100,1000').split(',').map(Number);

/** Pages through the whole changelog at `base` with `limit`; the events read and the CPU time the pass took, ms. */
async function readAll(base: string, limit: number, agent: Agent, keep?: Map<number, string>, expect?: Map<number, string>): Promise<{ events: number; cpuMs: number }> {
  const before = process.cpuUsage();
  let after = 0;
  let events = 0;
  for (;;) {
    const answer = await request(`${base}/changes?after=${after}&limit=${limit}`, { dispatcher: agent, headers: { authorization: `Bearer ${READ_KEY}` } });
    const text = await answer.body.text();
    if (answer.statusCode !== 200) throw new Error(`GET /changes answered ${answer.statusCode}: ${text.slice(0, 200)}`);
    keep?.set(after, text);
    if (expect && expect.get(after) !== text) throw new Error(`the plain server's page after ${after} is not the pull API's, byte for byte: the baseline is not fair`);
    const page = JSON.parse(text) as { events: unknown[]; next: number };
    if (page.events.length === 0) break;
    events += page.events.length;
    after = page.next;
  }
  const used = process.cpuUsage(before);
  return { events, cpuMs: (used.user + used.system) / 1000 };
}

/** Asks `base` for the page after `after`; the number of events it holds (the body parsed as a consumer would). */
async function readPage(base: string, after: number, limit: number, agent: Agent): Promise<number> {
  const answer = await request(`${base}/changes?after=${after}&limit=${limit}`, { dispatcher: agent, headers: { authorization: `Bearer ${READ_KEY}` } });
  const text = await answer.body.text();
  if (answer.statusCode !== 200) throw new Error(`GET /changes answered ${answer.statusCode}: ${text.slice(0, 200)}`);
  return (JSON.parse(text) as { events: unknown[] }).events.length;
}

/** Every order of `0 .. n-1`. */
function permutations(n: number): number[][] {
  if (n === 0) return [[]];
  return permutations(n - 1).flatMap((order) => Array.from({ length: n }, (_, at) => [...order.slice(0, at), n - 1, ...order.slice(at)]));
}

/**
 * One round: every page (`afters`, the `after` of each, the empty last one included) asked of each
 * of `bases` in turn, in every order of them by turns (the page's and `round`'s), so that each
 * server goes first as often as the others and follows each other as often (work one leaves to
 * the event loop after its answer, counted in the next request's time, falls on each alike); per
 * base, the events read and the CPU time of its requests, ms.
 */
async function readInterleaved(bases: readonly string[], afters: readonly number[], limit: number, agent: Agent, round: number): Promise<{ events: number; cpuMs: number }[]> {
  const passes = bases.map(() => ({ events: 0, cpuMs: 0 }));
  const orders = permutations(bases.length);
  for (let page = 0; page < afters.length; page += 1) {
    for (const which of orders[(page + round) % orders.length]!) {
      const before = process.cpuUsage();
      const events = await readPage(bases[which]!, afters[page]!, limit, agent);
      const used = process.cpuUsage(before);
      passes[which]!.events += events;
      passes[which]!.cpuMs += (used.user + used.system) / 1000;
    }
  }
  return passes;
}

/** The HTTP floor: a server answering `/changes?after=A` with the kept body for A (the same bytes and content type), reading nothing. */
async function plainServer(bodies: Map<number, string>): Promise<{ url: string; server: Server }> {
  const buffers = new Map([...bodies].map(([after, text]) => [after, Buffer.from(text)]));
  const server = createServer((req, res) => {
    const after = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('after'));
    const body = buffers.get(after);
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length), 'cache-control': 'no-store' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, server };
}

export async function run(): Promise<Record<string, number | string>> {
  const n = Number(process.env.BENCH_PULL_EVENTS ?? 100_000);
  const runs = Number(process.env.BENCH_PULL_RUNS ?? 3);
  const loadAtStart = machineLoad();
  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-pull-'));
  const path = join(dir, 'mirror.db');
  await buildMirror(path, n);
  const connection = sqliteConnection(openMirror(path), { nonBlocking: true });
  const table = daemonRouteTable([{ name: 'bench', changes: { executor: connection, signal: new ChangeSignal() }, writes: null }], {
    readKey: READ_KEY,
    writeKey: undefined,
    console: { readKey: READ_KEY, writeKey: undefined, connections: [], secrets: [] },
  });
  const project = await startDaemonHttpServer({ host: '127.0.0.1', port: 0, readiness: async () => ({ ready: true, reason: 'bench', status: 200, checkedAt: null }), metrics: async () => ({ contentType: 'text/plain', body: '' }), routes: table });
  const agent = new Agent({ connections: 1, pipelining: 1 });
  const figures: Record<string, number | string> = { events: n };
  try {
    for (const limit of SIZES) {
      const bodies = new Map<number, string>();
      await readAll(project.url, limit, agent, bodies);
      const plain = await startPlainPullServer(path, READ_KEY);
      const floor = await plainServer(bodies);
      try {
        // Both baselines warmed alike before the measured rounds (the first pass above warmed the
        // project's); the plain server's pages are checked byte for byte against the project's.
        await readAll(plain.url, limit, agent, undefined, bodies);
        await readAll(floor.url, limit, agent);
        const afters = [...bodies.keys()];
        const rounds = await repeat(runs, async (round) => {
          const [ours, plainPass, floorPass] = await readInterleaved([project.url, plain.url, floor.url], afters, limit, agent, round);
          if (ours!.events !== n || plainPass!.events !== n || floorPass!.events !== n) throw new Error(`a pass read ${ours!.events}, ${plainPass!.events}, ${floorPass!.events} events, not ${n}`);
          return { ours: ours!, plain: plainPass!, floor: floorPass! };
        });
        const rate = (pass: { events: number; cpuMs: number }) => pass.events / (pass.cpuMs / 1000);
        figures[`limit=${limit}: pull API / plain server reading the mirror, events per CPU s (goal >= 0.95)`] = spread(rounds.map((r) => rate(r.ours) / rate(r.plain)));
        figures[`limit=${limit}: pull API / HTTP floor (kept bytes, nothing read)`] = spread(rounds.map((r) => rate(r.ours) / rate(r.floor)));
        figures[`limit=${limit}: events per CPU s (pull API; plain server; HTTP floor)`] = `${spread(rounds.map((r) => rate(r.ours)), 0)}; ${spread(rounds.map((r) => rate(r.plain)), 0)}; ${spread(rounds.map((r) => rate(r.floor)), 0)}`;
      } finally {
        await plain.close();
        await new Promise((resolve) => floor.server.close(resolve));
      }
    }
  } finally {
    await agent.close();
    await project.close();
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
  figures.machine = `${loadAtStart} at start, ${machineLoad()} at end`;
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
