/**
 * createLogger's logger makes its pino logger (and loads pino) only when a line at an enabled level
 * is written (src/logging/logger.ts `deferredLogger`): until then its level, its children and its
 * checks behave as pino's, and once made every line is the one pino writes.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/index.ts';

/** A logger at `level` writing JSON lines into `lines`. */
function capture(level: string): { lines: Record<string, unknown>[]; logger: ReturnType<typeof createLogger> } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({ write: (chunk, _encoding, callback) => void (lines.push(JSON.parse(String(chunk)) as Record<string, unknown>), callback()) });
  return { lines, logger: createLogger({ level, destination, pretty: false, secrets: ['tok_deferred_5678'] }) };
}

describe('a logger made when it first writes', () => {
  it('writes nothing below its level, and the first enabled line as pino, with the bindings of the children asked for before', () => {
    const { lines, logger } = capture('warn');
    const child = logger.child({ stream: 'deals' });
    const grandchild = child.child({ partition: 'loc_1' });
    expect([logger.level, child.level, grandchild.level]).toEqual(['warn', 'warn', 'warn']);
    expect(grandchild.isLevelEnabled('info')).toBe(false);
    expect(grandchild.isLevelEnabled('error')).toBe(true);
    grandchild.info('not written');
    grandchild.debug({ token: 'x' }, 'not written either');
    expect(lines).toEqual([]);
    grandchild.warn({ token: 'tok_deferred_5678', pages: 2 }, 'written with tok_deferred_5678');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', stream: 'deals', partition: 'loc_1', pages: 2, token: '[redacted]', msg: 'written with [redacted]' });
    // The parent and the child made now write as pino's, with their own bindings.
    child.error(new Error('boom'), 'failed');
    logger.info('still below warn');
    expect(lines.slice(1)).toEqual([expect.objectContaining({ level: 'error', stream: 'deals', msg: 'failed', err: expect.objectContaining({ message: 'boom' }) })]);
    expect(child.bindings()).toEqual({ stream: 'deals' });
  });

  it('keeps a level set before it is made, and a child its own level, as pino does', () => {
    const { lines, logger } = capture('info');
    const before = logger.child({ part: 'before' });
    const quiet = logger.child({ part: 'quiet' }, { level: 'error' });
    logger.level = 'debug';
    const after = logger.child({ part: 'after' });
    expect([logger.level, before.level, quiet.level, after.level]).toEqual(['debug', 'info', 'error', 'debug']);
    before.debug('below info');
    quiet.warn('below error');
    after.debug('at debug');
    logger.debug('at debug too');
    expect(lines.map((line) => [line.part, line.msg])).toEqual([
      ['after', 'at debug'],
      [undefined, 'at debug too'],
    ]);
    expect(logger.level).toBe('debug');
  });

  it('refuses an unknown level at once, as pino does', () => {
    expect(() => capture('loud')).toThrow(/unknown level loud/);
    const { logger } = capture('info');
    expect(() => {
      logger.level = 'loud';
    }).toThrow(/unknown level loud/);
  });

  it('calls a flush callback at once when nothing was made, and flushes pino once made', () => {
    const { logger } = capture('info');
    let flushed = 0;
    logger.flush(() => (flushed += 1));
    logger.info('made');
    logger.flush(() => (flushed += 1));
    expect(flushed).toBe(2);
  });
});
