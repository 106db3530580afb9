/**
 * The write queue's commands (docs/writes.md "Using it"):
 *
 *   bizops-sync enqueue KIND --data JSON | --file F [--idempotency-key K] [--act-as NAME] [--json]
 *       validates and queues one write; prints its id (exit 2 when the payload is invalid: nothing queued)
 *   bizops-sync worker [--concurrency N]
 *       runs a write worker until SIGTERM/SIGINT, sharing the queue and the rate budget with every
 *       other process of the deployment
 *   bizops-sync write ID [--json]
 *       shows one write: status, outcome, error
 *
 * `registerWriteCommands(program)` adds them to the `bizops-sync` program. Each loads its job when it
 * runs: `write` reads the mirror only; `enqueue` and `worker` load the write queue (BullMQ).
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { z } from 'zod';
import type { ContextOptions } from '../../jobs/context.ts';
import { maskUrlPassword, type Logger } from '../../src/logging/index.ts';
import type { Config } from '../../src/config/index.ts';
import { WriteValidationError } from '../../src/writes/index.ts';
// The kinds (their names and summaries for the help), without the queue (src/writes/queue/).
import { WRITE_KIND_NAMES, WRITE_KINDS } from '../../src/writes/kinds/index.ts';
import type { EnqueueResult } from '../../src/writes/queue/index.ts';
import { CONNECTION_OPTION_HELP, connectionFromEnvironment, exitCodeForSignal, mirrorPath, shutdownOnSignals } from '../shared.ts';
import { UsageError } from '../usage-error.ts';

/**
 * Reads the payload given as `--data JSON` or `--file F` (`-` for stdin).
 * @throws UsageError naming the option when both, neither, or invalid JSON is given
 */
export function readPayloadArgument(options: { data?: string; file?: string }): unknown {
  if (options.data !== undefined && options.file !== undefined) throw new UsageError('give the payload with --data or --file, not both');
  if (options.data === undefined && options.file === undefined) throw new UsageError('the payload is required: --data \'{"...": ...}\' or --file payload.json');
  const source = options.data !== undefined ? '--data' : `--file ${options.file}`;
  let text: string;
  if (options.data !== undefined) text = options.data;
  else {
    try {
      text = readFileSync(options.file === '-' ? 0 : options.file!, 'utf8');
    } catch (error) {
      throw new UsageError(`--file: cannot read ${options.file}: ${(error as Error).message}`);
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new UsageError(`${source}: not valid JSON (${(error as Error).message})`);
  }
}

export interface EnqueueCommandOptions {
  kind: string;
  data?: string;
  file?: string;
  idempotencyKey?: string;
  actAs?: string;
  logger?: Logger;
  /** Redis key names (tests). */
  redisKeys?: ContextOptions['redisKeys'];
}

/**
 * `bizops-sync enqueue`: reads the payload argument, then validates, stores and queues one write.
 * @throws UsageError (bad arguments), WriteValidationError (nothing queued), IdempotencyConflictError
 */
export async function enqueueCommand(config: Config, options: EnqueueCommandOptions): Promise<EnqueueResult> {
  const payload = readPayloadArgument(options);
  const { enqueueWriteJob } = await import('../../jobs/writes.ts');
  return enqueueWriteJob(config, { kind: options.kind, payload, idempotencyKey: options.idempotencyKey, actAs: options.actAs }, { logger: options.logger, redisKeys: options.redisKeys });
}

/** One field of a payload's JSON Schema, as the help shows it: `type* (INCOME|EXPENSE)`, `amount* (integer)`. */
function describeField(name: string, schema: Record<string, unknown>, required: boolean): string {
  const what = Array.isArray(schema.enum)
    ? schema.enum.join('|')
    : schema.const !== undefined
      ? String(schema.const)
      : schema.type === 'array'
        ? 'list'
        : schema.type === 'boolean'
          ? 'true|false'
          : schema.type === 'integer' || schema.type === 'number' || schema.type === 'object'
            ? String(schema.type)
            : '';
  return `${name}${required ? '*' : ''}${what ? ` (${what})` : ''}`;
}

/** A write kind's payload fields, from its schema (zod's JSON Schema of the input), wrapped under the kind's line. */
function describeFields(payloadSchema: z.ZodType): string {
  const schema = z.toJSONSchema(payloadSchema, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const fields = Object.entries(schema.properties ?? {}).map(([name, field]) => describeField(name, field, schema.required?.includes(name) ?? false));
  if (fields.length === 0) return '      fields: none';
  const lines: string[] = [];
  let line = '      fields:';
  for (const field of fields) {
    if (line.length + field.length + 2 > 100) {
      lines.push(`${line},`);
      line = '       ';
    }
    line += `${line.endsWith(':') || line.trim() === '' ? ' ' : ', '}${field}`;
  }
  return [...lines, line].join('\n');
}

function parseConcurrency(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1 || number > 256) throw new UsageError(`--concurrency must be an integer 1 to 256, got "${value}"`);
  return number;
}

/** Adds `enqueue`, `worker` and `write` to the program. Errors are thrown for the program's one-line reporter. */
export function registerWriteCommands(program: Command): void {
  // Built when the help is shown (a function): each kind with its summary and its payload's fields.
  const kinds = () =>
    WRITE_KIND_NAMES.map((name) => `  ${name.padEnd(26)} ${WRITE_KINDS[name].summary} (${WRITE_KINDS[name].spec})\n${describeFields(WRITE_KINDS[name].payloadSchema)}`).join('\n');
  program
    .command('enqueue')
    .description('validate and queue one write (a mutation of the API); prints the write id')
    .argument('<kind>', 'write kind, e.g. transaction.create')
    .option('--data <json>', 'the payload as JSON')
    .option('--file <path>', 'a file holding the payload as JSON (- for stdin)')
    .option('--idempotency-key <key>', 'the same key enqueued twice is one write')
    .option('--act-as <token-name>', 'the configured token the write acts as (default: default)')
    .option('--json', 'print { id, idempotencyKey, status, created } as JSON')
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .addHelpText(
      'after',
      () =>
        `\nWrite kinds, each with its payload's fields (* required; docs/writes.md has the rules):\n${kinds()}\n\n` +
        `Example:\n  bizops-sync enqueue transaction.create --data '{"type":"INCOME","amount":1250,"description":"Catering"}'`,
    )
    .action(async (kind: string, options: { data?: string; file?: string; idempotencyKey?: string; actAs?: string; json?: boolean; connection?: string }) => {
      const { config, deployment } = connectionFromEnvironment(options.connection);
      const { connectionLogger, deploymentLogger } = await import('../../jobs/context.ts');
      const logger = connectionLogger(deploymentLogger(deployment, { level: process.env.BIZOPS_LOG_LEVEL ?? 'warn' }), config, deployment.named);
      try {
        const result = await enqueueCommand(config, { kind, data: options.data, file: options.file, idempotencyKey: options.idempotencyKey, actAs: options.actAs, logger });
        process.stdout.write(options.json ? `${JSON.stringify(result)}\n` : `${result.id}\n`);
      } catch (error) {
        if (error instanceof WriteValidationError) throw new UsageError(`invalid write, nothing queued: ${error.message}`);
        throw error;
      }
    });

  program
    .command('worker')
    .description('run a write worker: sends queued writes at the pace of the shared rate budget, until SIGTERM')
    .option('--concurrency <n>', 'writes in progress at once in this process (default 4)', parseConcurrency)
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (options: { concurrency?: number; connection?: string }) => {
      const { config, deployment } = connectionFromEnvironment(options.connection);
      const [{ connectionLogger, deploymentLogger }, { runWorkerJob }] = await Promise.all([import('../../jobs/context.ts'), import('../../jobs/writes.ts')]);
      const logger = connectionLogger(deploymentLogger(deployment), config, deployment.named);
      // Exit 0 after SIGTERM, 130 after Ctrl-C (a second Ctrl-C exits at once).
      const shutdown = shutdownOnSignals();
      try {
        await runWorkerJob(config, { concurrency: options.concurrency, logger, signal: shutdown.signal });
        process.exitCode = exitCodeForSignal(shutdown.received()) ?? 0;
      } finally {
        shutdown.dispose();
      }
    });

  program
    .command('write')
    .description('show one write: status, outcome, error')
    .argument('<id>', 'the write id printed by enqueue')
    .option('--json', 'print JSON')
    .option('--db <path>', "the mirror: a file, or a postgres:// URL (default: the connection's dbPath: BIZOPS_DB, the config file, or ./data/mirror.db)")
    .option('--connection <name>', CONNECTION_OPTION_HELP)
    .action(async (id: string, options: { json?: boolean; db?: string; connection?: string }) => {
      // Reads the mirror only: no API settings needed (as status and changes).
      const dbPath = mirrorPath(options.db, options.connection);
      const { readWrite } = await import('../../jobs/show-write.ts');
      const write = await readWrite(dbPath, id);
      if (!write) {
        // Writes live in their connection's mirror: say which one was searched.
        const mirror = maskUrlPassword(dbPath);
        throw new UsageError(options.connection === undefined ? `no write ${id} (mirror ${mirror})` : `no write ${id} in connection ${options.connection} (mirror ${mirror})`);
      }
      if (options.json) {
        process.stdout.write(`${JSON.stringify(write, null, 2)}\n`);
        return;
      }
      const lines = [
        `${write.id}  ${write.kind}  ${write.status}`,
        `  idempotency key: ${write.idempotencyKey}`,
        `  acting as:       ${write.actAs}`,
        `  attempts:        ${write.attempts}`,
        `  outcome:         ${write.outcome ?? '-'}`,
        `  error:           ${write.error ?? '-'}`,
        `  record:          ${write.remoteId ?? '-'}`,
      ];
      if (write.enqueueError) lines.push(`  not queued:      ${write.enqueueError}`);
      if (write.status === 'needs_review') lines.push('  needs review:    it may or may not have been applied; it is never sent again automatically: check the API, then act');
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
