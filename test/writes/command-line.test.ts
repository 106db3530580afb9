/**
 * The write commands (cli/commands/writes.ts): `enqueue` from --data / --file, clear errors for
 * bad arguments, and the commands registered on a commander program.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configSchema, type Config } from '../../src/config/schema.ts';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { enqueueCommand, readPayloadArgument, registerWriteCommands } from '../../cli/commands/writes.ts';
import { UsageError } from '../../cli/program.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { WriteStore, WriteValidationError } from '../../src/writes/index.ts';
import { runCli } from '../helpers.ts';
import { countKeys, simulator, writeTestBed, REDIS_URL, type WriteTestBed } from './support.ts';

let sim: RunningSimulator;
let bed: WriteTestBed;
let config: Config;

beforeEach(async () => {
  sim = await simulator();
  bed = await writeTestBed();
  config = configSchema.parse({ baseUrl: sim.url, tokens: { default: sim.tokens.admin }, dbPath: bed.dbPath, redisUrl: REDIS_URL });
});

afterEach(async () => {
  await sim?.close();
  await bed?.cleanup();
});

describe('readPayloadArgument', () => {
  it('reads --data or --file and names the option when the JSON is bad', () => {
    const file = join(bed.dir, 'payload.json');
    writeFileSync(file, '{"type":"INCOME","amount":5}');
    expect(readPayloadArgument({ data: '{"a":1}' })).toEqual({ a: 1 });
    expect(readPayloadArgument({ file })).toEqual({ type: 'INCOME', amount: 5 });
    expect(() => readPayloadArgument({ data: '{a:1}' })).toThrow(/^--data: not valid JSON/);
    expect(() => readPayloadArgument({})).toThrow(UsageError);
    expect(() => readPayloadArgument({ data: '{}', file })).toThrow('not both');
    expect(() => readPayloadArgument({ file: join(bed.dir, 'missing.json') })).toThrow(/^--file: cannot read/);
  });
});

describe('enqueueCommand', () => {
  it('stores and queues the write, and returns its id', async () => {
    const redisKeys = { queuePrefix: bed.prefix, queueName: bed.queueName, budgetPrefix: bed.budgetPrefix };
    const result = await enqueueCommand(config, { kind: 'transaction.create', data: '{"type":"INCOME","amount":300,"description":"From the CLI"}', redisKeys, logger: silentLogger });
    expect(result).toMatchObject({ id: expect.stringMatching(/^wr_/), status: 'queued', created: true });
    expect(await new WriteStore(bed.connection).get(result.id)).toMatchObject({ kind: 'transaction.create', payload: { amount: 300 } });
    expect(await countKeys(`${bed.prefix}:${bed.queueName}:${result.id}`)).toBe(1);
  });

  it('refuses an invalid payload before anything is stored', async () => {
    const redisKeys = { queuePrefix: bed.prefix, queueName: bed.queueName, budgetPrefix: bed.budgetPrefix };
    await expect(enqueueCommand(config, { kind: 'domain.purchase', data: '{"domain":"x.com"}', redisKeys, logger: silentLogger })).rejects.toThrow(WriteValidationError);
    expect((await bed.connection.get('SELECT COUNT(*) AS n FROM writes'))).toEqual({ n: 0 });
    expect(await countKeys(`${bed.prefix}:*`)).toBe(0);
  });
});

describe('bizops-sync enqueue (the process)', () => {
  it('a payload nested 3,000 levels deep: exit 2, one line naming the depth limit, nothing stored', async () => {
    const file = join(bed.dir, 'deep.json');
    writeFileSync(file, `{"type":"INCOME","amount":1,"notes":${'['.repeat(3000)}${']'.repeat(3000)}}`);
    const result = await runCli(['enqueue', 'transaction.create', '--file', file], {
      PATH: process.env.PATH,
      BIZOPS_BASE_URL: sim.url,
      BIZOPS_TOKEN: sim.tokens.admin,
      BIZOPS_DB: bed.dbPath,
      REDIS_URL,
    });
    expect(result.stderr.trim()).toBe('bizops-sync: invalid write, nothing queued: transaction.create: notes: must not nest objects and arrays more than 64 levels deep: the mirror cannot store it');
    expect(result.code).toBe(2);
    expect((await bed.connection.get('SELECT COUNT(*) AS n FROM writes'))).toEqual({ n: 0 });
  });
});

describe('registerWriteCommands', () => {
  it('adds enqueue, worker and write; enqueue --help lists every kind', () => {
    const program = new Command('bizops-sync').exitOverride();
    registerWriteCommands(program);
    expect(program.commands.map((command) => command.name())).toEqual(['enqueue', 'worker', 'write']);
    let help = '';
    const enqueue = program.commands[0]!.configureOutput({ writeOut: (text) => (help += text) });
    enqueue.outputHelp();
    for (const kind of ['transaction.create', 'calendar.rsvp', 'timeclock.clock_in', 'deal.close', 'email.send', 'email_draft.update', 'performance_review.create', 'employee.benefits.set', 'location.create', 'domain.purchase']) {
      expect(help).toContain(kind);
    }
  });
});
