import { describe, expect, it } from 'vitest';
import {
  ConnectionError,
  InvalidResponseError,
  MalformedResponseError,
  NotFoundError,
  RateLimitError,
  ServerError,
} from '../../src/client/api-errors.ts';
import { isRetryable, parseRetryAfter } from '../../src/client/retry.ts';

const request = { method: 'GET', path: '/transactions' };

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-06-01T12:00:00.000Z');

  it('reads delay-seconds (spec §7)', () => {
    expect(parseRetryAfter('30', now)).toBe(30_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('1.5', now)).toBe(1500);
    expect(parseRetryAfter(['2', '9'], now)).toBe(2000);
  });

  it('reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfter('Sun, 01 Jun 2025 12:00:45 GMT', now)).toBe(45_000);
    expect(parseRetryAfter('Sun, 01 Jun 2025 11:59:00 GMT', now)).toBe(0);
  });

  it('returns undefined for absent or unreadable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});

describe('isRetryable', () => {
  const unsent = new ConnectionError({ message: 'refused', requestSent: false, code: 'ECONNREFUSED', request });
  const sent = new ConnectionError({ message: 'reset', requestSent: true, code: 'ECONNRESET', request });
  const server = new ServerError({ status: 503, message: 'down', request });
  const malformed = new MalformedResponseError({ status: 200, message: 'not JSON', request });
  const invalid = new InvalidResponseError({ status: 200, message: 'bad field', request });
  const notFound = new NotFoundError({ status: 404, message: 'missing', request });
  const limited = new RateLimitError({ status: 429, message: 'slow down', request });

  it("'safe' retries 5xx, any connection error and non-JSON bodies, not schema failures or 4xx", () => {
    expect([unsent, sent, server, malformed, limited].map((e) => isRetryable(e, 'safe'))).toEqual([true, true, true, true, true]);
    expect([invalid, notFound].map((e) => isRetryable(e, 'safe'))).toEqual([false, false]);
  });

  it("'unsent-only' retries only requests that never reached the server, and 429s", () => {
    expect([unsent, limited].map((e) => isRetryable(e, 'unsent-only'))).toEqual([true, true]);
    expect([sent, server, malformed, invalid, notFound].map((e) => isRetryable(e, 'unsent-only'))).toEqual([false, false, false, false, false]);
  });

  it("'none' retries only 429s", () => {
    expect([unsent, sent, server, malformed].map((e) => isRetryable(e, 'none'))).toEqual([false, false, false, false]);
    expect(isRetryable(limited, 'none')).toBe(true);
  });
});
