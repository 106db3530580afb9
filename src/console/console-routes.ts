/**
 * The operator's console on the daemon's HTTP port (docs/operations.md "Operator console"): a web
 * page at `/` showing, per connection, each stream (cursor, last runs, lag, quarantined records,
 * unsupported state), each webhook endpoint (state, lag, failures, recent attempts), the writes by
 * status with those needing review, and the leases; and two actions of the `webhooks` commands as
 * buttons (replay, enable).
 *
 *   GET  /                        the page (401: the sign-in form); `?refresh=N` seconds, 0: none
 *   GET  /console.json            the same data as JSON (scripts)
 *   GET  /console/console.css     the stylesheet
 *   POST /console/sign-in         form: key (the read key), writeKey (optional: the action buttons)
 *   POST /console/sign-out        form: csrf
 *   POST /console/webhooks/replay form: csrf, connection, endpoint, since (`webhooks replay --since`)
 *   POST /console/webhooks/enable form: csrf, connection, endpoint (`webhooks enable`)
 *   POST /console/webhooks/retry  form: csrf, connection, endpoint (`webhooks retry`, `sinks retry`: a paused target's pause ends now)
 *
 * Behind the read key (`http.readApiKey`, shared with the other read routes: read-access.ts): a
 * script sends `Authorization: Bearer <key>`; a browser signs in with a form (POST: the key never
 * travels in a URL, is never logged or shown back) and gets a session cookie (HttpOnly,
 * SameSite=Strict, a random id, expiring, capped per key and per address: console-sessions.ts);
 * wrong keys at the sign-in are throttled per address and for everyone with a growing pause, and
 * logged once per burst (sign-in-throttle.ts). Without a read key the console is
 * off: `consoleRoutes` returns undefined and `/` is the server's 404. The actions need the write key
 * (`http.writeApiKey`) given at sign-in, and each form carries the session's CSRF token; a POST
 * whose `Origin` is another site is refused.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseCookie, stringifySetCookie } from 'cookie';
import { z } from 'zod';
import { sendJson } from '../daemon/read-access.ts';
import { BearerKey } from '../http/bearer.ts';
import { defineRouteSpec, errorResponse, route, type Route, type RouteSpec } from '../http/route.ts';
import { silentLogger, type Logger } from '../logging/logger.ts';
import { maskSecrets } from '../logging/mask.ts';
import { enableWebhookEndpoint, replayWebhooks, retryTargetNow } from '../notify/delivery/target-admin.ts';
import { CONSOLE_PATHS, renderConsole, renderMessage, renderSignIn } from './console-page.ts';
import { ConsoleSessions, secretEquals, type ConsoleSession, type ConsoleSessionsOptions } from './console-sessions.ts';
import { addressKey, SignInThrottle, type SignInThrottleOptions } from './sign-in-throttle.ts';
import { gatherSnapshot, type ConsoleConnection } from './console-snapshot.ts';
import { CONSOLE_CSS } from './console-style.ts';

/** The session cookie's name. */
export const CONSOLE_COOKIE = 'bizops_console';

/** How long a console session lasts after sign-in, seconds (8 hours: a working day). */
export const CONSOLE_SESSION_SECONDS = 8 * 3600;

/** Default seconds between the page's refreshes. */
export const CONSOLE_REFRESH_SECONDS = 30;

/** Largest form body read, bytes (a sign-in or an action is a few hundred). */
const MAX_FORM_BYTES = 8 * 1024;

/** What `consoleRoutes` serves. */
export interface ConsoleRoutesOptions {
  /** config `http.readApiKey`; undefined (or empty) turns the console off. */
  readKey: string | undefined;
  /** config `http.writeApiKey`; undefined: the action buttons are off. */
  writeKey: string | undefined;
  /** Every connection the daemon runs, in configuration order. */
  connections: readonly ConsoleConnection[];
  /** Literal secrets masked in everything shown (config `deploymentSecrets`). The two keys are added. */
  secrets: readonly string[];
  /** Session lifetime, seconds. Default `CONSOLE_SESSION_SECONDS`. */
  sessionSeconds?: number;
  /** Seconds between the page's refreshes (`?refresh=N` overrides, 0: none). Default 30. */
  refreshSeconds?: number;
  /** Sessions per key and per address (console-sessions.ts); defaults 500 and 20. */
  sessionLimits?: Pick<ConsoleSessionsOptions, 'maxPerKey' | 'maxPerAddress'>;
  /** The sign-in throttle's limits (sign-in-throttle.ts); its defaults otherwise. */
  signInThrottle?: Omit<SignInThrottleOptions, 'now'>;
  /** The clock of sessions and the throttle, epoch ms (tests). Default Date.now. */
  now?: () => number;
  logger?: Logger;
}

/** Security headers of every HTML answer: nothing loads from elsewhere, no framing, no referrer. */
const HTML_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on the console's own forms.
  'referrer-policy': 'same-origin',
};

const HTML_PAGE = { 'text/html; charset=utf-8': undefined };
/** A form's fields (`application/x-www-form-urlencoded`), read by the handler (a missing field is empty). */
const form = (shape: Record<string, string>) => ({
  mediaType: 'application/x-www-form-urlencoded' as const,
  schema: z.object(Object.fromEntries(Object.entries(shape).map(([name, description]) => [name, z.string().optional().meta({ description })]))),
  required: true,
  maxBytes: MAX_FORM_BYTES,
  checkedBy: 'handler' as const,
});
const SEE_CONSOLE = { description: 'Done: back to the console (`Location: /`), a notice on the page says how it went.', headers: { location: '`/`' } };
const ACTION_FIELDS = { csrf: "The session's CSRF token (in every form of the page).", connection: "The connection's name.", endpoint: 'The webhook endpoint or sink.' };
const action = (key: 'replay' | 'enable' | 'retry', operationId: string, summary: string, extra: Record<string, string> = {}) =>
  defineRouteSpec({
    method: 'POST',
    path: CONSOLE_PATHS[key],
    operationId,
    summary,
    tags: ['console'],
    access: 'console',
    body: form({ ...ACTION_FIELDS, ...extra }),
    responses: { 303: SEE_CONSOLE, 401: { description: 'No session: the sign-in page.', content: HTML_PAGE }, 403: { description: 'No valid CSRF token, another site, or a session without the write key.', content: HTML_PAGE } },
  });

/** The declarations of the console's routes (module comment). */
export const CONSOLE_ROUTE_SPECS = {
  page: defineRouteSpec({
    method: 'GET',
    path: CONSOLE_PATHS.page,
    operationId: 'getConsolePage',
    summary: 'The operator console (HTML); the sign-in form without a session',
    tags: ['console'],
    access: 'console',
    query: z.object({ refresh: z.string().optional().meta({ description: 'Seconds between refreshes, 5 to 3600; 0: none. Default 30.' }) }),
    responses: { 200: { description: 'The page.', content: HTML_PAGE }, 401: { description: 'The sign-in form.', content: HTML_PAGE } },
  }),
  json: defineRouteSpec({
    method: 'GET',
    path: CONSOLE_PATHS.json,
    operationId: 'getConsoleData',
    summary: "The console's data as JSON (scripts)",
    tags: ['console'],
    access: 'console',
    responses: {
      200: { description: 'Every connection as the page shows it.', content: { 'application/json': z.looseObject({ generatedAt: z.string(), connections: z.array(z.looseObject({ name: z.string() })) }) } },
      401: errorResponse('Neither a session nor the read bearer key.'),
    },
  }),
  stylesheet: defineRouteSpec({
    method: 'GET',
    path: CONSOLE_PATHS.stylesheet,
    operationId: 'getConsoleStylesheet',
    summary: "The console's stylesheet",
    tags: ['console'],
    access: 'console-open',
    responses: { 200: { description: 'CSS.', content: { 'text/css; charset=utf-8': undefined } } },
  }),
  signIn: defineRouteSpec({
    method: 'POST',
    path: CONSOLE_PATHS.signIn,
    operationId: 'signInToConsole',
    summary: 'Signs in with the read key (and the write key for the action buttons): a session cookie',
    tags: ['console'],
    access: 'console-open',
    body: form({ key: 'The read key (`http.readApiKey`).', writeKey: 'The write key (`http.writeApiKey`), optional: the action buttons.' }),
    responses: {
      303: { description: 'Signed in: `Set-Cookie` `bizops_console` (HttpOnly, SameSite=Strict), `Location: /`.', headers: { 'set-cookie': 'The session cookie.', location: '`/`' } },
      401: { description: 'A wrong key: the sign-in form again, saying which.', content: HTML_PAGE },
      429: { description: 'Too many wrong keys: sign-in paused (`Retry-After`).', content: HTML_PAGE, headers: { 'retry-after': 'Seconds.' } },
    },
  }),
  signOut: defineRouteSpec({
    method: 'POST',
    path: CONSOLE_PATHS.signOut,
    operationId: 'signOutOfConsole',
    summary: 'Ends the session',
    tags: ['console'],
    access: 'console-open',
    body: form({ csrf: "The session's CSRF token." }),
    responses: { 303: { description: 'Signed out: the cookie cleared, `Location: /`.', headers: { location: '`/`' } } },
  }),
  replay: action('replay', 'replayFromConsole', 'Replays a webhook endpoint or sink from a seq (`webhooks replay --since`)', { since: 'The seq to replay after.' }),
  enable: action('enable', 'enableFromConsole', 'Enables a disabled webhook endpoint or sink (`webhooks enable`)'),
  retry: action('retry', 'retryFromConsole', "Ends a paused target's pause now (`webhooks retry`, `sinks retry`)"),
} as const satisfies Record<string, RouteSpec>;

/** A refused request the console answers with a message (an HTML page or a notice). */
class ConsoleRefusal extends Error {
  readonly status: number;

  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/**
 * The console's routes for the daemon's route table (`CONSOLE_ROUTE_SPECS`); none when no read key
 * is configured (the console is off: `/` is the server's 404).
 */
export function consoleRoutes(options: ConsoleRoutesOptions): Route[] {
  const readKey = options.readKey;
  if (!readKey) return [];
  const readBearer = new BearerKey(readKey);
  const writeKey = options.writeKey || undefined;
  const logger = (options.logger ?? silentLogger).child({ component: 'console' });
  const now = options.now ?? Date.now;
  const sessions = new ConsoleSessions({ seconds: options.sessionSeconds ?? CONSOLE_SESSION_SECONDS, ...options.sessionLimits, now });
  const throttle = new SignInThrottle({ ...options.signInThrottle, now });
  const secrets = [...options.secrets, readKey, ...(writeKey ? [writeKey] : [])];
  const defaultRefresh = options.refreshSeconds ?? CONSOLE_REFRESH_SECONDS;

  const snapshots = async (now: Date) => Promise.all(options.connections.map((connection) => gatherSnapshot(connection, secrets, now)));

  /** The session of the request's cookie, if live. */
  const sessionOf = (request: IncomingMessage): ConsoleSession | undefined => sessions.get(parseCookie(request.headers.cookie ?? '')[CONSOLE_COOKIE]);

  const signInPage = async (response: ServerResponse, status: number, error?: string, headers: Record<string, string | string[]> = {}) =>
    sendHtml(response, status, await renderSignIn({ error, writeKeyConfigured: writeKey !== undefined }), headers);

  const sessionCookie = (request: IncomingMessage, value: string, maxAge: number) =>
    stringifySetCookie({
      name: CONSOLE_COOKIE,
      value,
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge,
      // Behind a TLS-terminating proxy the browser speaks HTTPS: the cookie then never travels in clear.
      secure: request.headers['x-forwarded-proto'] === 'https',
    });

  const signIn = async (request: IncomingMessage, response: ServerResponse) => {
    const form = await readForm(request);
    const key = form.get('key') ?? '';
    const givenWriteKey = form.get('writeKey') ?? '';
    const remote = request.socket.remoteAddress;
    const address = addressKey(remote);
    if (key === '') return signInPage(response, 401, 'Enter the read key.');
    // Checked, compared and counted with no await between: concurrent guesses cannot slip past a pause.
    const verdict = throttle.check(address);
    if (!verdict.allowed) {
      const seconds = Math.max(1, Math.ceil(verdict.retryAfterMs / 1000));
      const why = verdict.scope === 'address' ? 'Too many wrong keys from your address' : 'Too many wrong keys from many addresses';
      return signInPage(response, 429, `${why}: sign-in is paused for ${seconds} s. Signed-in sessions and scripts with a bearer key are not affected.`, { 'retry-after': String(seconds) });
    }
    const wrong = !secretEquals(key, readKey) ? 'read' : givenWriteKey !== '' && (!writeKey || !secretEquals(givenWriteKey, writeKey)) ? 'write' : undefined;
    if (wrong !== undefined) {
      const failure = throttle.failed(address);
      // One line per burst, not one per guess (sign-in-throttle.ts).
      if (failure.addressBurstStarted) logger.warn({ remote, address }, `console sign-in refused: wrong ${wrong} key; further wrong keys from this address are counted, not logged, until it has given none for an hour`);
      if (failure.globalPauseStarted) logger.warn({ remote, address }, 'console sign-in paused for everyone: too many wrong keys from many addresses; signed-in sessions, bearer keys, /readyz and the API go on');
      if (wrong === 'read') return signInPage(response, 401, 'Sign-in refused: that is not the read key. Use the value of BIZOPS_READ_API_KEY (http.readApiKey) the daemon runs with.');
      return signInPage(
        response,
        401,
        writeKey
          ? 'Sign-in refused: the write key is wrong. Leave it empty to sign in without the action buttons.'
          : 'Sign-in refused: this daemon has no write key (http.writeApiKey), so the console has no actions. Leave the write key empty.',
      );
    }
    throttle.succeeded(address);
    const session = sessions.create(givenWriteKey !== '', address);
    logger.info({ remote, actions: session.mayAct }, 'console sign-in');
    response.writeHead(303, { location: CONSOLE_PATHS.page, 'set-cookie': sessionCookie(request, session.id, sessions.seconds), 'cache-control': 'no-store' });
    response.end();
  };

  const signOut = async (request: IncomingMessage, response: ServerResponse) => {
    const session = sessionOf(request);
    const form = await readForm(request);
    if (session) {
      checkCsrf(form, session);
      sessions.delete(session.id);
    }
    response.writeHead(303, { location: CONSOLE_PATHS.page, 'set-cookie': sessionCookie(request, '', 0), 'cache-control': 'no-store' });
    response.end();
  };

  const act = async (request: IncomingMessage, response: ServerResponse, path: string) => {
    const session = sessionOf(request);
    if (!session) return signInPage(response, 401, 'Your session has ended: sign in again.');
    const form = await readForm(request);
    checkCsrf(form, session);
    if (!session.mayAct) throw new ConsoleRefusal(403, 'Actions need the write key: sign out, then sign in with the write key too.');
    const connectionName = form.get('connection') ?? '';
    const connection = options.connections.find((candidate) => candidate.name === connectionName);
    if (!connection) throw new ConsoleRefusal(400, `connection: no connection named "${connectionName}"`);
    const endpoint = form.get('endpoint') ?? '';
    try {
      if (path === CONSOLE_PATHS.replay) {
        const since = form.get('since') ?? '';
        if (!/^\d+$/.test(since)) throw new Error(`since: a seq is a whole number from 0, got "${since}"`);
        const configured = connection.webhooks.find((candidate) => candidate.name === endpoint);
        const result = await replayWebhooks(connection.executor, configured ?? endpoint, Number(since));
        logger.info({ connection: connection.name, endpoint, sinceSeq: result.deliveredSeq, previousDeliveredSeq: result.previousDeliveredSeq }, 'console action: webhook replay');
        session.notice = {
          kind: 'ok',
          text: `Replay of ${endpoint}: the events after seq ${result.deliveredSeq} are sent again (${result.eventsToResend} in the changelog; the endpoint's filter applies)${result.reenabled ? '; the endpoint is enabled again' : ''}.`,
        };
      } else if (path === CONSOLE_PATHS.retry) {
        const result = await retryTargetNow(connection.executor, endpoint);
        logger.info({ connection: connection.name, endpoint, pausedUntil: result.pausedUntil }, 'console action: retry now');
        session.notice = {
          kind: 'ok',
          text: result.pausedUntil === null ? `${endpoint} was not paused; its held events are due now.` : `${endpoint}: the pause until ${result.pausedUntil} is ended; its next event goes out now.`,
        };
      } else {
        const result = await enableWebhookEndpoint(connection.executor, endpoint);
        logger.info({ connection: connection.name, endpoint, wasDisabled: result.wasDisabled }, 'console action: webhook endpoint enabled');
        session.notice = {
          kind: 'ok',
          text: result.wasDisabled
            ? `${endpoint} is enabled again; delivery resumes after seq ${result.deliveredSeq}.`
            : `${endpoint} was not disabled; its backoff and failure streak are cleared.`,
        };
      }
      connection.afterAction?.();
    } catch (error) {
      const action = path === CONSOLE_PATHS.replay ? 'Replay' : path === CONSOLE_PATHS.retry ? 'Retry' : 'Enable';
      session.notice = { kind: 'error', text: `${action} of ${endpoint} refused: ${maskSecrets((error as Error).message, secrets)}` };
    }
    response.writeHead(303, { location: CONSOLE_PATHS.page, 'cache-control': 'no-store' });
    response.end();
  };

  const page = async (request: IncomingMessage, response: ServerResponse, url: URL, asJson: boolean) => {
    const bearer = request.headers.authorization !== undefined;
    if (bearer && !readBearer.matches(request)) {
      return sendJson(response, 401, { error: 'Authorization: missing or wrong bearer key; send Authorization: Bearer <http.readApiKey>' }, { 'www-authenticate': 'Bearer' });
    }
    const session = bearer ? undefined : sessionOf(request);
    if (!bearer && !session) {
      if (asJson) return sendJson(response, 401, { error: 'sign in at / or send Authorization: Bearer <http.readApiKey>' }, { 'www-authenticate': 'Bearer' });
      return signInPage(response, 401);
    }
    const now = new Date();
    const connections = await snapshots(now);
    if (asJson) return sendJson(response, 200, { generatedAt: now.toISOString(), connections });
    const notice = session?.notice;
    if (session) delete session.notice;
    const html = await renderConsole({
      connections,
      now,
      refreshSeconds: refreshSeconds(url, defaultRefresh),
      csrfToken: session?.csrfToken ?? null,
      mayAct: session?.mayAct ?? false,
      writeKeyConfigured: writeKey !== undefined,
      ...(notice ? { notice } : {}),
    });
    return sendHtml(response, 200, html);
  };

  /** Runs a console handler, answering its `ConsoleRefusal` as an HTML message. */
  const guarded =
    (handler: (request: IncomingMessage, response: ServerResponse, url: URL) => Promise<void>, posted = false) =>
    async (request: IncomingMessage, response: ServerResponse, input: { url: URL }) => {
      const path = input.url.pathname;
      try {
        if (posted && !sameOrigin(request)) throw new ConsoleRefusal(403, 'Refused: the form was sent from another site.');
        await handler(request, response, input.url);
      } catch (error) {
        if (!(error instanceof ConsoleRefusal)) throw error;
        logger.warn({ path, status: error.status, reason: error.message }, 'console request refused');
        sendHtml(response, error.status, await renderMessage(error.message));
      }
    };
  const specs = CONSOLE_ROUTE_SPECS;
  return [
    route(specs.page, guarded((request, response, url) => page(request, response, url, false))),
    route(specs.json, guarded((request, response, url) => page(request, response, url, true))),
    route(specs.stylesheet, async (request, response) => {
      response.writeHead(200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
      response.end(request.method === 'HEAD' ? undefined : CONSOLE_CSS);
    }),
    route(specs.signIn, guarded(signIn, true)),
    route(specs.signOut, guarded(signOut, true)),
    route(specs.replay, guarded((request, response) => act(request, response, CONSOLE_PATHS.replay), true)),
    route(specs.enable, guarded((request, response) => act(request, response, CONSOLE_PATHS.enable), true)),
    route(specs.retry, guarded((request, response) => act(request, response, CONSOLE_PATHS.retry), true)),
  ];
}

/** `?refresh=N`: 0 for none, else 5 to 3600 seconds; the default when absent or not a number. */
function refreshSeconds(url: URL, fallback: number): number {
  const asked = url.searchParams.get('refresh');
  if (asked === null || !/^\d+$/.test(asked)) return fallback;
  const seconds = Number(asked);
  return seconds === 0 ? 0 : Math.min(3600, Math.max(5, seconds));
}

/** The form's CSRF token must be the session's. @throws ConsoleRefusal 403 otherwise */
function checkCsrf(form: URLSearchParams, session: ConsoleSession): void {
  const token = form.get('csrf') ?? '';
  if (token === '' || !secretEquals(token, session.csrfToken)) {
    throw new ConsoleRefusal(403, 'Refused: the form is out of date or came from elsewhere (no valid CSRF token). Reload the console and try again.');
  }
}

/**
 * False when the browser says the POST came from another origin (`Origin` not this host): a second
 * guard beside SameSite=Strict and the CSRF token. A request without `Origin` (not a browser's
 * form) passes; behind a proxy, `X-Forwarded-Host` names the host the browser saw.
 */
function sameOrigin(request: IncomingMessage): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  const forwarded = request.headers['x-forwarded-host'];
  const hosts = [request.headers.host, ...(Array.isArray(forwarded) ? forwarded : forwarded ? forwarded.split(',') : [])].map((value) => value?.trim());
  return hosts.includes(host);
}

/**
 * Reads an `application/x-www-form-urlencoded` body (at most 8 KiB).
 * @throws ConsoleRefusal 415 for another content type, 413 for a larger body
 */
async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new ConsoleRefusal(415, 'Refused: the console takes forms (application/x-www-form-urlencoded) only.');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new ConsoleRefusal(413, 'Refused: the form is larger than 8 KiB.');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function sendHtml(response: ServerResponse, status: number, text: string, headers: Record<string, string | string[]> = {}): void {
  response.writeHead(status, { ...HTML_HEADERS, 'content-length': String(Buffer.byteLength(text)), ...headers });
  response.end(response.req?.method === 'HEAD' ? undefined : text);
}
