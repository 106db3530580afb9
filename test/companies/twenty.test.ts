/**
 * One deployment process syncs 20 companies at once against one simulator: the
 * real `bizops-sync backfill --all` with a configuration file of 20 connections, each company with
 * its own token, mirror file and rate budget (a few requests per short window, shared in Redis).
 * The same with one `bizops-sync daemon` process of 20 connections (the backfill at start).
 * Asserted: no 429, every company's records mirrored in its own file, and each company's requests
 * as counted by the server equal to its minimum (one per page). No timing is asserted: the wall time
 * against the rate bound is bench/companies.ts's.
 */
import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import { STREAM_NAMES, STREAMS } from '../../src/streams/definitions.ts';
import { cliEnv, parsePrometheusText, sampleValue, spawnDaemon, terminate, type DaemonProcess } from '../daemon/helpers.ts';
import { runCli, tempDir, waitFor, type TempDir } from '../helpers.ts';
import { requireRedis } from '../writes/support.ts';

const COMPANIES = 20;
/** Sizes of the streams named; every other stream keeps its default size for an extra company (company B's). */
const SIZES = { transactions: 150, deals: 30, onboardings: 10, customers: 5 };
/**
 * Requests of a complete scan of each registered stream of extra company `k`: one per page of 100
 * (spec §1 Pagination) of each of its lists (one per partition of a partitioned stream), at least one.
 */
function minimumRequests(k: number): number {
  const world = sim.company(k).world;
  return STREAM_NAMES.reduce(
    (sum, stream) => sum + world.partitionQueries(stream).reduce((lists, query) => lists + Math.max(1, Math.ceil(world.groundTruth(stream, query).length / 100)), 0),
    0,
  );
}

let sim: RunningSimulator;
let dir: TempDir;
let daemon: DaemonProcess | undefined;
beforeEach(async () => {
  await requireRedis();
  sim = await startSimulator({ companies: COMPANIES, extraCompanySizes: SIZES, rateLimit: { limit: 3, windowMs: 1000 } });
  dir = tempDir('bizops-companies-');
});
afterEach(async () => {
  if (daemon) await terminate(daemon);
  daemon = undefined;
  await sim?.close();
  dir?.remove();
});

/** A configuration file of one connection per extra company (`company-<k>`, its own mirror file); `extra` adds top-level keys. */
function configFile(extra: Record<string, unknown> = {}): string {
  const connections = Object.fromEntries(
    sim.companies.map((company) => [`company-${company.k}`, { tokens: { default: company.token }, companyId: company.id, dbPath: dir.file(`company-${company.k}.db`) }]),
  );
  writeFileSync(dir.file('config.json'), JSON.stringify({ baseUrl: sim.url, rateLimit: { perMinute: 3, windowMs: 1000 }, connections, ...extra }));
  return dir.file('config.json');
}

/**
 * Every company: no 429, requests counted by the server = its minimum (plus `startProbes`, the daemon's
 * check of the base URL at start: one `?limit=1` list request per connection), its records all in its own file.
 */
function expectEachCompanyMirroredAtItsMinimum(startProbes = 0): void {
  const counts = sim.requestCounts();
  expect(counts.A!.requests + counts.B!.requests).toBe(0);
  for (const company of sim.companies) {
    expect({ company: company.key, rateLimited: counts[company.key]!.rateLimited, requests: counts[company.key]!.requests }).toEqual({ company: company.key, rateLimited: 0, requests: minimumRequests(company.k) + startProbes });
    const db = new Database(dir.file(`company-${company.k}.db`), { readonly: true });
    try {
      for (const stream of STREAM_NAMES) {
        const mirrored = (db.prepare(`SELECT id FROM ${STREAMS[stream].table} WHERE deleted_at IS NULL ORDER BY id`).all() as { id: string }[]).map((row) => row.id);
        const truth = company.world.groundTruth(stream).map((record) => String((record as { id: string }).id)).sort();
        expect(mirrored, `${company.key} ${stream}`).toEqual(truth);
      }
    } finally {
      db.close();
    }
  }
}

describe('20 companies in one deployment', { timeout: 120_000 }, () => {
  it('backfill --all mirrors every company into its own file with 0 x 429 and each company at its minimum of requests', async () => {
    const result = await runCli(['backfill', '--all', '--no-progress'], cliEnv({ BIZOPS_CONFIG: configFile(), BIZOPS_LOG_LEVEL: 'warn' }));
    expect(result.stderr).not.toMatch(/429|rate.?limited/i);
    expect(result.code).toBe(0);
    // A line per stream, and under a partitioned stream's a line per partition (indented).
    const lines = result.stdout.trim().split('\n').filter((line) => !/^company-\d+: {3}/.test(line));
    expect(lines).toHaveLength(COMPANIES * STREAM_NAMES.length);
    for (const line of lines) expect(line).toMatch(/^company-\d+: \w+: succeeded \(backfill, complete scan\)/);
    expectEachCompanyMirroredAtItsMinimum();
  });

  it('one daemon process backfills the 20 companies at start, the same: 0 x 429, each at its minimum, each in its own file', async () => {
    // Schedules far away: the backfill at start is all that runs, so each company's minimum is known.
    const file = configFile({ sync: { schedule: '0 0 1 1 *', reconcileSchedule: '0 0 1 1 *' }, http: { port: 0 } });
    daemon = spawnDaemon(cliEnv({ BIZOPS_CONFIG: file, BIZOPS_LOG_LEVEL: 'info' }));
    const url = await daemon.url;
    await waitFor(
      async () => {
        const samples = parsePrometheusText(await (await fetch(`${url}/metrics`)).text()).samples;
        return samples.filter((sample) => sample.name === 'bizops_stream_cursor_timestamp_seconds').length === COMPANIES * STREAM_NAMES.length;
      },
      "every company's streams to have a cursor",
      60_000,
      250,
    );
    expectEachCompanyMirroredAtItsMinimum(1);
    const samples = parsePrometheusText(await (await fetch(`${url}/metrics`)).text()).samples;
    for (const company of sim.companies) expect(sampleValue(samples, 'bizops_api_rate_limited_total', { connection: `company-${company.k}` })).toBe(0);
    expect((await terminate(daemon)).code).toBe(0);
  });
});
