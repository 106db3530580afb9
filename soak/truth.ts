/**
 * The simulator's ground truth as the soak changes it: every change goes through here, so the soak
 * knows at every moment which records each stream lists (the oracle's "was it live then?").
 */
import type { RunningSimulator, StreamName } from '@bizops-sync/simulator';
import { STREAM_NAMES } from '@bizops-sync/simulator';
import type { SoakRandom } from './random.ts';

/**
 * The locations a client can know as partitions of `qa_corrective_actions`: those of the live deals
 * (the stream's partition values are derived from the deals' `locationId`, docs/sync.md
 * "Partitioned streams"). A corrective action at a location no deal names (one a `location.create`
 * write added, where churn may open an action) is out of any client's sight.
 */
export function visiblePartitions(simulator: RunningSimulator): Set<string> {
  return new Set(simulator.world.deals.map((deal) => deal.locationId));
}

/** When a record was listed: [from, to) intervals in ms epoch (`to` Infinity while it still is). */
type Intervals = [number, number][];

/** The ground truth's liveness over time, per `stream/id`. */
export class TruthTimeline {
  readonly #simulator: RunningSimulator;
  readonly #live = new Map<string, Intervals>();
  #current = new Set<string>();
  /** Truth changes made, by kind (churn, delete, move-partition, ...). */
  readonly changes: Record<string, number> = {};

  constructor(simulator: RunningSimulator) {
    this.#simulator = simulator;
    this.observe();
  }

  /** Reads which records every stream lists now and notes what appeared and left. */
  observe(at = Date.now()): void {
    const now = new Set<string>();
    for (const stream of STREAM_NAMES) {
      for (const record of this.#simulator.world.groundTruth(stream)) now.add(`${stream}/${String(record.id)}`);
    }
    for (const key of now) {
      if (!this.#current.has(key)) {
        const intervals = this.#live.get(key) ?? [];
        intervals.push([at, Infinity]);
        this.#live.set(key, intervals);
      }
    }
    for (const key of this.#current) {
      if (!now.has(key)) {
        const intervals = this.#live.get(key);
        const last = intervals?.[intervals.length - 1];
        if (last && last[1] === Infinity) last[1] = at;
      }
    }
    this.#current = now;
  }

  /** True when the truth listed `stream/id` at `at` (ms epoch). */
  liveAt(key: string, at: number): boolean {
    return (this.#live.get(key) ?? []).some(([from, to]) => from <= at && at < to);
  }

  /** True when the truth lists `stream/id` now. */
  liveNow(key: string): boolean {
    return this.#current.has(key);
  }

  #count(kind: string): void {
    this.changes[kind] = (this.changes[kind] ?? 0) + 1;
  }

  /** `count` rounds of the simulator's own churn (every stream, by its churn weights). */
  churn(count: number): void {
    for (const change of this.#simulator.world.churnTick(count)) this.#count(`churn:${change.stream}:${change.kind}`);
    this.observe();
  }

  /**
   * Removes one record of `stream` (drawn by `pick`) from its list: a deletion upstream. Never a
   * record a soak write made or changed (it carries the write's mark, `soak <key>`): it is the
   * oracle's evidence of that write's one effect (soak/writes.ts `effectsOf`).
   */
  delete(stream: StreamName, pick: number): void {
    const records = (this.#simulator.world.streamRecords(stream) as { id: string }[]).filter((record) => !JSON.stringify(record).includes('"soak '));
    if (records.length === 0) return;
    const record = records[pick % records.length]!;
    this.#simulator.world.deleteRecord(stream, record.id);
    this.#count(`delete:${stream}`);
    this.observe();
  }

  /** Completes one onboarding (it leaves the list, spec §4.1). */
  completeOnboarding(pick: number): void {
    const records = this.#simulator.world.onboardings;
    if (records.length === 0) return;
    this.#simulator.world.completeOnboarding(records[pick % records.length]!.id);
    this.#count('complete:onboardings');
    this.observe();
  }

  /** Moves one corrective action to another location: it leaves one partition's list for another's. */
  movePartition(pick: number, to: number): void {
    const world = this.#simulator.world;
    const records = world.streamRecords('qa_corrective_actions');
    // Only to a location a client can know of: its partitions come from the deals' locations.
    const locations = [...visiblePartitions(this.#simulator)];
    if (records.length === 0 || locations.length < 2) return;
    const record = records[pick % records.length]!;
    const others = locations.filter((id) => id !== record.locationId);
    world.updateRecord('qa_corrective_actions', record.id, { locationId: others[to % others.length]! });
    this.#count('move-partition:qa_corrective_actions');
    this.observe();
  }

  /** Changes one field of deal `id` (a title edit): one more event of that record. */
  touchDeal(id: string, title: string): void {
    if (!this.#simulator.world.deals.some((deal) => deal.id === id)) return;
    this.#simulator.world.updateDeal(id, { title });
    this.#count('update:deals');
    this.observe();
  }

  /**
   * Puts text no mirror can store (`unstorable`, e.g. an unpaired surrogate or NUL) into a text field
   * of one record of `stream`, as a careless upstream import would.
   * @returns how to clean it again (the record, the field, its value before), or undefined when the stream is empty
   */
  poison(stream: 'deals' | 'customers', pick: number, unstorable: string): { stream: 'deals' | 'customers'; id: string; field: string; clean: string } | undefined {
    const world = this.#simulator.world;
    const records = stream === 'deals' ? world.deals : world.customers;
    if (records.length === 0) return undefined;
    const record = records[pick % records.length]!;
    const field = stream === 'deals' ? 'title' : 'lastName';
    const clean = String((record as unknown as Record<string, unknown>)[field]);
    (world.updateRecord as unknown as (name: string, id: string, patch: Record<string, unknown>) => unknown)(stream, record.id, { [field]: `${clean} ${unstorable}` });
    this.#count(`poison:${stream}`);
    this.observe();
    return { stream, id: record.id, field, clean };
  }

  /** Cleans a record `poison` broke: the field gets its value back (a new updatedAt). */
  cleanPoison(poisoned: { stream: 'deals' | 'customers'; id: string; field: string; clean: string }): void {
    const world = this.#simulator.world;
    const records = poisoned.stream === 'deals' ? world.deals : world.customers;
    if (!records.some((record) => record.id === poisoned.id)) return;
    (world.updateRecord as unknown as (name: string, id: string, patch: Record<string, unknown>) => unknown)(poisoned.stream, poisoned.id, { [poisoned.field]: `${poisoned.clean} (cleaned)` });
    this.observe();
  }

  /** The lists start returning the fields the spec does not show (a server deploy). */
  exposeFields(): void {
    this.#simulator.world.exposeUndeclaredFields('transactions.notes', 'onboardings.user.email');
    const onboarding = this.#simulator.world.onboardings[0];
    if (onboarding) this.#simulator.world.setOnboardingEmail(onboarding.id, `soak.${onboarding.id}@example.org`);
    this.#count('expose-fields');
    this.observe();
  }

  /** `count` transactions created at one instant (a run of ties on createdAt), with a note each. */
  tieBurst(count: number, random: SoakRandom): void {
    const at = new Date(Date.now() - 1000).toISOString();
    for (let index = 0; index < count; index += 1) {
      this.#simulator.world.createTransaction({ createdAt: at, updatedAt: at, amount: random.int(100, 90_000), notes: `burst ${index}` });
    }
    this.#count('tie-burst:transactions');
    this.observe();
  }
}
