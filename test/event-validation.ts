/**
 * Validating events against their type's JSON Schema (src/notify/event-schemas.ts, docs/events.md)
 * with ajv (draft 2020-12, formats checked, strict schemas). Used by test/notify/event-schemas.test.ts
 * and by `syncFixtures` (test/helpers.ts), which validates every change row a test's mirror holds
 * when the test ends: the events the suite's sync tests emit all go through their schemas.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { eventSchemas, type JsonSchema } from '../src/notify/event-schemas.ts';
import { changelogEnds, readChangesPage } from '../src/notify/pull/changes-page.ts';
import type { SqlExecutor } from '../src/mirror/sql/executor.ts';

/** One compiled validator per event type. */
export type EventValidators = Map<string, ValidateFunction>;

/** Compiles `schemas` (default: every event type's of this build). */
export function eventValidators(schemas: Record<string, JsonSchema> = eventSchemas()): EventValidators {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajvFormats.default(ajv);
  return new Map(Object.entries(schemas).map(([type, schema]) => [type, ajv.compile(schema)]));
}

let shared: EventValidators | undefined;

/** The reasons `body` (an event body) fails its type's schema, one line each; empty when it is valid. */
export function eventProblems(body: object, validators: EventValidators = (shared ??= eventValidators())): string[] {
  const type = String((body as { type?: unknown }).type);
  const validate = validators.get(type);
  if (!validate) return [`no schema for event type ${type}`];
  if (validate(body)) return [];
  return (validate.errors ?? []).map((error) => `${type} ${error.instancePath || '/'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
}

/**
 * Every change row of the mirror (those the retention kept) read as the pull API serves it (the webhook body and its id), each
 * validated.
 * @returns the problems, each line prefixed with the event's seq
 */
export async function changelogProblems(executor: SqlExecutor): Promise<string[]> {
  const ends = await changelogEnds(executor);
  const found: string[] = [];
  let after = ends.oldestSeq - 1;
  while (after < ends.latestSeq) {
    const page = await readChangesPage(executor, { after, limit: 1000 });
    if (page.events.length === 0) break;
    for (const event of page.events) for (const problem of eventProblems(event)) found.push(`seq ${event.data.seq}: ${problem}`);
    after = page.events.at(-1)!.data.seq;
  }
  return found;
}
