/**
 * The partitions of a partitioned stream (docs/sync.md "Partitioned streams"): the values of its
 * required list parameter, the union of three sources, read when a run (or a verification) starts:
 *   - configured: `sync.partitions.<stream>.<param>`, as given;
 *   - derived: the distinct values of a column of another stream in the mirror (`PartitionValues`
 *     `from: 'stream'`, src/streams/define-stream.ts: the deals' `locationId`);
 *   - mirrored: the values the stream's own live rows hold. A value nothing configures or derives
 *     any more keeps being read while the mirror holds live records of it: its records are updated,
 *     and tombstoned only when complete scans of it prove them gone (the two-scan rule), after which
 *     the value drops out.
 * A value no source names is never read: `status` and the backfill's summary say where the values
 * come from and how many there are, and name the configuration key that adds values.
 */
import type { PartitionSources } from '../mirror/mirror-store.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { partitionColumn, type StreamDefinition } from '../streams/define-stream.ts';
import { streamByName } from '../streams/definitions.ts';

/** Configured partition values: stream name -> parameter -> values (config `sync.partitions`). */
export type ConfiguredPartitions = Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;

/** A partitioned stream's values (in the order they are read: the configured ones as given, then the others sorted) and where they came from. */
export interface PartitionSet extends PartitionSources {
  values: string[];
}

/** The configuration key of a partitioned stream's values: `sync.partitions.<stream>.<param>`. */
export function partitionKey(stream: Pick<StreamDefinition, 'name' | 'partitions'>): string {
  return `sync.partitions.${stream.name}.${stream.partitions?.param ?? '?'}`;
}

/** Where a partitioned stream's values come from, as `status` and logs say it (without counts). */
export function partitionSource(stream: Pick<StreamDefinition, 'name' | 'partitions'>): string {
  const partitions = stream.partitions;
  if (!partitions) return 'not partitioned';
  const key = partitionKey(stream);
  const derived = partitions.values.from === 'stream' ? `the ${partitions.values.field} of the ${partitions.values.stream} in the mirror, ` : '';
  return `${key}, ${derived}and the ${partitions.param} values of its own mirrored records`;
}

/**
 * Where a partitioned stream's values came from and how many, in one line for `status` and the
 * backfill's summary: `3 locationId values: 1 from sync.partitions.qa_corrective_actions.locationId,
 * 2 from the locationId of the deals in the mirror, 1 from its own mirrored records; a value none of
 * them names is not read (add it to sync.partitions.qa_corrective_actions.locationId)`.
 */
export function describePartitions(stream: Pick<StreamDefinition, 'name' | 'partitions'>, set: PartitionSources): string {
  const param = stream.partitions?.param ?? '?';
  const parts = [`${set.sources.configured} from ${set.key}`];
  if (set.derivedFrom !== null) parts.push(`${set.sources.derived} from ${set.derivedFrom}`);
  parts.push(`${set.sources.mirrored} from its own mirrored records`);
  return `${set.count} ${param} value${set.count === 1 ? '' : 's'} (${parts.join(', ')}); a value none of them names is not read (add it to ${set.key})`;
}

/** A partition set without its values: what the stream's row keeps (`sync_state.partitions`). */
export function partitionSources(set: PartitionSet): PartitionSources {
  return { count: set.values.length, sources: { ...set.sources }, key: set.key, derivedFrom: set.derivedFrom };
}

/**
 * Why a partitioned stream has no partition, in one line naming where they would come from.
 * @param stream a partitioned stream
 */
export function noPartitionsMessage(stream: Pick<StreamDefinition, 'name' | 'partitions'>, _configured?: ConfiguredPartitions): string {
  const param = stream.partitions?.param ?? '?';
  return `no partitions: ${stream.name} is read once per ${param} and none is known (from ${partitionSource(stream)}); nothing is requested until ${param} values are configured or mirrored`;
}

/**
 * The values of a partitioned stream's parameter (module comment): the configured ones, the derived
 * ones and those its own live rows hold, distinct. Empty when no source names one (the stream sends
 * no request).
 * @throws Error naming the stream when its source stream or field is not a registered one with a column
 */
export async function readPartitions(executor: SqlExecutor, stream: Pick<StreamDefinition, 'name' | 'partitions' | 'columns' | 'table'>, configured: ConfiguredPartitions | undefined): Promise<PartitionSet> {
  const partitions = stream.partitions;
  const set: PartitionSet = { values: [], count: 0, sources: { configured: 0, derived: 0, mirrored: 0 }, key: partitionKey(stream), derivedFrom: null };
  if (!partitions) return set;
  const listed = [...new Set(configured?.[stream.name]?.[partitions.param] ?? [])];
  set.sources.configured = listed.length;
  const others = new Set<string>();
  if (partitions.values.from === 'stream') {
    const { stream: sourceName, field } = partitions.values;
    const source = streamByName(sourceName);
    const column = source.columns.find((candidate) => candidate.field === field)?.column;
    if (column === undefined) throw new Error(`stream ${stream.name}: its partitions come from ${sourceName}.${field}, which has no column`);
    set.derivedFrom = `the ${field} of the ${sourceName} in the mirror`;
    const derived = await distinctValues(executor, source.table, column);
    set.sources.derived = derived.length;
    for (const value of derived) others.add(value);
  }
  const own = partitionColumn(stream);
  if (own === undefined) throw new Error(`stream ${stream.name}: partitions.param ${partitions.param} has no column`);
  const mirrored = await distinctValues(executor, stream.table, own);
  set.sources.mirrored = mirrored.length;
  for (const value of mirrored) others.add(value);
  const first = new Set(listed);
  set.values = [...listed, ...[...others].filter((value) => !first.has(value)).sort()];
  set.count = set.values.length;
  return set;
}

/**
 * The values of a partitioned stream's parameter (`readPartitions` without their sources).
 * @throws Error naming the stream when its source stream or field is not a registered one with a column
 */
export async function partitionValues(executor: SqlExecutor, stream: Pick<StreamDefinition, 'name' | 'partitions' | 'columns' | 'table'>, configured: ConfiguredPartitions | undefined): Promise<string[]> {
  return (await readPartitions(executor, stream, configured)).values;
}

/** The distinct non-empty values of `column` among the live rows of `table`. */
async function distinctValues(executor: SqlExecutor, table: string, column: string): Promise<string[]> {
  const rows = await executor.all<{ value: unknown }>(`SELECT DISTINCT ${column} AS value FROM ${table} WHERE deleted_at IS NULL AND ${column} IS NOT NULL`);
  return rows.map((row) => String(row.value)).filter((value) => value !== '');
}
