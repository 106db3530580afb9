/**
 * A reader of the Redis Streams sink the way docs/sinks.md asks one to be written: it reads the
 * sink's stream key from where it stopped (`XRANGE key (last-id + COUNT n`), deduplicates on the
 * entry's `id` field (the event id: a retry after a lost answer adds a second entry), and keeps each
 * record's events as a chained checksum, like the webhook receivers. The broker may be away (a
 * fault): a read that fails is tried again on the next round.
 */
import { Redis } from 'ioredis';
import { RecordChains } from './chain.ts';

/** Entries read per round at most. */
const PAGE = 1000;

/** Reads one Redis stream key, an entry of the sink's per event. */
export class SinkStreamReader {
  readonly name: string;
  readonly key: string;
  readonly chains = new RecordChains();
  /** Every event id read (deduplication). */
  readonly seen = new Set<string>();
  /** Entries read, and entries that repeated an event id already read. */
  readonly counts = { entries: 0, duplicates: 0 };
  /** Lines naming what no sink may publish (an entry without its event id or body). */
  readonly problems: string[] = [];
  #client: Redis;
  #after = '-';
  #reading: Promise<void> | undefined;

  /**
   * @param name the sink's name in the configuration (`feed`)
   * @param url the broker's Redis URL
   * @param key the stream key the sink writes (its `key` setting)
   */
  constructor(name: string, url: string, key: string) {
    this.name = name;
    this.key = key;
    this.#client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 1000, retryStrategy: () => 250 });
    this.#client.on('error', () => undefined);
  }

  /** Reads every entry added since the last read; never throws (the broker away: nothing read). */
  async read(): Promise<void> {
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    try {
      if (this.#client.status === 'wait') await this.#client.connect();
      for (;;) {
        const entries = await this.#client.xrange(this.key, this.#after === '-' ? '-' : `(${this.#after}`, '+', 'COUNT', PAGE);
        for (const [entryId, fields] of entries) {
          this.#after = entryId;
          this.#accept(entryId, fields);
        }
        if (entries.length < PAGE) return;
      }
    } catch {
      // the broker is away or restarting: the next round reads again from the same entry
    }
  }

  #accept(entryId: string, fields: string[]): void {
    const entry = new Map<string, string>();
    for (let index = 0; index + 1 < fields.length; index += 2) entry.set(fields[index]!, fields[index + 1]!);
    this.counts.entries += 1;
    const id = entry.get('id');
    const body = entry.get('data');
    if (!id || !body) {
      this.problems.push(`sink ${this.name}: entry ${entryId} of ${this.key} lacks its ${id ? 'data' : 'id'} field`);
      return;
    }
    if (this.seen.has(id)) {
      this.counts.duplicates += 1;
      return;
    }
    this.seen.add(id);
    const event = JSON.parse(body) as { type: string; data: { seq?: number; stream?: string; record_id?: string; record?: unknown } };
    const data = event.data ?? {};
    this.chains.append({ eventId: id, type: event.type, seq: Number(data.seq), stream: String(data.stream), recordId: String(data.record_id), record: data.record ?? null });
  }

  /** Closes the connection. */
  close(): void {
    this.#client.disconnect();
  }
}
