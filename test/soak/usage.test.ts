/**
 * `npm run soak`'s command line (soak/run.ts): `--help` explains the options and exits 0; an unknown
 * option or a bad value is one line on stderr and exit 2, before any service starts.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const RUN = fileURLToPath(new URL('../../soak/run.ts', import.meta.url));

function soak(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [RUN, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('npm run soak: its command line', () => {
  it('--help lists the options and exits 0', () => {
    const { status, stdout, stderr } = soak('--help');
    expect(status).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^Usage: npm run soak -- \[options\]/);
    for (const option of ['--seconds', '--minutes', '--seed', '--backend', '--schedule', '--steps', '--plant', '--shrink-seconds', '--no-shrink', '--keep-going']) expect(stdout).toContain(option);
  });

  it('an unknown option is one line naming it, exit 2', () => {
    const { status, stdout, stderr } = soak('--bogus');
    expect(status).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe("soak: Unknown option '--bogus' (npm run soak -- --help)\n");
  });

  it('a bad value is one line naming the option and the rule, exit 2', () => {
    const { status, stderr } = soak('--backend', 'mysql');
    expect(status).toBe(2);
    expect(stderr).toBe('soak: --backend must be sqlite, postgres or both, got "mysql"\n');
  });
});
