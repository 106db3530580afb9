/**
 * Validating events against their type's JSON Schema (src/notify/event-schemas.ts, docs/events.md)
 * with ajv (draft 2020-12, formats checked, strict schemas). Used by test/notify/event-schemas.test.ts
 * and by `syncFixtures` (test/helpers.ts), which validates every change row a test's mirror holds
 * when the test ends: the events the suite's sync tests emit all go through their schemas.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { eventSchemas, type JsonSchema } from '../src/notify/event-schemas.ts';
import { readChangesPage } from '../src/notify/pull/changes-page.ts';
import { changelogEnds } from '../src/notify/pull/consumer-listing.ts';
import type { SqlExecutor } from '../src/mirror/sql/executor.ts';

/** One compiled validator per event type. */
export type EventValidators = Map<string, ValidateFunction>;

/** The validator the schemas are compiled with: draft 2020-12, every error, formats checked, strict schemas. */
function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  ajvFormats.default(ajv);
  return ajv;
}

/** Compiles `schemas` (default: every event type's of this build). */
export function eventValidators(schemas: Record<string, JsonSchema> = eventSchemas()): EventValidators {
  const ajv = newAjv();
  return new Map(Object.entries(schemas).map(([type, schema]) => [type, ajv.compile(schema)]));
}

/**
 * This build's validators, each compiled when its type is first validated: compiling all of them
 * takes seconds of CPU, and a test's mirror holds a few types.
 */
const shared = { ajv: undefined as Ajv2020 | undefined, schemas: undefined as Record<string, JsonSchema> | undefined, compiled: new Map<string, ValidateFunction>() };
function sharedValidator(type: string): ValidateFunction | undefined {
  const known = shared.compiled.get(type);
  if (known) return known;
  const schemas = (shared.schemas ??= eventSchemas());
  if (!Object.hasOwn(schemas, type)) return undefined;
  const validate = (shared.ajv ??= newAjv()).compile(schemas[type]!);
  shared.compiled.set(type, validate);
  return validate;
}

/** The reasons `body` (an event body) fails its type's schema (`validators`, default this build's), one line each; empty when it is valid. */
export function eventProblems(body: object, validators?: EventValidators): string[] {
  const type = String((body as { type?: unknown }).type);
  const validate = validators ? validators.get(type) : sharedValidator(type);
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
