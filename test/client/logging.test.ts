/**
 * What the client logs: one debug line per request (method, path, status, ms), a warning per retry
 * with its reason, and never the bearer token: not in log lines at the most verbose level, not in
 * thrown error messages, not even when the server echoes the token back.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiClient } from '../../src/client/client.ts';
import { LocalRateBudget } from '../../src/client/local-rate-budget.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { closedPort, sendEnvelope, sendJson, startTestServer, type TestServer } from './test-server.ts';

const TOKEN = 'tok_9f8e7d6c5b4a39281706';
const OTHER_TOKEN = 'tok_employee_1a2b3c4d5e';
let server: TestServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function captureLogs(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  // No `secrets` list: the client itself must keep the token out, not the logger's last-resort scrub.
  return { lines, logger: createLogger({ level: 'trace', destination, pretty: false }) };
}

describe('ApiClient logging', () => {
  it('logs each request and retry without the token, and keeps it out of error messages', async () => {
    server = await startTestServer((request, response, index) => {
      if (request.path.endsWith('/flaky') && index === 0) return sendJson(response, 502, { message: 'Bad gateway' });
      if (request.path.endsWith('/secret-echo')) return sendJson(response, 401, { message: `Invalid token ${TOKEN}`, err: `Bearer ${OTHER_TOKEN} rejected` });
      if (request.path.endsWith('/bad')) return sendEnvelope(response, { amount: 'not a number' });
      return sendEnvelope(response, { ok: true });
    });
    const { lines, logger } = captureLogs();
    const budget = new LocalRateBudget({ limit: 100, windowMs: 1000 });
    const client = new ApiClient({
      baseUrl: server.url,
      tokens: { default: TOKEN, employee: OTHER_TOKEN },
      budget,
      logger,
      retry: { maxRetries: 1, minTimeoutMs: 5, maxTimeoutMs: 10 },
    });
    const errors: unknown[] = [];
    const run = async (promise: Promise<unknown>) => {
      try {
        await promise;
      } catch (error) {
        errors.push(error);
      }
    };
    await run(client.request({ method: 'GET', path: '/flaky', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' }));
    await run(client.request({ method: 'POST', path: '/secret-echo', body: { token: TOKEN }, contentSchema: z.unknown(), priority: 'write', retry: 'none', token: 'employee' }));
    await run(client.request({ method: 'GET', path: '/bad', contentSchema: z.object({ amount: z.int() }), priority: 'backfill', retry: 'safe' }));
    const refusedBudget = new LocalRateBudget({ limit: 100, windowMs: 1000 });
    const refused = new ApiClient({ baseUrl: `http://127.0.0.1:${await closedPort()}`, tokens: { default: TOKEN }, budget: refusedBudget, logger, retry: { maxRetries: 1, minTimeoutMs: 5, maxTimeoutMs: 10 } });
    await run(refused.request({ method: 'GET', path: '/x', contentSchema: z.unknown(), priority: 'incremental', retry: 'safe' }));
    await Promise.all([client.close(), refused.close(), budget.close(), refusedBudget.close()]);

    expect(errors).toHaveLength(3);
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    // Debug line per request with method, path, status and duration.
    expect(records).toContainEqual(expect.objectContaining({ level: 'debug', method: 'GET', path: '/flaky', status: 502, ms: expect.any(Number) }));
    expect(records).toContainEqual(expect.objectContaining({ level: 'debug', method: 'GET', path: '/flaky', status: 200 }));
    expect(records).toContainEqual(expect.objectContaining({ level: 'debug', method: 'POST', path: '/secret-echo', status: 401 }));
    // Warning per retry with the reason.
    expect(records).toContainEqual(expect.objectContaining({ level: 'warn', path: '/flaky', reason: 'HTTP 502' }));
    expect(records).toContainEqual(expect.objectContaining({ level: 'warn', path: '/x', reason: 'ECONNREFUSED' }));

    const everything = [
      ...lines,
      ...errors.flatMap((error) => {
        const withCause = error as Error & { cause?: unknown };
        return [String(error), withCause.message, JSON.stringify(error), String(withCause.cause ?? '')];
      }),
    ].join('\n');
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(OTHER_TOKEN);
    expect(everything).not.toMatch(/authorization/i);
    // A 401 names the refused token by name, never by value; the server's own words, the echoed
    // token masked, stay in the raw body.
    expect(String(errors[0])).toMatch(/^AuthenticationError: the API refused the token "employee" \(HTTP 401 from http:\/\/127\.0\.0\.1:\d+\/api\/public\/v1\/secret-echo\)$/);
    expect((errors[0] as { rawBody?: string }).rawBody).toContain('Invalid token [redacted]');
  });
});

describe('errors in log lines', () => {
  it('an Error under err or error keeps its type, message, stack and cause; a plain object stays as it is', () => {
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk, _encoding, callback) => void (lines.push(String(chunk)), callback()) });
    const logger = createLogger({ destination, pretty: false, level: 'info' });
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    logger.error({ err: new TypeError('bad page', { cause }) }, 'with err');
    logger.error({ error: new RangeError('out of range') }, 'with error');
    logger.warn({ err: { message: 'only a message' } }, 'plain');
    const [withErr, withError, plain] = lines.map((line) => JSON.parse(line) as { err?: Record<string, unknown>; error?: Record<string, unknown> });
    expect(withErr!.err).toMatchObject({ type: 'TypeError', message: 'bad page', cause: { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' } });
    expect(String(withErr!.err!.stack)).toMatch(/^TypeError: bad page\n\s+at /);
    // pino logged an Error under any other key as {}.
    expect(withError!.error).toMatchObject({ type: 'RangeError', message: 'out of range' });
    expect(plain!.err).toEqual({ message: 'only a message' });
    expect(lines.join('')).not.toContain('"type":"Object"');
  });
});
