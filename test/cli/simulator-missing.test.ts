/**
 * The command line where `@bizops-sync/simulator` is not installed, as in the production image: the
 * checkout's own files (no packages/, no tests) next to a node_modules of links to this checkout's
 * packages, the simulator's left out. Node's resolver then really cannot find the package.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, type TempDir } from '../helpers.ts';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));
/** What the copy leaves out: the workspace packages, what only development uses, local state. */
const NOT_COPIED = new Set(['.git', 'node_modules', 'packages', 'test', 'bench', 'docs', 'data', 'dist', 'coverage', '.bench']);

let installation: TempDir;

beforeAll(() => {
  installation = tempDir('bizops-no-simulator-');
  for (const entry of readdirSync(CHECKOUT)) {
    if (!NOT_COPIED.has(entry)) cpSync(join(CHECKOUT, entry), installation.file(entry), { recursive: true });
  }
  // Links keep every other package resolvable (Node follows them to this checkout's node_modules).
  mkdirSync(installation.file('node_modules'));
  for (const entry of readdirSync(join(CHECKOUT, 'node_modules'))) {
    if (entry !== '@bizops-sync') symlinkSync(join(CHECKOUT, 'node_modules', entry), installation.file(join('node_modules', entry)));
  }
});

afterAll(() => installation?.remove());

function run(args: string[]) {
  return spawnSync(process.execPath, [installation.file('bin/bizops-sync.js'), ...args], {
    cwd: installation.path,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    encoding: 'utf8',
  });
}

describe('without the simulator package', () => {
  it('simulate and demo exit 2 with one line saying the simulator is not installed', () => {
    for (const command of ['simulate', 'demo']) {
      const result = run([command]);
      expect(result.stderr).toBe(
        `bizops-sync: the simulator is not installed in this image (it is a development package); run \`${command}\` from a checkout\n`,
      );
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
    }
  });

  it('every other command loads: nothing else imports the simulator', () => {
    const help = run(['--help']);
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('simulate');
    const check = run(['config', 'check']);
    expect(check.stderr).toBe('bizops-sync: configuration error: BIZOPS_BASE_URL (baseUrl): is required\n');
    expect(check.status).toBe(2);
  });

  it('every module of the product imports without it, except the demo job (it loads the simulator by design)', () => {
    // Commands load their jobs when they run (docs/architecture.md), so --help alone no longer
    // proves the jobs free of the simulator: import every module the image ships, as the image would.
    const modules = ['bin', 'cli', 'jobs', 'src']
      .flatMap((folder) => (readdirSync(installation.file(folder), { recursive: true }) as string[]).map((file) => join(folder, file)))
      // The entry points run the program when imported: the tests above run them.
      .filter((file) => /\.(ts|js)$/.test(file) && ![join('jobs', 'demo.ts'), join('bin', 'bizops-sync.js'), join('cli', 'main.ts')].includes(file));
    expect(modules.length).toBeGreaterThan(50);
    const script = `for (const file of ${JSON.stringify(modules)}) { try { await import('./' + file); } catch (error) { console.log(file + ': ' + error.message); } }`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: installation.path, env: { PATH: process.env.PATH, HOME: process.env.HOME }, encoding: 'utf8' });
    expect(result.stdout).toBe('');
    expect(result.status).toBe(0);
  });
});
