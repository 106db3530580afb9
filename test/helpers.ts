/**
 * Shared test wiring: a simulator over real HTTP, a real mirror (a SQLite file in a temp dir, or a
 * fresh PostgreSQL schema under BIZOPS_TEST_MIRROR=postgres: test/test-mirror.ts), and a context
 * built the way the CLI builds it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Writable } from 'node:stream';
import { afterEach, expect } from 'vitest';
import { configSchema, type Config } from '../src/config/schema.ts';
import { openContext, type Context, type ContextOptions } from '../jobs/context.ts';
import { readStatus } from '../jobs/status.ts';
import { statusText } from '../cli/commands/status.ts';
import { createLogger, silentLogger, type Logger } from '../src/logging/logger.ts';
import { STREAM_LIST, STREAM_NAMES, streamByName, STREAMS, type RegisteredStream, type StreamName } from '../src/streams/definitions.ts';
import { RecordClockProbe } from '../src/sync/record-clock-probe.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '@bizops-sync/simulator';
import { testMirrorLocation } from './test-mirror.ts';
import { changelogProblems } from './event-validation.ts';

export { TEST_MIRROR_BACKEND, testMirrorLocation } from './test-mirror.ts';

/**
 * Polls `probe` every `intervalMs` until it returns a truthy value, and returns that value. Errors
 * the probe throws count as "not yet" (the last one is named on timeout).
 * @throws Error `timed out after <timeoutMs> ms waiting for <what>` after `timeoutMs`
 */
export async function waitFor<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 10_000, intervalMs = 20): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** The `bizops-sync` command of this checkout. */
export const BIN = new URL('../bin/bizops-sync.js', import.meta.url).pathname;

/**
 * The environment of a child process that runs a test fixture's TypeScript directly
 * (`node fixture.ts`): this process's, plus Node's compile cache in a directory of the tests' own,
 * so each fixture start after the first takes the project's stripped sources and compiled code from
 * it (half the CPU of loading them) instead of stripping them again. Not the command's directory
 * (bin/bizops-sync.js enables its own): processes started with other V8 flags reject each other's
 * cached code.
 */
export function fixtureEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), 'bizops-test-fixture-compile-cache'), ...extra };
}

/**
 * What `bizops-sync status` prints for the one mirror at `location` (a file, or a postgres:// URL):
 * the command's own job (`readStatus`) and text (`statusText`), in this process, for tests about what
 * status says rather than about the command line (a CLI start costs 0.3-0.6 s of CPU).
 */
export async function statusOutput(location: string): Promise<string> {
  return statusText(await readStatus(location));
}

/** Runs `bizops-sync ARGS` to completion (async, so a simulator in this process keeps serving). */
export function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += String(chunk)));
    child.stderr.on('data', (chunk) => (stderr += String(chunk)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export interface TempDir {
  path: string;
  file(name: string): string;
  remove(): void;
}

export function tempDir(prefix = 'bizops-test-'): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, file: (name) => join(path, name), remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A simulator with the rate limit off unless the test asks for one. */
export function simulator(options: SimulatorOptions = {}): Promise<RunningSimulator> {
  return startSimulator({ rateLimit: false, ...options });
}

/**
 * Configuration pointing at `sim` with the admin token and the mirror at `dbPath` (a file; under
 * BIZOPS_TEST_MIRROR=postgres the PostgreSQL schema `testMirrorLocation(dbPath)` stands for it).
 */
export function testConfig(sim: RunningSimulator, dbPath: string, overrides: Record<string, unknown> = {}): Config {
  return configSchema.parse({
    baseUrl: sim.url,
    tokens: { default: String(sim.tokens.admin) },
    dbPath: testMirrorLocation(dbPath),
    rateLimit: { perMinute: 100_000, windowMs: 60_000 },
    // The tests' Redis (README "Development"): REDIS_URL when set.
    ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
    ...overrides,
  });
}

/**
 * A context on an in-process rate budget, silent unless a logger is given, with fast client retries
 * (4 retries, 20-200 ms apart) where `options.clientRetry` does not set its own.
 */
export function testContext(config: Config, options: ContextOptions & { logger?: Logger } = {}): Promise<Context> {
  return openContext(config, { logger: options.logger ?? silentLogger, rateBudget: 'local', ...options, clientRetry: { minTimeoutMs: 20, maxTimeoutMs: 200, maxRetries: 4, ...options.clientRetry } });
}

/** A logger whose lines are collected in `lines` (for asserting what reaches the logs). */
export function capturingLogger(secrets: string[] = []): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return { logger: createLogger({ level: 'trace', destination, secrets, pretty: false }), lines };
}

/** Requests the simulator received for a list path (e.g. `/transactions`), excluding admin calls. */
export function listRequests(sim: RunningSimulator, path: string) {
  return sim.requests.filter((r) => r.method === 'GET' && r.path === `/api/public/v1${path}`);
}

/**
 * The list requests one complete scan of `stream` sends when nothing changes meanwhile: per list (one,
 * or one per partition of a partitioned stream: the simulator's `partitionQueries`), one per page of
 * 100, at least one; `max` allows the empty page after a full last one.
 */
export function scanRequests(simulation: RunningSimulator, stream: StreamName): { min: number; max: number; lists: number } {
  const lists = simulation.world.partitionQueries(stream);
  const min = lists.reduce((sum, query) => sum + Math.max(1, Math.ceil(simulation.world.groundTruth(stream, query).length / 100)), 0);
  return { min, max: min + lists.length, lists: lists.length };
}

/**
 * The list requests of one quiet sync of every registered stream (nothing changed upstream, each
 * list under a page): one per list (one per partition of a partitioned stream), and the stream's own
 * record clock probe (a count of its list) per stream that has one (docs/sync.md "Record clock").
 * By path without the API prefix, and their total.
 */
export function quietSyncRequests(simulation: RunningSimulator): { total: number; byPath: Record<string, number> } {
  const byPath: Record<string, number> = {};
  const add = (path: string, count: number) => (byPath[path] = (byPath[path] ?? 0) + count);
  for (const stream of STREAM_LIST as readonly RegisteredStream[]) {
    add(stream.request.path, scanRequests(simulation, stream.name).lists + (RecordClockProbe.probes(stream) ? 1 : 0));
  }
  return { total: Object.values(byPath).reduce((sum, count) => sum + count, 0), byPath };
}

/**
 * Every live mirror row equals the simulator's ground truth, field by field (raw and typed columns).
 * A value strictly equal to its truth (`isDeepStrictEqual`) passes without `expect`; any other goes
 * through `expect(...).toEqual`, which judges it and prints the difference (a few thousand records
 * compare in milliseconds).
 */
export async function expectMirrorEqualsGroundTruth(ctx: Pick<Context, 'connection'>, simulation: RunningSimulator, stream: StreamName): Promise<void> {
  const definition = STREAMS[stream];
  const truth = simulation.world.groundTruth(stream) as Record<string, unknown>[];
  const rows = await ctx.connection.all<Record<string, unknown>>(`SELECT * FROM ${definition.table} WHERE deleted_at IS NULL ORDER BY id`);
  expect(rows.length).toBe(truth.length);
  const byId = new Map(rows.map((row) => [row.id as string, row]));
  const paths = definition.columns.map(({ column, field }) => ({ column, parts: field.split('.') }));
  for (const record of truth) {
    const row = byId.get(record.id as string);
    if (row === undefined) expect(row, `${stream} ${String(record.id)} missing from the mirror`).toBeDefined();
    const raw: unknown = JSON.parse(row!.raw as string);
    if (!isDeepStrictEqual(raw, record)) expect(raw).toEqual(record);
    for (const { column, parts } of paths) {
      const value = parts.reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], record);
      if (value === undefined) continue;
      const expected = typeof value === 'boolean' ? Number(value) : value;
      if (!isDeepStrictEqual(row![column], expected)) expect(row![column], `${stream} ${String(record.id)} column ${column}`).toEqual(expected);
    }
  }
}

/** How many records the simulator lists for `streams` (default: every registered stream) of company A. */
export function groundTruthTotal(simulation: RunningSimulator, streams: readonly StreamName[] = STREAM_NAMES): number {
  return streams.reduce((sum, stream) => sum + simulation.world.groundTruth(stream).length, 0);
}

/** The event type `stream` records for a record new to the mirror (its definition's `classify` with no stored record). */
export function createdEvent(stream: StreamName, record: Record<string, unknown>): string {
  return streamByName(stream).changes.classify(undefined, record, []);
}

export interface SyncFixture {
  sim: RunningSimulator;
  dir: TempDir;
  context: Context;
}

/**
 * Registers cleanup for the calling test file and returns `start`, which starts a simulator, a temp
 * mirror file and a context on them (closed after each test). After each test every change row of
 * its mirrors is validated against its event type's JSON Schema (test/event-validation.ts): the
 * test fails when one does not fit.
 */
export function syncFixtures(): { start(simulatorOptions?: SimulatorOptions, configOverrides?: Record<string, unknown>, contextOptions?: ContextOptions): Promise<SyncFixture> } {
  const open: SyncFixture[] = [];
  afterEach(async () => {
    // Every event the test's mirror holds goes through its type's JSON Schema (docs/events.md).
    const problems: string[] = [];
    for (const fixture of open) {
      let found: string[] = [];
      try {
        found = await changelogProblems(fixture.context.connection);
      } catch {
        // A mirror the test left unreadable (a stopped database, a damaged file): nothing to check.
      }
      problems.push(...found);
    }
    for (const fixture of open.splice(0)) {
      await fixture.context.close();
      await fixture.sim.close();
      fixture.dir.remove();
    }
    if (problems.length > 0) throw new Error(`${problems.length} events fail their JSON Schema (src/notify/event-schemas.ts), e.g.:\n${problems.slice(0, 5).join('\n')}`);
  });
  return {
    async start(simulatorOptions = {}, configOverrides = {}, contextOptions = {}) {
      const sim = await simulator(simulatorOptions);
      const dir = tempDir();
      const context = await testContext(testConfig(sim, dir.file('mirror.db'), configOverrides), contextOptions);
      const fixture = { sim, dir, context };
      open.push(fixture);
      return fixture;
    },
  };
}
