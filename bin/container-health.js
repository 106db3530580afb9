// The image's HEALTHCHECK (Dockerfile). A container running `daemon` is healthy when the daemon's
// /healthz answers 2xx within 4 s; one running another command (`docker run … backfill`, `status`)
// has no HTTP port and is healthy while it runs. The command is read from PID 1's command line
// (tini -- node … bin/bizops-sync.js <command>), or from the NUL-separated file named as the first
// argument. Exit 0 healthy, 1 unhealthy. Plain JavaScript, so that it starts in a few ms.
/* global process, fetch, AbortSignal */
import { readFileSync } from 'node:fs';

const commandLineFile = process.argv[2] || '/proc/1/cmdline';
let words = [];
try {
  words = readFileSync(commandLineFile, 'utf8').split('\0').filter(Boolean);
} catch {
  // unreadable: nothing says this is the daemon
}
const entry = words.findIndex((word) => word.endsWith('bin/bizops-sync.js'));
const command = entry < 0 ? undefined : words.slice(entry + 1).find((word) => !word.startsWith('-'));
if (command !== 'daemon') process.exit(0);

const port = process.env.BIZOPS_HTTP_PORT || '8080';
fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(4000) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);
