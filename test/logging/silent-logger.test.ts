/**
 * The logger made on first use (src/logging/logger.ts loads pino then, so that importing the
 * logging face costs nothing): `silentLogger` behaves as the pino logger it stands for.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, silentLogger } from '../../src/logging/index.ts';

describe('silentLogger', () => {
  it('is a silent pino logger: its children log nothing, and its methods and level work as pino', () => {
    expect(silentLogger.level).toBe('silent');
    expect(silentLogger.isLevelEnabled('error')).toBe(false);
    const child = silentLogger.child({ component: 'test' });
    expect(child.level).toBe('silent');
    expect(child.bindings()).toEqual({ component: 'test' });
    expect(() => child.error({ err: new Error('nothing') }, 'goes nowhere')).not.toThrow();
  });

  it('leaves loggers made by createLogger writing as before', () => {
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk, _encoding, callback) => void (lines.push(String(chunk)), callback()) });
    createLogger({ level: 'info', destination, pretty: false, secrets: ['tok_secret_1234'] }).info({ token: 'x' }, 'sent with tok_secret_1234');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'info', msg: 'sent with [redacted]', token: '[redacted]' });
  });
});
