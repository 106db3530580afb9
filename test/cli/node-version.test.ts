/**
 * A Node.js older than 24 (still the default on many machines) gets one line naming the version
 * needed and the one found, and exit code 2, from `bin/bizops-sync.js` and from every npm script
 * that runs the project's code, instead of ERR_UNKNOWN_FILE_EXTENSION on the first TypeScript import.
 *
 * The older Node is a real one when the machine has it (`which -a node`, /usr/bin/node: Debian's is
 * 20); otherwise this Node made to report version 20.0.0 by a preload, which checks the same code path.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

/** A Node.js binary older than 24 on this machine, with its version, or undefined. */
function olderNode(): { path: string; version: string } | undefined {
  const candidates = new Set<string>(['/usr/bin/node', '/usr/local/bin/node']);
  try {
    for (const line of execFileSync('which', ['-a', 'node'], { encoding: 'utf8' }).split('\n')) if (line.trim()) candidates.add(line.trim());
  } catch {
    // no `which`: the fixed candidates only
  }
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const version = execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();
      if (Number(/^v(\d+)/.exec(version)?.[1] ?? 99) < 24) return { path, version };
    } catch {
      // not runnable: try the next
    }
  }
  return undefined;
}

let pretendDir: string | undefined;
afterAll(() => pretendDir && rmSync(pretendDir, { recursive: true, force: true }));

/** A preload module that makes this Node report version 20.0.0 (for a machine without an older Node). */
function pretendNode20(): string {
  pretendDir = mkdtempSync(join(tmpdir(), 'bizops-node20-'));
  const file = join(pretendDir, 'pretend-node-20.mjs');
  writeFileSync(file, `Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.0.0' } });\n`);
  return file;
}

const older = olderNode();
/** The environment in which `node` is the older one: first on PATH, or this Node reporting 20.0.0. */
const olderEnvironment: NodeJS.ProcessEnv = older
  ? { ...process.env, PATH: `${dirname(older.path)}:${process.env.PATH}` }
  : {
      ...process.env,
      PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
      NODE_OPTIONS: `--import=${pretendNode20()}`,
    };
const foundVersion = older?.version ?? 'v20.0.0';
const expectedLine = `bizops-sync: needs Node.js 24 or newer; found ${foundVersion} (nvm install 24, or see .nvmrc)`;

describe('a Node.js older than 24', () => {
  it('bin/bizops-sync.js prints one line naming both versions and exits 2, whichever the command', () => {
    const node = older?.path ?? process.execPath;
    for (const args of [['status'], ['backfill'], ['daemon'], ['config', 'check']]) {
      const result = spawnSync(node, ['--max-semi-space-size=16', `${CHECKOUT}bin/bizops-sync.js`, ...args], { env: olderEnvironment, encoding: 'utf8', cwd: CHECKOUT });
      expect(result.status, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toBe(`${expectedLine}\n`);
      expect(result.stdout).toBe('');
    }
  });

  it('every npm script that runs the project code says the same and exits 2', () => {
    // Arguments that make each script end at once should the check be missing (no daemon, no suite run).
    const scripts: Record<string, string[]> = { demo: ['--help'], start: ['--help'], simulate: ['--help'], bench: ['none-such'], test: ['--project', 'none-such'] };
    for (const script of Object.keys(scripts)) expect(packageJson.scripts, script).toHaveProperty(script);
    for (const [script, args] of Object.entries(scripts)) {
      const result = spawnSync('npm', ['run', '--silent', script, '--', ...args], { env: olderEnvironment, encoding: 'utf8', cwd: CHECKOUT, timeout: 120_000 });
      expect(result.status, `npm run ${script}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(expectedLine);
      expect(result.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
    }
  });
});
