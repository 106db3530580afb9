/**
 * A schedule: the world the soak starts (sizes, a record clock that lags, ties) and the steps it
 * takes, one after another, while the daemon runs. Generated from a seed, so a seed names a schedule;
 * printed as JSON when it fails, and replayed from either.
 */
import type { StreamName } from '@bizops-sync/simulator';
import { SoakRandom } from './random.ts';
import { WRITE_KINDS, type WriteKind } from './writes.ts';

/** The mirror's back end a schedule runs on. */
export type Backend = 'sqlite' | 'postgres';

/** A list fault of the simulator (packages/simulator/src/faults.ts) as JSON, with where it applies. */
export interface ListFaultStep {
  do: 'list-fault';
  /** The fault, `kind` and its own members (`atOffset`, `cap`, ...). */
  fault: Record<string, unknown> & { kind: string };
  /** The list path it matches (`/transactions`). */
  path: string;
  times: number;
}

/**
 * Writes claimed while Redis loses their jobs, a sweep running meanwhile: the sweepers must not send
 * any twice (docs/writes.md "The sweeper"). A `worker` process is started when none runs. Redis is flushed (the rate budget then grants one request
 * at a time until an answer comes), `count` writes are sent, each answered after `latencyMs` (and the
 * next two reads too), so the writes after the first wait for the budget, claimed; once one is
 * claimed, `flushAfterMs` later, Redis is flushed again (`redis: 'flush'`) or killed and started
 * again empty after `downMs` (`redis: 'restart'`).
 */
export interface WriteRaceStep {
  do: 'write-burst';
  count: number;
  flushAfterMs: number;
  /** How long the API takes to answer each write of the burst (ms); 1500 when absent (older schedules). */
  latencyMs?: number;
  /** What Redis does while they are in flight; `flush` when absent. */
  redis?: 'flush' | 'restart';
  /** With `restart`: how long Redis stays away (ms). */
  downMs?: number;
}

/** One step of a schedule. Numbers named `pick` choose a record among the current ones (modulo). */
export type Step =
  | { do: 'churn'; count: number }
  | { do: 'delete'; stream: StreamName; pick: number }
  | { do: 'complete-onboarding'; pick: number }
  | { do: 'move-partition'; pick: number; to: number }
  | { do: 'expose-fields' }
  | { do: 'tie-burst'; count: number }
  | ListFaultStep
  | WriteRaceStep
  | { do: 'poison-record'; stream: 'deals' | 'customers'; pick: number; text: 'surrogate' | 'nul'; cleanAfterMs: number }
  | { do: 'unstorable-write'; text: 'surrogate' | 'nul'; via: 'http' | 'cli' }
  | { do: 'write'; kind: WriteKind; fault: 'none' | 'lose-response' | 'reset' | 'status-503' | 'latency'; via: 'http' | 'cli'; pick: number }
  | { do: 'kill-daemon'; downMs: number }
  /**
   * The daemon killed and started again while the API's port refuses connections: for `ms`, or
   * (`outlast`) until the new daemon gives up (exit 1, one line: docs/operations.md "An unreachable
   * API"), then the port opens and a daemon started after it catches up.
   */
  | { do: 'api-down'; ms: number; outlast: boolean }
  | { do: 'pause-daemon'; ms: number }
  | { do: 'restart-daemon' }
  | { do: 'restart-daemon-brokers-paused' }
  | { do: 'replica'; on: boolean }
  | { do: 'one-off'; command: 'sync' | 'backfill' | 'verify'; end: 'finish' | 'kill' | 'pause' }
  | { do: 'worker'; action: 'start' | 'kill' | 'pause' }
  | { do: 'redis'; action: 'flush' | 'restart'; downMs: number }
  | { do: 'postgres'; action: 'terminate' | 'restart' }
  | { do: 'receiver'; endpoint: 'a' | 'b'; mode: 'fail' | 'hang' | 'reject-record' | 'outage'; ms: number; pick: number }
  /** The Redis Streams sink's broker killed for `ms`, a deal changing before and during. */
  | { do: 'sink-outage'; ms: number; pick: number }
  /** The NATS JetStream sink's server killed for `ms` and started again on its port and store, a deal changing before, during and after. */
  | { do: 'nats-outage'; ms: number; pick: number }
  /**
   * A deal closed (`deal.close`) while a deals page read before the close is held: the page's answer
   * is sent once the write-through committed (docs/sync.md "Write-throughs during a run").
   */
  | { do: 'write-through-race'; pick: number }
  | { do: 'wait'; ms: number };

/** A whole schedule: what `npm run soak -- --schedule FILE` replays. */
export interface Schedule {
  seed: number;
  backend: Backend;
  /** Company A's stream sizes. */
  sizes: Record<StreamName, number>;
  /** How far the records' clock lags the `Date` header (ms; 0 for none). */
  recordClockLagMs: number;
  /** Mean size of the runs of records sharing one createdAt (0: no bursts). */
  bursts: number;
  steps: Step[];
}

const LIST_PATHS: Record<StreamName, string> = {
  transactions: '/transactions',
  deals: '/deals',
  onboardings: '/employee-onboardings',
  customers: '/customers',
  qa_corrective_actions: '/qa-corrective-actions',
};
const STREAMS = Object.keys(LIST_PATHS) as StreamName[];
const DELETABLE: StreamName[] = ['transactions', 'deals', 'customers', 'qa_corrective_actions'];

/** Step kinds and their weights: how often each is drawn. */
const WEIGHTS = {
  churn: 14,
  delete: 4,
  'complete-onboarding': 2,
  'move-partition': 3,
  'expose-fields': 1,
  'tie-burst': 2,
  'list-fault': 16,
  write: 10,
  'write-burst': 5,
  'poison-record': 2,
  'unstorable-write': 1,
  'kill-daemon': 2,
  'pause-daemon': 2,
  'restart-daemon': 1,
  'restart-daemon-brokers-paused': 1,
  'api-down': 1,
  replica: 2,
  'one-off': 3,
  worker: 3,
  redis: 2,
  postgres: 3,
  receiver: 7,
  'sink-outage': 2,
  'nats-outage': 2,
  wait: 4,
} as const;

/**
 * A list fault drawn for `path`. Each applies to three requests at most: a list that lies about its
 * records for ever is a deletion to any client. The lying ones (a capped list, a list cut short with
 * or without its total cut too) hide `hide` records at the end, at most 8 (under the mass-deletion
 * floor, so a client that tombstoned on one scan would tombstone them); the harness turns `hide` into
 * the offset when it injects the fault.
 */
function listFault(random: SoakRandom, path: string): ListFaultStep {
  const family = random.weighted({ lying: 35, items: 20, transport: 30, ties: 15 });
  const times = random.int(1, 3);
  const hide = random.int(1, 8);
  if (family === 'lying') {
    const kind = random.pick(['capped-list', 'truncate-list', 'truncate-list-cut-total'] as const);
    if (kind === 'capped-list') return { do: 'list-fault', fault: { kind: 'capped-list', hide }, path, times: 1 };
    return { do: 'list-fault', fault: { kind: 'truncate-list', hide, ...(kind === 'truncate-list-cut-total' ? { cutTotal: true } : {}) }, path, times: 1 };
  }
  if (family === 'items') {
    const kind = random.pick(['duplicate-id', 'id-less-item', 'id-less-item-instead', 'invalid-item', 'timestamp-style', 'key-order'] as const);
    if (kind === 'invalid-item') return { do: 'list-fault', fault: { kind, index: random.int(0, 10) }, path, times };
    // Instants written `+00:00` or without a fraction (the same instants: no change).
    if (kind === 'timestamp-style') return { do: 'list-fault', fault: { kind, style: random.pick(['+00:00', 'no-fraction'] as const) }, path, times };
    // Every item with its keys in reverse order (the same records: no change).
    if (kind === 'key-order') return { do: 'list-fault', fault: { kind }, path, times };
    // An item in its own place without its id (or with id null), instead of beside its copy.
    if (kind === 'id-less-item-instead') return { do: 'list-fault', fault: { kind: 'id-less-item', position: random.int(0, 20), instead: true, ...(random.chance(0.5) ? { nullId: true } : {}) }, path, times };
    return { do: 'list-fault', fault: { kind, position: random.int(0, 20) }, path, times };
  }
  if (family === 'ties') return { do: 'list-fault', fault: { kind: 'unstable-order', seed: random.int(1, 1000) }, path, times: random.int(2, 8) };
  const kind = random.pick(['status-503', 'status-500', 'reset-mid-body', 'malformed-json', 'trickle-body', 'refuse', 'no-date-header', 'latency'] as const);
  switch (kind) {
    case 'status-503':
      return { do: 'list-fault', fault: { kind: 'status', status: 503 }, path, times };
    case 'status-500':
      return { do: 'list-fault', fault: { kind: 'status', status: 500 }, path, times };
    case 'trickle-body':
      return { do: 'list-fault', fault: { kind: 'trickle-body', chunkBytes: 2000, intervalMs: 50 }, path, times: 1 };
    case 'latency':
      return { do: 'list-fault', fault: { kind: 'latency', ms: random.int(100, 1500) }, path, times };
    default:
      return { do: 'list-fault', fault: { kind }, path, times };
  }
}

/**
 * A list fault that hides the last 1 to 8 records of a list from one complete scan and is not
 * detectable as such by a client (a capped list, or one cut short with its total cut too), on a
 * stream whose lists fit one page: the harness injects it on the page that holds those records, once.
 */
function lyingListFault(random: SoakRandom): ListFaultStep {
  // Lists of one page (transactions may have several, whose totals a client compares page to page).
  const path = LIST_PATHS[random.pick(STREAMS.filter((stream) => stream !== 'transactions'))];
  const hide = random.int(1, 8);
  if (random.chance(0.5)) return { do: 'list-fault', fault: { kind: 'capped-list', hide }, path, times: 1 };
  return { do: 'list-fault', fault: { kind: 'truncate-list', hide, cutTotal: true }, path, times: 1 };
}

/**
 * A write race (`WriteRaceStep`): 2 or 3 writes answered after 2 to 3 s, Redis losing their jobs
 * within 0.3 s of the first being claimed, so a sweep (every second) runs while they wait or are in
 * flight, whatever the machine's load does to the sending side.
 */
function writeRace(random: SoakRandom): WriteRaceStep {
  const restart = random.chance(0.75);
  return { do: 'write-burst', count: random.int(2, 3), flushAfterMs: random.int(0, 150), latencyMs: random.int(2000, 3000), redis: restart ? 'restart' : 'flush', ...(restart ? { downMs: random.int(100, 800) } : {}) };
}

/** One step drawn by the weights; `backend` leaves out PostgreSQL's faults on SQLite. */
function step(random: SoakRandom, backend: Backend): Step {
  const kind = random.weighted(WEIGHTS);
  const pick = random.int(0, 1_000_000);
  switch (kind) {
    case 'churn':
      return { do: 'churn', count: random.int(1, 8) };
    case 'delete':
      return { do: 'delete', stream: random.pick(DELETABLE), pick };
    case 'complete-onboarding':
      return { do: 'complete-onboarding', pick };
    case 'move-partition':
      return { do: 'move-partition', pick, to: random.int(0, 100) };
    case 'expose-fields':
      return { do: 'expose-fields' };
    case 'tie-burst':
      return { do: 'tie-burst', count: random.int(3, 25) };
    case 'list-fault':
      return listFault(random, LIST_PATHS[random.pick(STREAMS)]);
    case 'write':
      return { do: 'write', kind: random.pick(WRITE_KINDS), fault: random.pick(['none', 'none', 'lose-response', 'reset', 'status-503', 'latency'] as const), via: random.chance(0.7) ? 'http' : 'cli', pick };
    case 'poison-record':
      return { do: 'poison-record', stream: random.pick(['deals', 'customers'] as const), pick, text: random.pick(['surrogate', 'nul'] as const), cleanAfterMs: random.int(1000, 4000) };
    case 'unstorable-write':
      return { do: 'unstorable-write', text: random.pick(['surrogate', 'nul'] as const), via: random.chance(0.7) ? 'http' : 'cli' };
    case 'write-burst':
      return writeRace(random);
    case 'kill-daemon':
      return { do: 'kill-daemon', downMs: random.int(0, 3000) };
    case 'pause-daemon':
      return { do: 'pause-daemon', ms: random.int(500, 4000) };
    case 'restart-daemon':
      return { do: 'restart-daemon' };
    case 'restart-daemon-brokers-paused':
      return { do: 'restart-daemon-brokers-paused' };
    case 'api-down':
      return { do: 'api-down', ms: random.int(1000, 5000), outlast: random.chance(0.5) };
    case 'replica':
      return { do: 'replica', on: random.chance(0.6) };
    case 'one-off':
      return { do: 'one-off', command: random.pick(['sync', 'backfill', 'verify'] as const), end: random.pick(['finish', 'kill', 'pause'] as const) };
    case 'worker':
      return { do: 'worker', action: random.pick(['start', 'start', 'kill', 'pause'] as const) };
    case 'redis':
      return { do: 'redis', action: random.pick(['flush', 'restart'] as const), downMs: random.int(0, 2500) };
    case 'postgres':
      if (backend !== 'postgres') return { do: 'churn', count: random.int(1, 4) };
      return { do: 'postgres', action: random.chance(0.6) ? 'terminate' : 'restart' };
    case 'receiver':
      return { do: 'receiver', endpoint: random.chance(0.75) ? 'a' : 'b', mode: random.pick(['fail', 'hang', 'reject-record', 'outage'] as const), ms: random.int(1500, 3000), pick };
    case 'sink-outage':
      return { do: 'sink-outage', ms: random.int(1500, 5000), pick };
    case 'nats-outage':
      return { do: 'nats-outage', ms: random.int(1500, 5000), pick };
    default:
      return { do: 'wait', ms: random.int(200, 2500) };
  }
}

/**
 * The schedule of `seed` on `backend`: sizes, clock lag and ties of the world, then `length` steps
 * drawn (default 12 to 24), with up to five more among the first four (`withEarlyRaces`).
 */
export function generateSchedule(seed: number, backend: Backend, length?: number): Schedule {
  const random = new SoakRandom(seed);
  const count = length ?? random.int(12, 24);
  return {
    seed,
    backend,
    sizes: {
      transactions: random.int(80, 260),
      deals: random.int(40, 90),
      onboardings: random.int(15, 60),
      customers: random.int(20, 60),
      qa_corrective_actions: random.int(20, 50),
    },
    recordClockLagMs: random.chance(0.3) ? random.int(1, 8) * 1000 : 0,
    bursts: random.chance(0.4) ? random.int(2, 12) : 0,
    steps: withEarlyRaces(Array.from({ length: count }, () => step(random, backend)), seed),
  };
}

/** How many steps from the start the early races are placed among. */
const EARLY_STEPS = 4;

/**
 * The conditions the known bugs need (soak/README.md "Proof it can fail"), too rare a draw for a
 * two-minute run, placed among the first `EARLY_STEPS` steps of every schedule, so that the first
 * schedule of a run already has them: a write race (`WriteRaceStep`: a sweep while slowed writes
 * are claimed and Redis lost their jobs), a list that hides records from exactly one complete scan,
 * a receiver failing while one record changes before and after, a churn of 4 to 8 changes, and the
 * deals listed with their times in another style (the same records). Each is inserted (the seed's
 * own steps all stay, after them) unless the seed drew one of its kind there already; drawn by a
 * generator of their own, so the seed's other steps are the ones it always drew.
 */
function withEarlyRaces(steps: Step[], seed: number): Step[] {
  const random = new SoakRandom(seed ^ 0x7ace);
  const early = steps.slice(0, EARLY_STEPS);
  const added: Step[] = [];
  if (!early.some((entry) => entry.do === 'write-burst')) added.push(writeRace(random));
  if (!early.some((entry) => entry.do === 'list-fault' && typeof entry.fault.hide === 'number')) added.push(lyingListFault(random));
  if (!early.some((entry) => entry.do === 'receiver' && entry.mode === 'fail')) {
    added.push({ do: 'receiver', endpoint: random.chance(0.75) ? 'a' : 'b', mode: 'fail', ms: random.int(1500, 3000), pick: random.int(0, 1_000_000) });
  }
  const result = [...steps];
  for (const entry of added) result.splice(random.int(0, Math.min(EARLY_STEPS - 1, result.length)), 0, entry);
  // A churn that changes records' `status` (deals won and lost, transactions voided, ...), drawn by
  // a generator of its own so the early steps above stay as they are drawn.
  if (!result.slice(0, EARLY_STEPS).some((entry) => entry.do === 'churn')) {
    const churn = new SoakRandom(seed ^ 0xc4a9);
    result.splice(churn.int(0, Math.min(EARLY_STEPS - 1, result.length)), 0, { do: 'churn', count: churn.int(4, 8) });
  }
  // The deals listed with their times in another style (the same instants: no change), unless the
  // seed drew a list in another form early, drawn by a generator of its own.
  if (!result.slice(0, EARLY_STEPS).some((entry) => entry.do === 'list-fault' && (entry.fault.kind === 'timestamp-style' || entry.fault.kind === 'key-order'))) {
    const restyle = new SoakRandom(seed ^ 0x7e57);
    result.splice(restyle.int(0, Math.min(EARLY_STEPS - 1, result.length)), 0, { do: 'list-fault', fault: { kind: 'timestamp-style', style: '+00:00' }, path: LIST_PATHS.deals, times: 3 });
  }
  // Half the schedules: a write-through while a deals page read before it is held, anywhere in the
  // schedule, drawn by a generator of its own (the steps above stay as they are drawn).
  const race = new SoakRandom(seed ^ 0x5e0f);
  if (race.chance(0.5)) result.splice(race.int(0, result.length), 0, { do: 'write-through-race', pick: race.int(0, 1_000_000) });
  return result;
}

/** One line per step, for a report. */
export function describeSchedule(schedule: Schedule): string {
  const head = `seed ${schedule.seed} on ${schedule.backend}: sizes ${JSON.stringify(schedule.sizes)}, record clock lag ${schedule.recordClockLagMs} ms, bursts ${schedule.bursts}`;
  return [head, ...schedule.steps.map((entry, index) => `  ${String(index + 1).padStart(2)}. ${JSON.stringify(entry)}`)].join('\n');
}
