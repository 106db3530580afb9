/**
 * The OpenAPI document of the daemon's port (docs/operations.md "The HTTP API"): a real daemon on the
 * simulator, with both keys and the write queue, serves `GET /openapi.json`; the document is valid
 * OpenAPI 3.1 (an OpenAPI validator from npm), lists exactly the routes the server mounted (each
 * method and path, both ways), equals docs/openapi.json, and the daemon's real answers match the
 * schemas it declares for them (the seam between the declarations and the handlers).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { startDaemon, type RunningDaemon } from '../../jobs/daemon.ts';
import { silentLogger } from '../../src/logging/index.ts';
import { simulator, tempDir, testConfig, waitFor, type TempDir } from '../helpers.ts';

const READ_KEY = 'read-key-openapi-0123456789';
const WRITE_KEY = 'write-key-openapi-0123456789';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

type OpenApi = { openapi: string; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: object }> }> }>>; components: object };

let sim: RunningSimulator;
let dir: TempDir;
let daemon: RunningDaemon;
let redisPrefix: string;
let document: OpenApi;

beforeAll(async () => {
  sim = await simulator({ size: { transactions: 5, deals: 3, onboardings: 2 } });
  dir = tempDir();
  redisPrefix = `test:openapi:${randomUUID()}`;
  const config = testConfig(sim, dir.file('mirror.db'), { http: { port: 0, readApiKey: READ_KEY, writeApiKey: WRITE_KEY }, sync: { schedule: '0 0 0 1 1 *', reconcileSchedule: '0 0 0 1 1 *' } });
  daemon = await startDaemon(config, { logger: silentLogger, processMetrics: false, redisKeys: { budgetPrefix: `${redisPrefix}:rate`, queuePrefix: redisPrefix, queueName: 'writes' } });
  const response = await fetch(`${daemon.url}/openapi.json`);
  expect(response.status).toBe(200);
  document = (await response.json()) as OpenApi;
}, 60_000);

afterAll(async () => {
  await daemon?.stop();
  await sim?.close();
  dir?.remove();
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  for await (const keys of redis.scanStream({ match: `${redisPrefix}*`, count: 500 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

/** A validator of one documented answer's body (its `$ref`s into the document's components). */
function answerValidator(path: string, method: string, status: number) {
  const content = document.paths[path]?.[method]?.responses[String(status)]?.content;
  const schema = content && Object.values(content)[0]?.schema;
  if (!schema) throw new Error(`no schema documented for ${method.toUpperCase()} ${path} ${status}`);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema(JSON.parse(JSON.stringify({ $id: 'https://bizops-sync.invalid/openapi.json', components: document.components })));
  return ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://bizops-sync.invalid/openapi.json#/components/')));
}

/** Asserts that `body`, answered with `status` to `method path`, is what the document declares. */
function expectDocumented(path: string, method: string, status: number, body: unknown): void {
  const validate = answerValidator(path, method, status);
  expect(validate(body), `${method.toUpperCase()} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
}

describe('GET /openapi.json', { timeout: 60_000 }, () => {
  it('is valid OpenAPI 3.1, equals docs/openapi.json, and lists exactly the routes the server mounted', async () => {
    const validator = new Validator();
    const result = await validator.validate(document as unknown as Record<string, unknown>);
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(`${JSON.stringify(document, null, 2)}\n`).toBe(readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8'));

    const documented = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    const mounted = daemon.routes().map((route) => `${route.method} ${route.path}`);
    // The health routes, the changelog and consumers (bare and per connection), the schemas, the writes, the console.
    expect(mounted).toContain('POST /connections/{connection}/consumers/{name}/ack');
    expect(mounted).toContain('GET /console.json');
    expect([...mounted].sort()).toEqual([...documented].sort());
    expect(new Set(mounted).size).toBe(mounted.length);
  });

  it('describes what the daemon answers: pages, consumers, writes, readiness, refusals', async () => {
    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const response = await fetch(`${daemon.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    await waitFor(async () => ((await call('GET', '/changes?after=0', READ_KEY)).body.events as unknown[]).length > 0, 'the backfill in the changelog', 30_000);
    const page = await call('GET', '/changes?after=0&limit=3', READ_KEY);
    expectDocumented('/changes', 'get', 200, page.body);
    const bad = await call('GET', '/changes?after=0&limit=0', READ_KEY);
    expect(bad.status).toBe(400);
    expectDocumented('/changes', 'get', 400, bad.body);
    const created = await call('PUT', '/connections/default/consumers/erp', READ_KEY, { after: 0 });
    expect(created.status).toBe(201);
    expectDocumented('/connections/{connection}/consumers/{name}', 'put', 201, created.body);
    expectDocumented('/consumers/{name}/changes', 'get', 200, (await call('GET', '/consumers/erp/changes?limit=2', READ_KEY)).body);
    expectDocumented('/consumers/{name}/ack', 'post', 200, (await call('POST', '/consumers/erp/ack', READ_KEY, { seq: 1 })).body);
    expectDocumented('/consumers/{name}', 'get', 200, (await call('GET', '/consumers/erp', READ_KEY)).body);
    expectDocumented('/consumers', 'get', 200, (await call('GET', '/consumers', READ_KEY)).body);
    const write = await call('POST', '/writes', WRITE_KEY, { kind: 'deal.close', payload: { dealId: 'deal_openapi', status: 'WON' } });
    expect(write.status).toBe(202);
    expectDocumented('/writes', 'post', 202, write.body);
    const shown = await call('GET', `/writes/${(write.body.write as { id: string }).id}`, WRITE_KEY);
    expectDocumented('/writes/{id}', 'get', 200, shown.body);
    const refused = await call('POST', '/writes', WRITE_KEY, { kind: 'deal.close', payload: { status: 'WON' } });
    expect(refused.status).toBe(400);
    expectDocumented('/writes', 'post', 400, refused.body);
    const ready = await fetch(`${daemon.url}/readyz`);
    expectDocumented('/readyz', 'get', ready.status, await ready.json());
    expectDocumented('/healthz', 'get', 200, await (await fetch(`${daemon.url}/healthz`)).json());
    // A documented answer the body does not match fails (the check is not vacuous).
    expect(answerValidator('/changes', 'get', 200)({ events: 'none' })).toBe(false);
  });
});
