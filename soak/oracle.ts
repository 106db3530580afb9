/**
 * The oracle: what must hold whatever the schedule did (docs/soak.md "What the oracle checks").
 * During the run, after every step: no gone event (a deletion, a completion) for a record the truth
 * listed at that moment; every sink's events per record a prefix of the changelog's (chained
 * checksums); no bad signature. At quiescence, besides: the mirror equals the truth for every stream
 * and partition; every sink got every event but those still in flight; each record's last event
 * carries what the mirror holds; every acknowledged write had exactly one effect (or none, failed, or
 * is needs_review for a true reason); `verify` exits 0; the API answered no 429.
 */
import type { RunningSimulator, StreamName } from '@bizops-sync/simulator';
import { declaredFieldPaths } from '../src/mirror/change-detection.ts';
import { STREAM_LIST, STREAMS } from '../src/streams/index.ts';
import { canonicalJson, chainProblems, RecordChains, recordKey } from './chain.ts';
import type { MirrorReader } from './mirror-reader.ts';
import type { SoakReceiver } from './receiver.ts';
import type { Schedule } from './schedule.ts';
import { visiblePartitions, type TruthTimeline } from './truth.ts';
import { effectsOf, writeProblem, type SoakWrite } from './writes.ts';

/** What the oracle reads besides the mirror. */
export interface OracleInput {
  simulator: RunningSimulator;
  timeline: TruthTimeline;
  receivers: { a: SoakReceiver; b: SoakReceiver };
  /** The broker sinks, as their readers saw them: `events` their filter, `read()` reads what is new. */
  sinks: BrokerSinkView[];
  consumer: RecordChains;
  writes: SoakWrite[];
  /** Marks of writes intake had to refuse: none may reach the API. */
  refusedMarks: string[];
  schedule: Schedule;
}

/** A broker sink as the soak's reader of it sees it. */
export interface BrokerSinkView {
  /** The sink's name in the configuration (its row in `webhook_endpoints`). */
  name: string;
  /** Its event filter. */
  events: string[];
  chains: RecordChains;
  /** What the reader saw that no sink may publish. */
  problems: string[];
  /** Reads what the broker holds now (never throws). */
  read(): Promise<void>;
}

/**
 * The changelog as a broker sink is to get it: a sink never publishes the condition events about
 * itself (`sink.failing`, `sink.recovered`: stream `sinks`, record id the sink's name; docs/sinks.md
 * "Condition events").
 */
function forSink(changes: readonly ChangeRow[], sink: string): ChangeRow[] {
  return changes.filter((change) => !(change.stream === 'sinks' && change.recordId === sink));
}

/** Each endpoint's event filter, as configured by the harness (docs/webhooks.md "Endpoints"). */
export const RECEIVER_EVENTS: Record<'a' | 'b', string[]> = {
  a: ['*'],
  b: ['deal.*', 'transaction.*', 'qa_action.*', 'onboarding.*', 'write.*'],
};

/** The gone event of each stream: a record missing from two complete scans. */
const GONE_TYPES: ReadonlySet<string> = new Set(STREAM_LIST.map((stream) => stream.changes.gone as string));

function matches(patterns: readonly string[], type: string): boolean {
  return patterns.some((pattern) => pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))));
}

/** One changelog row, decoded. */
export interface ChangeRow {
  seq: number;
  eventId: string;
  type: string;
  stream: string;
  recordId: string;
  occurredAt: string;
  record: unknown;
  /** `data.changes` (absent for a created event of data format 2). */
  changes?: Record<string, unknown>;
}

/** The whole changelog, in seq order. */
export async function readChangelog(reader: MirrorReader): Promise<ChangeRow[]> {
  const rows = await reader.all<{ seq: number | string; event_id: string; type: string; stream: string; record_id: string; occurred_at: string; data: string }>(
    'SELECT seq, event_id, type, stream, record_id, occurred_at, data FROM changes ORDER BY seq',
  );
  return rows.map((row) => ({
    seq: Number(row.seq),
    eventId: row.event_id,
    type: row.type,
    stream: row.stream,
    recordId: row.record_id,
    occurredAt: row.occurred_at,
    ...decodeData(row.data),
  }));
}

function decodeData(text: string): { record: unknown; changes?: Record<string, unknown> } {
  return dataParts(JSON.parse(text) as { record?: unknown; changes?: Record<string, unknown> });
}

/** A change's `data` as the oracle compares it: its record (null when absent) and its field changes when it has them. */
function dataParts(data: { record?: unknown; changes?: Record<string, unknown> } | undefined): { record: unknown; changes?: Record<string, unknown> } {
  return { record: data?.record ?? null, ...(data?.changes ? { changes: data.changes } : {}) };
}

/** The changelog's chains, over the events `patterns` lets through. */
function changelogChains(changes: readonly ChangeRow[], patterns: readonly string[] = ['*']): RecordChains {
  const chains = new RecordChains();
  for (const change of changes) if (matches(patterns, change.type)) chains.append(change);
  return chains;
}

/**
 * Compares every stream's live mirror rows with the truth's list (every partition).
 * @returns `summary` '' when equal (else one clause per stream), and how many records were compared
 */
export async function mirrorDifferences(reader: MirrorReader, simulator: RunningSimulator): Promise<{ summary: string; records: number; lines: string[] }> {
  const clauses: string[] = [];
  const lines: string[] = [];
  let records = 0;
  for (const definition of STREAM_LIST) {
    const stream = definition.name as StreamName;
    // A partitioned stream: the partitions a client can know of (soak/truth.ts visiblePartitions).
    const visible = definition.partitions ? visiblePartitions(simulator) : undefined;
    const truth = simulator.world.groundTruth(stream).filter((record) => !visible || visible.has(String(record.locationId)));
    const rows = await reader.all<{ id: string; raw: string }>(`SELECT id, raw FROM ${STREAMS[definition.name].table} WHERE deleted_at IS NULL`);
    const mirrored = new Map(rows.filter((row) => !visible || visible.has(String((JSON.parse(row.raw) as { locationId?: unknown }).locationId))).map((row) => [row.id, row.raw]));
    const missing: string[] = [];
    const stale: string[] = [];
    for (const record of truth) {
      records += 1;
      const id = String(record.id);
      const raw = mirrored.get(id);
      mirrored.delete(id);
      if (raw === undefined) missing.push(id);
      else if (canonicalJson(JSON.parse(raw)) !== canonicalJson(record)) stale.push(id);
    }
    const extra = [...mirrored.keys()];
    if (missing.length + stale.length + extra.length > 0) {
      clauses.push(`${stream}: ${missing.length} missing, ${extra.length} extra, ${stale.length} stale`);
      if (missing.length) lines.push(`${stream}: missing from the mirror: ${missing.slice(0, 5).join(', ')}`);
      if (extra.length) lines.push(`${stream}: live in the mirror, not listed by the API: ${extra.slice(0, 5).join(', ')}`);
      for (const id of stale.slice(0, 3)) {
        const truthRecord = truth.find((record) => String(record.id) === id)!;
        const raw = JSON.parse(rows.find((row) => row.id === id)!.raw) as Record<string, unknown>;
        const fields = [...new Set([...Object.keys(raw), ...Object.keys(truthRecord)])].filter((field) => canonicalJson(raw[field]) !== canonicalJson(truthRecord[field]));
        lines.push(`${stream}: ${id} differs in ${fields.map((field) => `${field} (mirror ${canonicalJson(raw[field])}, API ${canonicalJson(truthRecord[field])})`).join(', ')}`);
      }
    }
  }
  return { summary: clauses.join('; '), records, lines };
}

/** Gone events (`*.deleted`, `onboarding.completed`) for a record the truth listed when the event was recorded. */
function falseDeletions(changes: readonly ChangeRow[], timeline: TruthTimeline): string[] {
  const problems: string[] = [];
  for (const change of changes) {
    if (!GONE_TYPES.has(change.type)) continue;
    const key = recordKey(change);
    const at = Date.parse(change.occurredAt);
    if (timeline.liveAt(key, at)) problems.push(`false-deletion: ${change.type} (seq ${change.seq}) for ${key} at ${change.occurredAt}, while the API listed it`);
  }
  return problems;
}

/**
 * Each update event names every field that changed since the record's previous event: a field whose
 * value differs between the two events' records (present in both) must be in `data.changes`
 * (`missed-change`). And it changes something: an update event whose record equals the previous
 * event's, field for field (instants compared as instants), is a change the API never made
 * (`invented-change`: e.g. the same items served with their keys in another order, or their times
 * in another style, taken for new versions).
 */
function incompleteChanges(changes: readonly ChangeRow[]): string[] {
  const previous = new Map<string, ChangeRow>();
  const problems: string[] = [];
  for (const change of changes) {
    if (!(change.stream in STREAMS) || /^(record|schema|stream)\./.test(change.type)) continue;
    const key = recordKey(change);
    const before = previous.get(key);
    previous.set(key, change);
    if (!before || !change.changes || GONE_TYPES.has(change.type) || GONE_TYPES.has(before.type)) continue;
    const old = flatten(before.record);
    const now = flatten(change.record);
    const differing = [...now].filter(([path, value]) => old.has(path) && old.get(path) !== value && !(path in change.changes!) && !(path.split('.')[0]! in change.changes!));
    if (differing.length > 0) problems.push(`missed-change: ${change.type} (seq ${change.seq}) of ${key} does not name ${differing.map(([path]) => path).join(', ')} among its changes, though it differs from the previous event (seq ${before.seq})`);
    if (now.size === old.size && [...now].every(([path, value]) => old.get(path) === value)) {
      problems.push(`invented-change: ${change.type} (seq ${change.seq}) of ${key} carries the same record as the previous event (seq ${before.seq}): nothing changed`);
    }
  }
  return problems;
}

/**
 * No event sets a record back: of a stream whose records carry `updatedAt`, each record's events
 * carry stamps that never go below one an earlier event of it carried (a page read before a
 * write-through, applied after it, would: docs/sync.md "Write-throughs during a run"). The soak's
 * world never sets a stamp back itself.
 */
function revertedRecords(changes: readonly ChangeRow[]): string[] {
  const newest = new Map<string, { at: number; seq: number }>();
  const problems: string[] = [];
  for (const change of changes) {
    if (!(change.stream in STREAMS) || /^(record|schema|stream)\./.test(change.type)) continue;
    const stamp = (change.record as { updatedAt?: unknown } | null)?.updatedAt;
    const at = typeof stamp === 'string' ? Date.parse(stamp) : Number.NaN;
    if (!Number.isFinite(at)) continue;
    const key = recordKey(change);
    const before = newest.get(key);
    if (before && at < before.at) {
      problems.push(`reverted: ${change.type} (seq ${change.seq}) of ${key} carries updatedAt ${String(stamp)}, older than the ${new Date(before.at).toISOString()} its event seq ${before.seq} carried`);
      continue;
    }
    newest.set(key, { at, seq: change.seq });
  }
  return problems;
}

/** The checks after every step. */
export async function stepChecks(reader: MirrorReader, input: OracleInput): Promise<string[]> {
  // What each sink held before the changelog is read: only that much of it is judged (chainProblems).
  const reached = {
    a: input.receivers.a.chains.lengths(),
    b: input.receivers.b.chains.lengths(),
    consumer: input.consumer.lengths(),
    sinks: input.sinks.map((sink) => sink.chains.lengths()),
  };
  const changes = await readChangelog(reader);
  const problems = falseDeletions(changes, input.timeline);
  problems.push(...revertedRecords(changes).slice(0, 5));
  problems.push(...incompleteChanges(changes).slice(0, 5));
  for (const name of ['a', 'b'] as const) {
    problems.push(...chainProblems(`order: receiver ${name}`, changelogChains(changes, RECEIVER_EVENTS[name]), input.receivers[name].chains, reached[name]));
    problems.push(...input.receivers[name].problems.map((line) => `signature: ${line}`));
  }
  problems.push(...chainProblems('order: pull consumer', changelogChains(changes), input.consumer, reached.consumer));
  input.sinks.forEach((sink, index) => {
    problems.push(...chainProblems(`order: sink ${sink.name}`, changelogChains(forSink(changes, sink.name), sink.events), sink.chains, reached.sinks[index]));
    problems.push(...sink.problems.map((line) => `order: ${line}`));
  });
  return problems;
}

/** An ISO 8601 date-time with a zone: `Z`, `+00:00`, with or without a fraction. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Flattens a record into dot paths (arrays whole). A time is the instant it names (the project
 * compares instants, not text: `...T00:00:00Z` and `...T00:00:00.000Z` are one value).
 */
function flatten(value: unknown, prefix = '', out: Map<string, string> = new Map()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, member] of Object.entries(value as Record<string, unknown>)) flatten(member, prefix ? `${prefix}.${key}` : key, out);
  } else if (prefix) {
    out.set(prefix, typeof value === 'string' && INSTANT.test(value) ? `instant ${Date.parse(value)}` : canonicalJson(value));
  }
  return out;
}

/** Each live record's last event must carry what the mirror holds: a change the mirror took without an event is a missed change. */
async function lastEventProblems(reader: MirrorReader, changes: readonly ChangeRow[]): Promise<{ problems: string[]; checked: number }> {
  const last = new Map<string, ChangeRow>();
  for (const change of changes) if (change.stream in STREAMS && !change.type.startsWith('record.') && !change.type.startsWith('schema.') && !change.type.startsWith('stream.')) last.set(recordKey(change), change);
  const undeclared = new Set((await reader.all<{ stream: string; field: string }>('SELECT stream, field FROM stream_fields')).map((row) => `${row.stream}/${row.field}`));
  const problems: string[] = [];
  let checked = 0;
  for (const definition of STREAM_LIST) {
    // Declared fields the list never serves (a write response's, e.g. a transaction's createdAt): a
    // record listed first gains them from a write-through with no event (docs/sync.md "No-op
    // suppression": a field only a write response carries changes nothing), so an event may lack them.
    const listed = new Set(definition.listedFields);
    const responseOnly = new Set([...declaredFieldPaths(definition)].filter((path) => !listed.has(path)));
    const rows = await reader.all<{ id: string; raw: string }>(`SELECT id, raw FROM ${definition.table} WHERE deleted_at IS NULL`);
    for (const row of rows) {
      checked += 1;
      const change = last.get(`${definition.name}/${row.id}`);
      if (!change) {
        problems.push(`missed-change: ${definition.name}/${row.id} is live in the mirror with no event in the changelog`);
        continue;
      }
      const stored = flatten(JSON.parse(row.raw));
      const announced = flatten(change.record);
      const differing = [...stored].filter(([path, value]) => {
        const said = announced.get(path);
        if (said === undefined) return !undeclared.has(`${definition.name}/${path}`) && !responseOnly.has(path) && value !== 'null';
        return said !== value;
      });
      if (differing.length > 0) {
        problems.push(
          `missed-change: ${definition.name}/${row.id}: the mirror holds ${differing
            .slice(0, 3)
            .map(([path, value]) => `${path} = ${value}`)
            .join(', ')}, its last event (${change.type}, seq ${change.seq}) says ${differing
            .slice(0, 3)
            .map(([path]) => `${path} = ${announced.get(path) ?? 'nothing'}`)
            .join(', ')}`,
        );
      }
    }
  }
  return { problems, checked };
}

/** Options of the final checks. */
export interface FinalOptions {
  /** ms epoch until which the checks that wait (writes, deliveries) may wait. */
  deadline: number;
  location: string;
  /** Runs `bizops-sync verify --json`; its exit code and output. */
  verify(): Promise<{ code: number | null; output: string }>;
  /** Runs `bizops-sync changes --since 0`; its exit code and stdout (every line). */
  changesCommand(): Promise<{ code: number | null; output: string }>;
}

/**
 * What `bizops-sync changes --since 0` printed against the changelog read from the mirror: every
 * line a JSON object, and every row of `changes` printed once, in seq order, with its event id, type,
 * stream, record id, time, record and field changes. Lines past the changelog's last seq (appended
 * after it was read) are only required to be JSON.
 */
export function changesCommandProblems(output: string, changes: readonly ChangeRow[]): string[] {
  const problems: string[] = [];
  const lastSeq = changes[changes.length - 1]?.seq ?? 0;
  const printed: ChangeRow[] = [];
  let notJson = 0;
  for (const [index, line] of output.split('\n').entries()) {
    if (line === '') continue;
    let event: { seq?: unknown; event_id?: unknown; type?: unknown; stream?: unknown; record_id?: unknown; occurred_at?: unknown; data?: { record?: unknown; changes?: Record<string, unknown> } };
    try {
      event = JSON.parse(line) as typeof event;
    } catch (error) {
      // The first such line named; the rest counted.
      if (notJson === 0) problems.push(`changes: line ${index + 1} of bizops-sync changes is not JSON (${(error as Error).message}): ${line.slice(0, 200)}`);
      notJson += 1;
      continue;
    }
    if (typeof event.seq !== 'number' || event.seq > lastSeq) continue;
    printed.push({
      seq: event.seq,
      eventId: String(event.event_id),
      type: String(event.type),
      stream: String(event.stream),
      recordId: String(event.record_id),
      occurredAt: String(event.occurred_at),
      ...dataParts(event.data),
    });
  }
  if (notJson > 1) problems.push(`changes: ${notJson} lines of bizops-sync changes are not JSON`);
  if (printed.length !== changes.length) problems.push(`changes: bizops-sync changes printed ${printed.length} events through seq ${lastSeq}, the changelog holds ${changes.length}`);
  const count = Math.min(printed.length, changes.length);
  for (let index = 0; index < count; index += 1) {
    const got = JSON.stringify(printed[index]);
    const want = JSON.stringify(changes[index]);
    if (got !== want) {
      problems.push(`changes: bizops-sync changes printed ${got.slice(0, 300)} where the changelog holds ${want.slice(0, 300)}`);
      break;
    }
  }
  return problems;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How long a target's missing events may stand still, past the final wait's deadline, before the oracle judges them. */
const SINKS_STILL_MS = 10_000;
/** The most the final wait goes on past its deadline while targets are still catching up. */
const SINKS_PROGRESS_CAP_MS = 120_000;

/** Events a sink lacks per record: the changelog's chain minus the sink's. */
function missingEvents(changes: readonly ChangeRow[], patterns: readonly string[], sink: RecordChains): ChangeRow[] {
  const counts = new Map<string, number>();
  const missing: ChangeRow[] = [];
  for (const change of changes) {
    if (!matches(patterns, change.type)) continue;
    const key = recordKey(change);
    const index = counts.get(key) ?? 0;
    counts.set(key, index + 1);
    if (index >= (sink.links.get(key)?.length ?? 0)) missing.push(change);
  }
  return missing;
}

/** The checks at quiescence. */
export async function finalChecks(reader: MirrorReader, input: OracleInput, options: FinalOptions): Promise<{ problems: string[]; recordsChecked: number; eventsChecked: number }> {
  const problems: string[] = [];
  const phases: string[] = [];
  let phaseStart = Date.now();
  const phase = (name: string) => {
    phases.push(`${name} ${((Date.now() - phaseStart) / 1000).toFixed(1)} s`);
    phaseStart = Date.now();
  };
  const mirror = await mirrorDifferences(reader, input.simulator);
  if (mirror.summary) problems.push(`mirror: the mirror differs from the API at quiescence: ${mirror.summary}`, ...mirror.lines.map((line) => `mirror: ${line}`));

  // Writes: every acknowledged one reaches an outcome.
  const writeRows = async () =>
    new Map((await reader.all<{ id: string; status: string; outcome: string | null; error: string | null }>('SELECT id, status, outcome, error FROM writes')).map((row) => [row.id, row]));
  let rows = await writeRows();
  while (Date.now() < options.deadline && input.writes.some((write) => ['queued', 'sending', undefined].includes(rows.get(write.id!)?.status))) {
    await sleep(500);
    rows = await writeRows();
  }
  for (const write of input.writes) {
    const target = JSON.stringify(write.payload.eventId ?? write.payload.draftId ?? write.payload.employeeId ?? write.payload.dealId ?? '');
    const overwritten =
      (write.kind === 'deal.close' && input.schedule.steps.some((step) => step.do === 'churn')) ||
      input.writes.some((other) => other !== write && other.kind === write.kind && JSON.stringify(other.payload.eventId ?? other.payload.draftId ?? other.payload.employeeId ?? other.payload.dealId ?? '') === target);
    const problem = writeProblem(write, rows.get(write.id!), effectsOf(write, input.simulator), overwritten);
    if (problem) problems.push(`writes: ${problem}`);
  }

  for (const mark of input.refusedMarks) {
    if (input.simulator.world.transactions.some((record) => record.description.startsWith(mark))) problems.push(`writes: a write refused at intake (${mark}) reached the API`);
  }

  phase('writes');
  // Sinks: every event delivered but those still in flight (held back by a failing event, or an endpoint paused).
  let changes = await readChangelog(reader);
  const pending = () => {
    const count = missingEvents(changes, RECEIVER_EVENTS.a, input.receivers.a.chains).length + missingEvents(changes, RECEIVER_EVENTS.b, input.receivers.b.chains).length + missingEvents(changes, ['*'], input.consumer).length;
    return count + input.sinks.reduce((sum, sink) => sum + missingEvents(forSink(changes, sink.name), sink.events, sink.chains).length, 0);
  };
  // A target still catching up is not losing events: while the count of missing events keeps
  // falling, the wait goes on past the deadline (up to SINKS_PROGRESS_CAP_MS more) until it stands
  // still for SINKS_STILL_MS. A strict-order endpoint sends one event at a time, each recorded before
  // the next leaves: on a loaded machine a backlog of hundreds takes minutes.
  let missingNow = pending();
  let progressUntil = options.deadline;
  while (missingNow > 0 && Date.now() < Math.min(Math.max(options.deadline, progressUntil), options.deadline + SINKS_PROGRESS_CAP_MS)) {
    await sleep(500);
    changes = await readChangelog(reader);
    for (const sink of input.sinks) await sink.read();
    const missingBefore = missingNow;
    missingNow = pending();
    if (missingNow < missingBefore) progressUntil = Date.now() + SINKS_STILL_MS;
  }
  // Every target, webhook endpoints and broker sinks alike: what it lacks must be explained.
  const targets = [
    ...(['a', 'b'] as const).map((name) => ({ name, label: `receiver ${name}`, events: RECEIVER_EVENTS[name], chains: input.receivers[name].chains, strict: name === 'b', answered: input.receivers[name].counts as object, due: changes })),
    ...input.sinks.map((sink) => ({ name: sink.name, label: `sink ${sink.name}`, events: sink.events, chains: sink.chains, strict: false, answered: undefined as object | undefined, due: forSink(changes, sink.name) })),
  ];
  for (const { name, label, events, chains, strict, answered, due } of targets) {
    const missing = missingEvents(due, events, chains);
    if (missing.length === 0) continue;
    const held = new Set(
      (await reader.all<{ stream: string; record_id: string }>('SELECT stream, record_id FROM webhook_held_events WHERE endpoint = ?', [name])).map((row) => `${row.stream}/${row.record_id}`),
    );
    const failed = new Set((await reader.all<{ seq: number | string }>('SELECT seq FROM webhook_failed_deliveries WHERE endpoint = ?', [name])).map((row) => Number(row.seq)));
    const endpoint = (
      await reader.all<{ next_attempt_at: string | null; disabled_at: string | null; delivered_seq: number | string; attempts: number; last_status: number | null; last_error: string | null }>(
        'SELECT next_attempt_at, disabled_at, delivered_seq, attempts, last_status, last_error FROM webhook_endpoints WHERE name = ?',
        [name],
      )
    )[0];
    const heldSeqs = (await reader.all<{ seq: number | string }>('SELECT seq FROM webhook_held_events WHERE endpoint = ?', [name])).map((row) => Number(row.seq));
    const heldRows = heldSeqs.length;
    // The strict-order endpoint holds back every event after its held one, not only its record's.
    const firstHeld = strict && heldSeqs.length > 0 ? Math.min(...heldSeqs) : Infinity;
    const lastSeq = changes[changes.length - 1]?.seq ?? 0;
    const paused = endpoint !== undefined && (endpoint.disabled_at !== null || (endpoint.next_attempt_at !== null && Date.parse(endpoint.next_attempt_at) > Date.now()));
    const unexplained = missing.filter((change) => !paused && !held.has(recordKey(change)) && !failed.has(change.seq) && change.seq < firstHeld);
    if (unexplained.length > 0) {
      problems.push(
        `lost: ${label} lacks ${unexplained.length} event(s) nothing holds back (endpoint not paused, no held event of their record), e.g. ${unexplained
          .slice(0, 4)
          .map((change) => `seq ${change.seq} ${change.type} ${recordKey(change)}`)
          .join('; ')}; the endpoint's row: delivered_seq ${endpoint?.delivered_seq} of ${lastSeq}, ${heldRows} held, attempts ${endpoint?.attempts}, last status ${endpoint?.last_status}, last error ${endpoint?.last_error}, next attempt ${endpoint?.next_attempt_at}${answered ? `; the receiver answered ${JSON.stringify(answered)}` : ''}`,
      );
    }
  }
  phase('sinks');
  const consumerMissing = missingEvents(changes, ['*'], input.consumer);
  if (consumerMissing.length > 0) problems.push(`lost: the pull consumer lacks ${consumerMissing.length} event(s) after quiescence, e.g. seq ${consumerMissing.slice(0, 4).map((change) => change.seq).join(', ')}`);
  problems.push(...(await stepChecks(reader, input)));
  // The strict-order endpoint: first deliveries in the changelog's order, across records too.
  const order = input.receivers.b.order;
  for (let index = 1; index < order.length; index += 1) {
    if (order[index]! < order[index - 1]!) {
      problems.push(`order: receiver b (ordering "endpoint") got seq ${order[index]} after seq ${order[index - 1]}`);
      break;
    }
  }

  const last = await lastEventProblems(reader, changes);
  problems.push(...last.problems.slice(0, 10));

  const counts = input.simulator.requestCounts().A!;
  if (counts.rateLimited > 0) problems.push(`rate-limit: the API answered ${counts.rateLimited} requests with 429 (of ${counts.requests})`);

  // The changelog as `bizops-sync changes` prints it: the same events, each line JSON.
  const printed = await options.changesCommand();
  if (printed.code !== 0) problems.push(`changes: bizops-sync changes --since 0 exited ${printed.code} (0 promised)`);
  else problems.push(...changesCommandProblems(printed.output, changes));

  phase('checks');
  const verify = await options.verify();
  phase('verify');
  if (process.env.SOAK_VERBOSE) console.log(`  final checks: ${phases.join(', ')}`);
  if (verify.code !== 0) problems.push(`verify: bizops-sync verify exited ${verify.code} at quiescence (0 promised when the mirror equals the API): ${verify.output.replace(/\s+/g, ' ').slice(0, 600)}`);

  const eventsChecked = changes.length + input.receivers.a.chains.count + input.receivers.b.chains.count + input.consumer.count + input.sinks.reduce((sum, sink) => sum + sink.chains.count, 0);
  return { problems, recordsChecked: mirror.records + last.checked, eventsChecked };
}
