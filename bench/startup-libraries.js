/**
 * The libraries floor of start-up (bench/startup.ts runs it as one of its commands): a process that
 * loads only the libraries a `sync` or `backfill` must have loaded before its first request, the way
 * the command loads them, and does nothing else: commander (the command line), zod (the
 * configuration, parsed once), undici's pool and `request` (the API transport, the same files
 * src/client/undici-pool.ts requires), ioredis (the shared rate budget) and better-sqlite3 (the
 * mirror, opened in memory). Node's compile cache is on, and zod's locales are trimmed to English
 * (bin/library-trims.js), as bin/bizops-sync.js does.
 * No command that uses these libraries can start below this figure; what a command costs above it
 * is the project's own modules and work.
 * Plain JavaScript, like bin/bizops-sync.js, so that Node's TypeScript stripper is not loaded to read
 * this file (a warm compile cache spares the command that cost too).
 */
import { createRequire, enableCompileCache } from 'node:module';

enableCompileCache();
await import('../bin/library-trims.js');
const require = createRequire(import.meta.url);

await import('commander');
const { z } = await import('zod');
z.object({ baseUrl: z.string(), limit: z.number().int() }).parse({ baseUrl: 'http://127.0.0.1', limit: 1 });
const Dispatcher = require('undici/lib/dispatcher/dispatcher.js');
Object.assign(Dispatcher.prototype, { request: require('undici/lib/api/api-request.js') });
require('undici/lib/dispatcher/pool.js');
await import('ioredis');
const { default: Database } = await import('better-sqlite3');
new Database(':memory:').close();
