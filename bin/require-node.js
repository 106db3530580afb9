// Refuses a Node.js older than the one package.json's "engines" names, with one line and exit code 2,
// before anything else is loaded: Node 24 runs the TypeScript sources directly, and an older one
// would die on the first import with ERR_UNKNOWN_FILE_EXTENSION. bin/bizops-sync.js imports it
// first; the npm scripts run it before their command (`node bin/require-node.js && ...`).
// Plain JavaScript that every Node.js since 14 parses: no TypeScript, no newer syntax or API.
/* global process, URL */
import { readFileSync } from 'node:fs';

const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines || {};
const needed = Number((/(\d+)/.exec(engines.node || '') || [])[1] || 24);
const found = process.versions.node;
if (Number(found.split('.')[0]) < needed) {
  process.stderr.write(`bizops-sync: needs Node.js ${needed} or newer; found v${found} (nvm install ${needed}, or see .nvmrc)\n`);
  process.exit(2);
}
