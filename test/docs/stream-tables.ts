/**
 * The docs' stream tables, rendered from the stream registry (`STREAM_LIST`,
 * src/streams/definitions.ts): the streams and their list requests (docs/sync.md), the stream tables'
 * typed columns and the streams' event types (docs/mirror.md), every event type with its record and
 * changes (docs/events.md, event-docs.ts). Each sits in its doc between `<!-- BEGIN name ... -->` and
 * `<!-- END name -->`; whole generated files (`GENERATED_FILES`: docs/event-schemas.json, the event
 * schemas; docs/openapi.json, the OpenAPI document of the daemon's routes) are written entire. test/docs/docs.test.ts fails when one differs from what the registry
 * renders, and `npm run docs:streams` (this file run as a script) writes them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STREAM_LIST, type RegisteredStream } from '../../src/streams/definitions.ts';
import type { ColumnDefinition } from '../../src/streams/define-stream.ts';
import { daemonRouteSpecs } from '../../jobs/daemon-routes.ts';
import { renderOpenApi } from '../../src/http/openapi-route.ts';
import { renderEventSchemasJson, renderEventTypes } from './event-docs.ts';

/** The checkout's root. */
const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

/** One generated table: the doc (relative to the checkout) it sits in, its marker name, and how it is rendered. */
export interface GeneratedTable {
  file: string;
  name: string;
  render(streams: readonly RegisteredStream[]): string;
}

const code = (text: string) => `\`${text}\``;

/** A markdown table. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')).replaceAll(' ', ''), ...rows.map(line)].join('\n');
}

function columnText(column: ColumnDefinition): string {
  return column.note ? `${code(column.column)} (${column.note})` : code(column.column);
}

/** A stream's partitions for the docs: `none`, or its parameter and where its values come from. */
function partitionsText(stream: RegisteredStream): string {
  const partitions = stream.partitions;
  if (!partitions) return 'none';
  const configured = code(`sync.partitions.${stream.name}.${partitions.param}`);
  if (partitions.values.from === 'configuration') return `one per ${code(partitions.param)}: ${configured} and the values its own mirrored records hold`;
  return `one per ${code(partitions.param)}: ${configured}, the ${code(partitions.values.field)} values of ${code(partitions.values.stream)} in the mirror and those its own mirrored records hold`;
}

/** Every generated table of the docs. */
export const GENERATED_TABLES: readonly GeneratedTable[] = [
  {
    file: 'docs/sync.md',
    name: 'streams',
    render: (streams) =>
      markdownTable(
        ['stream', 'list endpoint', 'spec', 'items key', 'cursor strategy', 'a 404', 'partitions'],
        streams.map((stream) => [
          code(stream.name),
          code(`GET ${stream.request.path}`),
          stream.specSection,
          code(`content.${stream.request.itemsKey}`),
          stream.request.cursor === 'complete-scan' ? 'complete scan' : code(stream.request.cursor),
          stream.request.unsupportedOn404 ? 'marks it unsupported' : 'fails the run',
          partitionsText(stream),
        ]),
      ),
  },
  {
    file: 'docs/mirror.md',
    name: 'stream-tables',
    render: (streams) =>
      markdownTable(
        ['table', "typed columns of the list item's fields (its listed fields)", 'typed columns only write responses fill'],
        streams.map((stream) => {
          const listed = new Set(stream.listedFields);
          const fromWrites = stream.columns.filter((column) => !listed.has(column.field));
          return [
            code(stream.table),
            stream.columns.filter((column) => listed.has(column.field)).map(columnText).join(', '),
            fromWrites.length > 0 ? fromWrites.map(columnText).join(', ') : 'none',
          ];
        }),
      ),
  },
  {
    file: 'docs/mirror.md',
    name: 'stream-events',
    render: (streams) =>
      markdownTable(
        ['stream', 'event types', 'a record gone from two complete scans'],
        streams.map((stream) => [code(stream.name), stream.changes.events.map(code).join(', '), code(stream.changes.gone)]),
      ),
  },
  { file: 'docs/events.md', name: 'event-types', render: renderEventTypes },
];

/** One generated file, written whole: where it is (relative to the checkout) and how it is rendered. */
export interface GeneratedFile {
  file: string;
  render(streams: readonly RegisteredStream[]): string | Promise<string>;
}

/** docs/openapi.json: the OpenAPI document of every route the daemon declares (the one `GET /openapi.json` serves). */
async function renderOpenApiJson(): Promise<string> {
  return `${JSON.stringify(await renderOpenApi(await daemonRouteSpecs()), null, 2)}\n`;
}

/** Every file of the docs generated whole. */
export const GENERATED_FILES: readonly GeneratedFile[] = [
  { file: 'docs/event-schemas.json', render: renderEventSchemasJson },
  { file: 'docs/openapi.json', render: renderOpenApiJson },
];

const begin = (name: string) => `<!-- BEGIN ${name}: generated from the stream registry (src/streams/definitions.ts) by npm run docs:streams -->`;
const end = (name: string) => `<!-- END ${name} -->`;

/**
 * The text between a table's markers in `text` (without the newlines around it).
 * @throws Error naming the markers when the doc lacks them
 */
export function generatedPart(text: string, table: GeneratedTable): string {
  const from = text.indexOf(begin(table.name));
  const to = text.indexOf(end(table.name));
  if (from < 0 || to < from) throw new Error(`${table.file} needs the lines ${begin(table.name)} and ${end(table.name)} around its ${table.name} table`);
  return text.slice(from + begin(table.name).length, to).trim();
}

/** `text` with the table's part replaced by `body`. */
function withGeneratedPart(text: string, table: GeneratedTable, body: string): string {
  generatedPart(text, table);
  const from = text.indexOf(begin(table.name)) + begin(table.name).length;
  return `${text.slice(0, from)}\n${body}\n${text.slice(text.indexOf(end(table.name)))}`;
}

/** Reads a doc of the checkout. */
export function readDoc(file: string): string {
  return readFileSync(join(CHECKOUT, file), 'utf8');
}

/** Writes every generated table into its doc and every generated file; returns the docs it changed. */
export async function writeGeneratedTables(streams: readonly RegisteredStream[] = STREAM_LIST): Promise<string[]> {
  const changed: string[] = [];
  for (const file of new Set(GENERATED_TABLES.map((table) => table.file))) {
    const before = readDoc(file);
    const after = GENERATED_TABLES.filter((table) => table.file === file).reduce((text, table) => withGeneratedPart(text, table, table.render(streams)), before);
    if (after !== before) {
      writeFileSync(join(CHECKOUT, file), after);
      changed.push(file);
    }
  }
  for (const generated of GENERATED_FILES) {
    const after = await generated.render(streams);
    let before: string | undefined;
    try {
      before = readDoc(generated.file);
    } catch {
      before = undefined;
    }
    if (after !== before) {
      writeFileSync(join(CHECKOUT, generated.file), after);
      changed.push(generated.file);
    }
  }
  return changed;
}

if (import.meta.main) {
  const changed = await writeGeneratedTables();
  console.log(changed.length > 0 ? `wrote the generated parts of ${changed.join(', ')}` : 'the generated docs are up to date');
}
