/**
 * bin/library-trims.js, which bin/bizops-sync.js registers before any library loads: zod's locales
 * are English alone in a command (the 63 others never loaded), and zod's messages are the same as
 * with every locale loaded. Each case in a process of its own, the way a command loads zod; then a
 * command run as a user runs it, its loaded zod locale files recorded.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, tempDir } from '../helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = tempDir('bizops-trims-');
afterAll(() => dir.remove());

/** zod's locale names and one message of a failed parse, in a new process, with or without the trims. */
function zodAsLoaded(withTrims: boolean): { locales: string[]; message: string } {
  const script = `${withTrims ? "await import('./bin/library-trims.js');" : ''}
    const { z } = await import('zod');
    const issue = z.object({ limit: z.number().int() }).safeParse({ limit: 'ten' }).error.issues[0];
    console.log(JSON.stringify({ locales: Object.keys(z.locales), message: issue.message }));`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`node exited with ${String(result.status)}: ${result.stderr}`);
  return JSON.parse(result.stdout) as { locales: string[]; message: string };
}

describe('library trims', () => {
  it("loads zod's English locale alone, and zod's messages stay the same", () => {
    const whole = zodAsLoaded(false);
    const trimmed = zodAsLoaded(true);
    expect(whole.locales.length).toBeGreaterThan(1);
    expect(whole.locales).toContain('en');
    // Fails when a zod release moved its locales: the hook then matches nothing, and zod loads whole.
    expect(trimmed.locales).toEqual(['en']);
    expect(trimmed.message).toBe(whole.message);
    expect(trimmed.message).toBe('Invalid input: expected number, received string');
  });

  it('a command loads en.js alone of zod\'s locale files', () => {
    const record = dir.file('locales.txt');
    const hook = fileURLToPath(new URL('./fixtures/record-zod-locales.mjs', import.meta.url));
    // A configuration error: the command loads the configuration's zod schema, parses, and exits 2 naming the field.
    const result = spawnSync(process.execPath, ['--import', hook, BIN, 'status'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, HOME: process.env.HOME, RECORD_ZOD_LOCALES_TO: record, BIZOPS_DB: dir.file('mirror.db'), BIZOPS_LOG_LEVEL: 'loud' },
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('BIZOPS_LOG_LEVEL');
    expect(readFileSync(record, 'utf8').split('\n')).toEqual(['en.js']);
  });
});

