/**
 * `npm test` on a fresh machine needs only what the README's "What `npm test` needs" installs: every
 * program a test runs (spawned, or found at a fixed path) is known here with the Debian package that
 * brings it, and that package is on the README's `apt-get install` lines. A test that starts running
 * a new program fails this until the README names its package.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

/** The programs tests run, and the Debian package of each (null: part of every Debian system, or Node.js itself). */
const PACKAGES: Record<string, string | null> = {
  'redis-server': 'redis-server',
  initdb: 'postgresql',
  pg_ctl: 'postgresql',
  postgres: 'postgresql',
  chromium: 'chromium',
  promtool: 'prometheus',
  unshare: 'util-linux',
  runuser: 'util-linux',
  'nats-server': 'nats-server',
  'rabbitmq-server': 'rabbitmq-server',
  bash: null,
  sh: null,
  which: null,
  node: null,
  npm: null,
};

/** Paths that appear as words of a command line a test builds, never run by it. */
const NOT_RUN = new Set(['tini', 'docker-init']);

/** Every .ts/.mjs file under `folder`, node_modules left out. */
function sources(folder: string): string[] {
  const path = join(CHECKOUT, folder);
  return readdirSync(path, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules') return [];
    const child = join(path, entry.name);
    if (statSync(child).isDirectory()) return sources(relative(CHECKOUT, child));
    return /\.(ts|mjs)$/.test(entry.name) ? [child] : [];
  });
}

/** The programs a test source runs: the first argument of spawn/execFile and the like, `pgBinary(...)`, and binaries named by a fixed path. */
function programsRun(text: string): string[] {
  const found = new Set<string>();
  for (const match of text.matchAll(/\b(?:spawn|spawnSync|execFile|execFileSync|execSync|pgBinary)\(\s*['"`]([\w.-]+)/g)) found.add(match[1]!);
  for (const match of text.matchAll(/['"`](?:\/usr)?(?:\/local)?\/s?bin\/([\w.-]+)['"`]/g)) if (!NOT_RUN.has(match[1]!)) found.add(match[1]!);
  return [...found];
}

it('the README names the Debian package of every program the tests run', () => {
  const readme = readFileSync(join(CHECKOUT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### What `npm test` needs'));
  const installed = new Set(
    section
      .split('\n')
      .filter((line) => line.includes('apt-get install'))
      .flatMap((line) => line.replace(/#.*$/, '').split(/\s+/)),
  );
  const unknown: string[] = [];
  const missing: string[] = [];
  for (const file of [...sources('test'), ...sources('packages/simulator/test')]) {
    for (const program of programsRun(readFileSync(file, 'utf8'))) {
      if (!(program in PACKAGES)) unknown.push(`${relative(CHECKOUT, file)} runs ${program}: add its Debian package here and to the README's apt-get line`);
      else if (PACKAGES[program] !== null && !installed.has(PACKAGES[program]!)) missing.push(`${relative(CHECKOUT, file)} runs ${program}: the README's "What npm test needs" does not install ${PACKAGES[program]}`);
    }
  }
  expect(unknown).toEqual([]);
  expect([...new Set(missing)]).toEqual([]);
  // What the README installs is what the tests use, and chromium and promtool are among them.
  for (const needed of ['redis-server', 'postgresql', 'chromium', 'prometheus']) expect(installed.has(needed), needed).toBe(true);
});
