/**
 * The partitions of a partitioned stream (docs/sync.md "Partitioned streams"): the values of its
 * required list parameter, from the configuration (`sync.partitions.<stream>.<param>`, which always
 * wins) or from a column of another stream already in the mirror (`PartitionValues`,
 * src/streams/define-stream.ts). Read when a run starts.
 */
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { StreamDefinition } from '../streams/define-stream.ts';
import { streamByName } from '../streams/definitions.ts';

/** Configured partition values: stream name -> parameter -> values (config `sync.partitions`). */
export type ConfiguredPartitions = Readonly<Record<string, Readonly<Record<string, readonly string[]>>>>;

/** Where a partitioned stream's values come from, as `status` and logs say it. */
export function partitionSource(stream: Pick<StreamDefinition, 'name' | 'partitions'>, configured: ConfiguredPartitions | undefined): string {
  const partitions = stream.partitions;
  if (!partitions) return 'not partitioned';
  const key = `sync.partitions.${stream.name}.${partitions.param}`;
  if (configured?.[stream.name]?.[partitions.param]) return key;
  if (partitions.values.from === 'configuration') return key;
  return `the ${partitions.values.field} of the ${partitions.values.stream} in the mirror (or ${key})`;
}

/**
 * Why a partitioned stream has no partition, in one line naming where they would come from.
 * @param stream a partitioned stream
 */
export function noPartitionsMessage(stream: Pick<StreamDefinition, 'name' | 'partitions'>, configured: ConfiguredPartitions | undefined): string {
  const param = stream.partitions?.param ?? '?';
  return `no partitions: ${stream.name} is read once per ${param} and none is known (from ${partitionSource(stream, configured)}); nothing is requested until ${param} values are configured or mirrored`;
}

/**
 * The values of a partitioned stream's parameter, distinct, in order: the configured ones as given,
 * else the distinct non-null values of the source stream's column among its live records (sorted).
 * Empty when none is configured or mirrored (the stream sends no request).
 * @throws Error naming the stream when its source stream or field is not a registered one with a column
 */
export async function partitionValues(executor: SqlExecutor, stream: Pick<StreamDefinition, 'name' | 'partitions'>, configured: ConfiguredPartitions | undefined): Promise<string[]> {
  const partitions = stream.partitions;
  if (!partitions) return [];
  const listed = configured?.[stream.name]?.[partitions.param];
  if (listed) return [...new Set(listed)];
  if (partitions.values.from === 'configuration') return [];
  const { stream: sourceName, field } = partitions.values;
  const source = streamByName(sourceName);
  const column = source.columns.find((candidate) => candidate.field === field)?.column;
  if (column === undefined) throw new Error(`stream ${stream.name}: its partitions come from ${sourceName}.${field}, which has no column`);
  const rows = await executor.all<{ value: unknown }>(`SELECT DISTINCT ${column} AS value FROM ${source.table} WHERE deleted_at IS NULL AND ${column} IS NOT NULL ORDER BY ${column}`);
  return rows.map((row) => String(row.value)).filter((value) => value !== '');
}
