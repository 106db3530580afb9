/**
 * Chained checksums per record (as Sequin proves delivery per message group): for each record
 * (`stream/record_id`), link n is sha256(link n-1, event id, type, seq, the record's canonical JSON).
 * The changelog's chain and a sink's chain agree at every length a sink reached when the sink got
 * every event of the record, once each, in the changelog's order, with the same content.
 */
import { createHash } from 'node:crypto';

/** One event as the chain sees it: what the changelog row and the webhook body both carry. */
export interface ChainEvent {
  eventId: string;
  type: string;
  seq: number;
  stream: string;
  recordId: string;
  record: unknown;
}

/** JSON with object keys sorted, so two equal records hash alike whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, member]) => member !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
}

/** The record key a chain is kept under. */
export function recordKey(event: Pick<ChainEvent, 'stream' | 'recordId'>): string {
  return `${event.stream}/${event.recordId}`;
}

/** Per record, the chain's links in order (link i covers the record's first i + 1 events). */
export class RecordChains {
  readonly links = new Map<string, string[]>();
  /** Per record, the seqs in the order they were appended (for reports). */
  readonly seqs = new Map<string, number[]>();
  count = 0;

  /** Per record, how many events the chain holds now: what {@link chainProblems} may judge of it after a later changelog read. */
  lengths(): Map<string, number> {
    const lengths = new Map<string, number>();
    for (const [key, links] of this.links) lengths.set(key, links.length);
    return lengths;
  }

  /** Appends `event` to its record's chain; returns the new link. */
  append(event: ChainEvent): string {
    const key = recordKey(event);
    const links = this.links.get(key) ?? [];
    const previous = links[links.length - 1] ?? '';
    const link = createHash('sha256')
      .update(`${previous}|${event.eventId}|${event.type}|${event.seq}|${canonicalJson(event.record)}`)
      .digest('hex')
      .slice(0, 32);
    links.push(link);
    this.links.set(key, links);
    const seqs = this.seqs.get(key) ?? [];
    seqs.push(event.seq);
    this.seqs.set(key, seqs);
    this.count += 1;
    return link;
  }
}

/**
 * Compares a sink's chains with the changelog's: every record's sink chain must be a prefix of the
 * changelog's (same links at every length). Returns one line per record that breaks it (events out of
 * order, one skipped, doubled, or content changed on the way).
 *
 * `reached` (from `sink.lengths()` taken BEFORE the changelog was read) limits each record's chain to
 * what the sink held then: a sink that receives while the changelog is read (a webhook receiver in
 * this process, answering during the query) may hold events committed after the read's snapshot,
 * which the read cannot show. Every event a sink held before the read was committed before it.
 */
export function chainProblems(sinkName: string, changelog: RecordChains, sink: RecordChains, reached?: ReadonlyMap<string, number>): string[] {
  const problems: string[] = [];
  for (const [key, held] of sink.links) {
    const links = reached ? held.slice(0, reached.get(key) ?? 0) : held;
    const expected = changelog.links.get(key) ?? [];
    const length = Math.min(links.length, expected.length);
    let firstBad = -1;
    for (let index = 0; index < length; index += 1) {
      if (links[index] !== expected[index]) {
        firstBad = index;
        break;
      }
    }
    if (firstBad < 0 && links.length > expected.length) firstBad = expected.length;
    if (firstBad >= 0) {
      problems.push(
        `${sinkName}: record ${key}: its events differ from the changelog's from event ${firstBad + 1} on ` +
          `(received seqs ${JSON.stringify(sink.seqs.get(key)?.slice(0, links.length))}, changelog seqs ${JSON.stringify(changelog.seqs.get(key) ?? [])})`,
      );
    }
  }
  return problems;
}
