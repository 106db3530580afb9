/**
 * undici's `Pool` with its request API, loaded without the rest of undici. `import { Pool } from
 * 'undici'` evaluates undici's whole index: fetch, WebSocket, EventSource, the caches, the mock
 * agents and more. The sync's transport (http-transport.ts) needs the pool and `pool.request()` only, and
 * loading them alone takes about half the CPU time (docs/decisions.md "Start-up"): every command
 * that talks to the API pays it before its first request.
 *
 * The two files required are the ones undici's own index requires for `Pool`, and the prototype
 * assignment is the one it makes (`Object.assign(Dispatcher.prototype, api)`), so a pool made here
 * is the same class, with the same methods, as `require('undici').Pool`; loading the full index
 * later (the webhook sender does) assigns the same functions again. undici has no `exports` map, so
 * these paths are reachable; should an upgrade move them, loading this module throws at once
 * (test/client/undici-pool.test.ts).
 */
import { createRequire } from 'node:module';
import type { Pool as UndiciPool } from 'undici';

const require = createRequire(import.meta.url);

// The request API (`request`, `stream`, `pipeline`, `connect`, `upgrade`) lives on Dispatcher.prototype.
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
Object.assign(Dispatcher.prototype, require('undici/lib/api/index.js') as object);

/** undici's `Pool` (keep-alive connections to one origin), with `request()`; typed as undici's own. */
export const Pool = require('undici/lib/dispatcher/pool.js') as typeof UndiciPool;
