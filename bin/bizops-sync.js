#!/usr/bin/env -S node --max-semi-space-size=16
// --max-semi-space-size=16 (MB): Node 24 lets the young generation grow to 64 MB semi-spaces under a
// steady allocation rate (a long backfill, `changes --since 0`), which made peak RSS grow with the
// run's length; 16 keeps it flat at a small cost in collections (docs/operations.md "Memory").
// The `bizops-sync` command. Node 24 runs the TypeScript sources directly (type stripping),
// so there is no build step between a clone and a run.
// First, before anything a Node.js older than 24 cannot load: one line and exit 2 on an older one.
import './require-node.js';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setFlagsFromString } from 'node:v8';
import { cpuUsage } from 'node:process';
import { clearInterval, setInterval, setTimeout } from 'node:timers';
import { runInNewContext } from 'node:vm';

/**
 * The latest the old generation's growth is set (below) in a command that sends no request first: once
 * the process has used this much CPU time (every thread, ms), checked every CHECK_CPU_EVERY_MS.
 */
const HEAP_GROWING_AT_LATEST_CPU_MS = 1500;
/** How often the CPU time is read for HEAP_GROWING_AT_LATEST_CPU_MS, ms (wall). */
const CHECK_CPU_EVERY_MS = 250;
/** How long after the API's first answer the old generation's growth is set (below), ms. */
const AFTER_FIRST_ANSWER_MS = 500;

// The old generation may grow to 1.5 times what a full collection left alive before the next one.
// V8's own factor (up to 4, chosen from its speed measurements) let a long backfill's heap swell with
// garbage it had not yet collected: peak RSS 230-245 MB at 1,000,000 records against 195 MB at
// 100,000, the same at 2,000,000 (a plateau, not growth with N). At 1.5: 175-184 MB at 1,000,000,
// 170 MB at 100,000, for about twice the full collections (+65 ms of pauses over a 70 s backfill).
// Set here rather than in the #! line, so that `node bin/bizops-sync.js` and the image get it too
// (docs/operations.md "Memory").
// Set once the start-up is over, not at once: the flag changes V8's flag hash, and V8 then rejects
// the code cache Node ships for its own modules (node:http, node:http2, node:crypto, node:tls, ...),
// compiling each one a command loads afterwards from source: about 20 ms of CPU before a `sync`'s
// first request. The start-up is over once the API's first answer arrived (undici's
// `undici:request:headers` diagnostics channel: everything a request needs is loaded by then,
// however slow the machine), or once the process has used 1.5 s of CPU time in a command that sends
// no request first (`changes`): CPU time, not time since the start, so that a machine busy with other
// processes, which stretches a start-up's wall time, does not set it before the start-up is over (a
// start-up costs 0.2-0.8 s of CPU time to the first request). Then one full collection, so that the
// old generation's next limit is 1.5 times what is alive now: the limit the start-up's own full
// collection set, with V8's factor, let the heap reach about 90 MB once (peak RSS 231 against 179 MB
// at 1,000,000 records); set at a fixed 2 s, a backfill's heap had swollen to a peak of 195-205 MB by
// then. `gc` is V8's, exposed with --expose-gc (also a flag) to a new context only. The timers are
// unref'd: they keep no process alive (docs/operations.md "Memory", "Start-up").
const FIRST_ANSWER = 'undici:request:headers';
let heapGrowthSet = false;
const setHeapGrowth = () => {
  if (heapGrowthSet) return;
  heapGrowthSet = true;
  clearInterval(atLatest);
  unsubscribe(FIRST_ANSWER, onFirstAnswer);
  setFlagsFromString('--heap-growing-percent=50');
  setFlagsFromString('--expose-gc');
  runInNewContext('gc')();
};
// Half a second after the first answer: a short command (one page, `verify` of a small list) has
// ended by then without paying for the collection; a long one sets it before its heap has grown.
const onFirstAnswer = () => {
  unsubscribe(FIRST_ANSWER, onFirstAnswer);
  clearInterval(atLatest);
  setTimeout(setHeapGrowth, AFTER_FIRST_ANSWER_MS).unref();
};
subscribe(FIRST_ANSWER, onFirstAnswer);
const atLatest = setInterval(() => {
  const { user, system } = cpuUsage(); // µs
  if (user + system >= HEAP_GROWING_AT_LATEST_CPU_MS * 1000) setHeapGrowth();
}, CHECK_CPU_EVERY_MS).unref();

// Node's compile cache (os.tmpdir()/node-compile-cache, or NODE_COMPILE_CACHE): from the second run
// on, each source's stripped text and compiled code come from it, so a command does not load the
// TypeScript stripper at all (a third of a bare start-up). Entries are keyed by the file's content (an
// edited file is stripped again); a directory that cannot be written leaves the cache off, silently;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off (docs/operations.md "Start-up").
// Imported once the version is known good (Node 20 has no enableCompileCache).
const { enableCompileCache } = await import('node:module');
enableCompileCache();
// Parts of libraries no command uses stay unloaded (zod's 63 other locales): before any library loads.
await import('./library-trims.js');
// Imported after: a static import would load the sources before the cache is on.
await import('../cli/main.ts');
