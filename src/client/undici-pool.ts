/**
 * undici's `Pool` with its request API, loaded without the rest of undici. `import { Pool } from
 * 'undici'` evaluates undici's whole index: fetch, WebSocket, EventSource, the caches, the mock
 * agents and more. The sync's transport (http-transport.ts) needs the pool and `pool.request()` only, and
 * loading them alone takes about half the CPU time (docs/decisions.md "Start-up"): every command
 * that talks to the API pays it before its first request.
 *
 * The files required are the ones undici's own index requires for `Pool` and `request`, and the
 * prototype assignment is the one it makes for `request` (its index assigns `stream`, `pipeline`,
 * `connect` and `upgrade` too: `Object.assign(Dispatcher.prototype, api)`), so a pool made here is
 * the same class as `require('undici').Pool`, with `request` alone until the full index is loaded
 * (the webhook sender does: it assigns the same `request` again, and the other four). The type
 * (`RequestPool`) says so. undici has no `exports` map, so
 * these paths are reachable; should an upgrade move them, loading this module throws at once
 * (test/client/undici-pool.test.ts).
 */
import { createRequire } from 'node:module';
import type { Pool as UndiciPool } from 'undici';

const require = createRequire(import.meta.url);

// The request API lives on Dispatcher.prototype: `request` alone (its four siblings load node:stream's
// pipeline and more, about 5-10 ms of start-up, for methods the transport does not call).
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js') as { prototype: object };
Object.assign(Dispatcher.prototype, { request: require('undici/lib/api/api-request.js') as unknown });

/** A pool of undici's `Pool` class as loaded here: `request`, not the rest of the request API (`stream`, `pipeline`, `connect`, `upgrade`). */
export type RequestPool = Omit<UndiciPool, 'stream' | 'pipeline' | 'connect' | 'upgrade'>;

/** undici's `Pool` (keep-alive connections to one origin, `new Pool(origin, options)`), its instances typed as `RequestPool`. */
export const Pool = require('undici/lib/dispatcher/pool.js') as new (...args: ConstructorParameters<typeof UndiciPool>) => RequestPool;
