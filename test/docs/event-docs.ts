/**
 * docs/events.md's generated part and docs/event-schemas.json, rendered from the event schemas
 * (src/notify/event-schemas.ts `eventSchemas`, themselves generated from the stream registry): a
 * table of every event type, then the fields of each kind of `data.record` and `data.changes`; the
 * JSON file holds the schemas exactly as `GET /schemas` serves them. `npm run docs:streams` writes
 * both (stream-tables.ts); test/docs/docs.test.ts fails when either differs.
 */
import { changelogEventTypes, eventSchemas, type EventTypeEntry, type JsonSchema } from '../../src/notify/event-schemas.ts';
import type { RegisteredStream } from '../../src/streams/definitions.ts';

const code = (text: string) => `\`${text}\``;

function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')).replaceAll(' ', ''), ...rows.map(line)].join('\n');
}

/** A value schema in words: `integer`, `string or null`, `"WON"`, one of `a`, `b`; `any JSON` when it says nothing. */
function typeText(schema: JsonSchema): string {
  if ('const' in schema) return code(JSON.stringify(schema.const));
  if (Array.isArray(schema.enum)) return `one of ${schema.enum.map((value) => code(String(value))).join(', ')}`;
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : [];
  if (types.length === 0) return 'any JSON';
  const named = types.map((type) => (type === 'string' && schema.format === 'date-time' ? 'date-time string' : type));
  return named.join(' or ');
}

/** Rows `field | type | required | note` of an object schema, nested objects as dot paths. */
function fieldRows(schema: JsonSchema, prefix = ''): string[][] {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).flatMap(([name, child]) => {
    const path = `${prefix}${name}`;
    if (child.type === 'object' && child.properties) {
      return [[code(path), 'object', required.has(name) ? 'yes' : 'no', ''], ...fieldRows(child, `${path}.`)];
    }
    return [[code(path), typeText(child), required.has(name) ? 'yes' : 'no', typeof child.description === 'string' ? child.description : '']];
  });
}

/** What `data.record` or `data.changes` admits beyond the fields listed. */
function openness(schema: JsonSchema): string {
  if (schema.maxProperties === 0) return 'always `{}`';
  if (schema.additionalProperties === false) return 'no other member';
  if (schema.additionalProperties === true || schema.additionalProperties === undefined) return 'further members admitted, of any value';
  return 'further members admitted, each `{ old, new }`';
}

/** One section of the record and changes of `entries` (event types sharing them). */
function recordSection(title: string, entries: readonly EventTypeEntry[]): string {
  const [first] = entries;
  const record = first!.record;
  const lines = [`### ${title}`, '', `Event types: ${entries.map((entry) => code(entry.type)).join(', ')}. \`data.record_id\`: ${first!.recordId}.`, ''];
  const rows = fieldRows(record);
  if (rows.length === 0) lines.push(`\`data.record\`: ${typeText(record)}${typeof record.description === 'string' ? ` (${record.description})` : ''}.`);
  else lines.push(`\`data.record\` (${openness(record)}):`, '', markdownTable(['field', 'type', 'required', 'note'], rows));
  const variants = [...new Map(entries.map((entry) => [JSON.stringify(entry.changes), entry.changes])).values()];
  for (const changes of variants) {
    const of = entries.filter((entry) => JSON.stringify(entry.changes) === JSON.stringify(changes));
    const which = variants.length > 1 ? ` of ${of.map((entry) => code(entry.type)).join(', ')}` : '';
    const properties = (changes.properties ?? {}) as Record<string, JsonSchema>;
    if (Object.keys(properties).length === 0) {
      lines.push('', `\`data.changes\`${which}: ${openness(changes)}.`);
      continue;
    }
    const required = new Set((changes.required ?? []) as string[]);
    const rows = Object.entries(properties).map(([field, change]) => {
      const sides = (change.properties ?? {}) as Record<string, JsonSchema>;
      return [code(field), typeText(sides.old ?? {}), typeText(sides.new ?? {}), required.has(field) ? 'yes' : 'when it changed'];
    });
    lines.push('', `\`data.changes\`${which} (${openness(changes)}):`, '', markdownTable(['field', 'old', 'new', 'present'], rows));
  }
  if (first!.error) lines.push('', '`data.error`: string, why the item failed (the field and the rule).');
  return lines.join('\n');
}

/** docs/events.md's generated part: the table of every event type, then the records and changes. */
export function renderEventTypes(streams: readonly RegisteredStream[]): string {
  const entries = changelogEventTypes(streams);
  const table = markdownTable(
    ['event type', '`data.stream`', '`data.record_id`', 'what happened'],
    [
      ...entries.map((entry) => [code(entry.type), entry.streams.length === 1 ? code(entry.streams[0]!) : 'the stream\'s name', entry.recordId, entry.description]),
      [code('webhook.test'), 'none', 'none', 'Sent by `webhooks send-test` to one endpoint; not in the changelog; `data` is `{ endpoint, message }`.'],
    ],
  );
  const sections: string[] = [];
  const byRecord = new Map<string, EventTypeEntry[]>();
  for (const entry of entries) {
    const key = `${entry.streams.join(',')} ${JSON.stringify(entry.record)}`;
    byRecord.set(key, [...(byRecord.get(key) ?? []), entry]);
  }
  for (const group of byRecord.values()) {
    const stream = streams.find((candidate) => candidate.changes.events.includes(group[0]!.type));
    sections.push(recordSection(stream ? `\`${stream.name}\` records` : group.map((entry) => code(entry.type)).join(', '), group));
  }
  return [table, ...sections].join('\n\n');
}

/**
 * docs/event-schemas.json: `{ "schemas": { type: schema } }`, the document `GET /schemas` serves, one
 * type's schema a line (a change to one type is a change of its line).
 */
export function renderEventSchemasJson(streams: readonly RegisteredStream[]): string {
  const lines = Object.entries(eventSchemas(streams)).map(([type, schema]) => `  ${JSON.stringify(type)}: ${JSON.stringify(schema)}`);
  return `{"schemas": {\n${lines.join(',\n')}\n}}\n`;
}
