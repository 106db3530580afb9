/**
 * Leases with fencing tokens in the mirror (`leases` table, migration 7): what lets two daemons (or
 * a daemon and `bizops-sync sync`) share one mirror while each stream, and the webhook delivery, is
 * run by one process at a time (docs/operations.md "Running two daemons (replicas)").
 *
 * - A lease is named (`stream:<stream>`, `webhooks`), held by one `holder` (a process: `leaseHolder`)
 *   until `expires_at`, and carries a `fence`: a number that grows by one every time the lease
 *   changes hands and never goes back.
 * - `acquire` takes a lease that is free (released, or never taken) or expired, bumping its fence;
 *   a lease its holder already holds is renewed instead, keeping its fence (re-entrant per holder).
 * - `renew` (a timer, every third of the lease) and every fenced write (`confirmLease`, inside the
 *   write's own transaction) update the row `WHERE name = ? AND holder = ? AND fence = ?`: no row
 *   means someone took the lease over, and `LeaseLostError` rolls the write back. A holder whose
 *   lease expired but which nobody took yet still matches its fence, so it may go on: the fence,
 *   not the clock, decides. On PostgreSQL the fenced UPDATE locks the row until the write commits,
 *   so a takeover waits for that commit (and then sees the renewed expiry: no takeover); on SQLite
 *   the write holds the file's lock.
 * - Expiry is judged by ONE clock, the database's (src/mirror/sql/dialect.ts `databaseNow`): the
 *   server's on PostgreSQL, this host's on SQLite. Two hosts' clocks never decide.
 * - A holder that must not act past its lease even when nobody took it over yet (a webhook request
 *   cannot be fenced once it has left) asks `leaseKnownValid`: the lease's known expiry, carried to
 *   this process's monotonic clock from the moment its last renewal was sent (module
 *   `knownDeadlines` below), so a process paused (SIGSTOP, a VM stall) past its lease knows it
 *   lapsed the moment it runs again, before any round trip. `leaseTimeLeftMs` says how long is left,
 *   and `Leases.ensureHeld` renews a lease with little left before such an action (a stream's page
 *   request) and refuses one another holder took.
 * - A one-off run waiting for a stream the daemon holds (`--wait`) records a lease REQUEST: a row of
 *   the same table named `wait:<lease>` (`leaseRequestName`), held by the waiter and expiring like
 *   any lease, so a killed waiter's request lapses on its own. While a live request of another
 *   holder exists, `acquire` of the lease neither takes nor renews it (the daemon's next run of the
 *   stream is busy); a holder already running under it goes on with `renew`/`confirmLease`, and the
 *   daemon's lease keeper releases it once no run is in progress (src/daemon/lease-keeper.ts).
 *   Fencing is untouched: the waiter takes the lease only when it is free, with fence + 1.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { databaseNow, databaseNowPlusSeconds } from './sql/dialect.ts';
import { planOnce, type SqlExecutor } from './sql/executor.ts';

/** The default lease length, seconds (config `sync.leaseSeconds`). */
export const DEFAULT_LEASE_SECONDS = 30;

/** This process's holder name: `<host>:<pid>:<8 hex>`; the random part keeps a reused pid from passing as its predecessor. */
export const PROCESS_LEASE_HOLDER = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** A lease held: its name, holder and the fence it was taken with. */
export interface HeldLease {
  readonly name: string;
  readonly holder: string;
  readonly fence: number;
}

/** One row of `leases`, decoded (times ISO 8601 by the database's clock). */
export interface LeaseState {
  name: string;
  /** Null when released. */
  holder: string | null;
  fence: number;
  expiresAt: string | null;
  acquiredAt: string | null;
  renewedAt: string | null;
  /** True when `expiresAt` is past by the database's clock (or the lease is released): another holder may take it. */
  free: boolean;
}

/** What `acquire` did. */
export interface Acquired {
  lease: HeldLease;
  /** True when the lease changed hands (fence bumped); false when `holder` held it already and renewed it. */
  taken: boolean;
  /** On a takeover of an expired lease: who held it before (for the log). */
  previousHolder?: string;
}

/**
 * The lease `lease` names is no longer held with its fence: another holder took it over (or it was
 * released). A write checked with `confirmLease` is rolled back; the work stops.
 */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  readonly lease: HeldLease;

  constructor(lease: HeldLease, message = `lease ${lease.name}: lost (fence ${lease.fence} is no longer current: another process took it over)`) {
    super(message);
    this.lease = lease;
  }
}

interface LeaseRow {
  name: string;
  holder: string | null;
  fence: number;
  expires_at: string | null;
  acquired_at: string | null;
  renewed_at: string | null;
  free: number;
}

/**
 * The known expiry of each lease this process took or renewed outside a transaction, as a
 * `performance.now()` deadline: the time the renewing statement was SENT plus the lease length.
 * The database set `expires_at` to its own now + the length when it ran the statement, which is
 * after the send, so this deadline is never later than the database's expiry (clocks running at
 * the same rate; the monotonic clock keeps counting while the process is stopped). A renewal inside
 * a transaction is not counted (the transaction may still roll back); the lease keeper renews
 * outside one every third of the lease. Keyed by name, holder and fence.
 */
const knownDeadlines = new Map<string, number>();

function deadlineKey(lease: HeldLease): string {
  return `${lease.name}\u0000${lease.holder}\u0000${lease.fence}`;
}

/**
 * True while `lease` is known to be unexpired by the database's clock: this process took or renewed
 * it (outside a transaction) less than its length ago, counted from when the renewal was sent.
 * False for a lease never renewed by this process, released, or lapsed (e.g. the process was
 * paused past it). Costs no round trip: check it right before an action that cannot be fenced.
 * @param nowMs `performance.now()` (tests)
 */
export function leaseKnownValid(lease: HeldLease, nowMs: number = performance.now()): boolean {
  const deadline = knownDeadlines.get(deadlineKey(lease));
  return deadline !== undefined && nowMs < deadline;
}

/**
 * How long `lease` is still known to be unexpired, ms (0 when `leaseKnownValid` is false): what is
 * left of its known expiry by this process's monotonic clock.
 * @param nowMs `performance.now()` (tests)
 */
export function leaseTimeLeftMs(lease: HeldLease, nowMs: number = performance.now()): number {
  const deadline = knownDeadlines.get(deadlineKey(lease));
  return deadline === undefined ? 0 : Math.max(0, deadline - nowMs);
}

function noteRenewal(lease: HeldLease, sentAtMs: number, seconds: number): void {
  knownDeadlines.set(deadlineKey(lease), Math.max(knownDeadlines.get(deadlineKey(lease)) ?? 0, sentAtMs + seconds * 1000));
}

/**
 * Records that a transaction which confirmed `lease` for `seconds` (`confirmLease` inside it) has
 * COMMITTED: its renewal now counts for `leaseKnownValid`, from `sentAtMs` (`performance.now()`
 * read before the transaction began). Call only after the commit (a rolled-back renewal renewed
 * nothing). Never shortens what an earlier renewal gave.
 */
export function noteLeaseConfirmed(lease: HeldLease, sentAtMs: number, seconds: number): void {
  noteRenewal(lease, sentAtMs, seconds);
}

/**
 * Checks, inside the caller's transaction (`executor` bound to it), that `lease` still holds its
 * fence, and renews it for `seconds`. Call it first in every transaction that writes under the lease:
 * on PostgreSQL the row stays locked until the commit, so no takeover slips in between.
 * @throws LeaseLostError when another holder took the lease (the caller's transaction rolls back)
 */
export async function confirmLease(executor: SqlExecutor, lease: HeldLease, seconds: number): Promise<void> {
  await renewFenced(executor, lease, seconds);
}

/**
 * `confirmLease` for a transaction that writes often (a stream's page commits): on SQLite, with more
 * than two thirds of the lease known left (`leaseTimeLeftMs`), it only checks holder and fence (a
 * SELECT, no row written) instead of renewing. That fences as well as the UPDATE: the transaction
 * holds the file's write lock from its `BEGIN IMMEDIATE`, so no takeover can commit before it ends.
 * It spares most commits a write of the lease table's page (a WAL frame each); the lease never runs
 * short, since a renewal is due again at two thirds left, and `Leases.ensureHeld` and the lease keeper
 * renew outside transactions at one third. On PostgreSQL it always renews: there the UPDATE's row
 * lock is what keeps a takeover out until the commit.
 * @returns true when it renewed (after the commit, `noteLeaseConfirmed` counts it); false when it
 *   only checked (nothing to note)
 * @throws LeaseLostError when another holder took the lease (the caller's transaction rolls back)
 */
export async function confirmLeaseRenewingWhenDue(executor: SqlExecutor, lease: HeldLease, seconds: number): Promise<boolean> {
  if (executor.dialect !== 'sqlite' || !executor.inTransaction || leaseTimeLeftMs(lease) <= (seconds * 2000) / 3) {
    await renewFenced(executor, lease, seconds);
    return true;
  }
  const held = await executor.get('SELECT 1 AS held FROM leases WHERE name = ? AND holder = ? AND fence = ?', [lease.name, lease.holder, lease.fence]);
  if (held === undefined) {
    knownDeadlines.delete(deadlineKey(lease));
    throw new LeaseLostError(lease);
  }
  return false;
}

/** `fencedRenewal`'s text by dialect. */
const fencedRenewals = new Map<SqlExecutor['dialect'], string>();

/** The UPDATE of `renewFenced`: a lookup by the lease's name (the key of a table of a row per lease), planned once in a transaction (executor.ts `planOnce`). */
function fencedRenewal(dialect: SqlExecutor['dialect']): string {
  let sql = fencedRenewals.get(dialect);
  if (sql === undefined) {
    sql = planOnce(`UPDATE leases SET expires_at = ${databaseNowPlusSeconds(dialect)}, renewed_at = ${databaseNow(dialect)} WHERE name = ? AND holder = ? AND fence = ?`);
    fencedRenewals.set(dialect, sql);
  }
  return sql;
}

/** The fenced renewal of `confirmLease` and `Leases.renew`. @throws LeaseLostError when the fence is no longer current */
async function renewFenced(executor: SqlExecutor, lease: HeldLease, seconds: number): Promise<void> {
  const dialect = executor.dialect;
  const sentAtMs = performance.now();
  const result = await executor.run(fencedRenewal(dialect), [seconds, lease.name, lease.holder, lease.fence]);
  if (result.changes !== 1) {
    knownDeadlines.delete(deadlineKey(lease));
    throw new LeaseLostError(lease);
  }
  if (!executor.inTransaction) noteRenewal(lease, sentAtMs, seconds);
}

/** The leases of one mirror, through `executor`, each `seconds` long. */
export class Leases {
  readonly executor: SqlExecutor;
  readonly seconds: number;

  /** @throws RangeError when `seconds` is not a positive number */
  constructor(executor: SqlExecutor, seconds: number = DEFAULT_LEASE_SECONDS) {
    if (!(Number.isFinite(seconds) && seconds > 0)) throw new RangeError(`leaseSeconds must be a positive number, got ${String(seconds)}`);
    this.executor = executor;
    this.seconds = seconds;
  }

  /**
   * Takes lease `name` for `holder`: renews it when `holder` holds it already (same fence), else
   * takes it when it is free or expired by the database's clock (fence + 1).
   * @returns the lease held, or undefined when another holder's lease has not expired
   */
  async acquire(name: string, holder: string): Promise<Acquired | undefined> {
    const dialect = this.executor.dialect;
    const sentAtMs = performance.now();
    const noted = (lease: HeldLease): HeldLease => {
      if (!this.executor.inTransaction) noteRenewal(lease, sentAtMs, this.seconds);
      return lease;
    };
    // A live request of another holder for this lease (a one-off run waiting for it): neither renewed nor taken.
    const notRequested = `NOT EXISTS (SELECT 1 FROM leases AS request WHERE request.name = ? AND request.holder IS NOT NULL
      AND request.holder <> ? AND request.expires_at IS NOT NULL AND request.expires_at >= ${databaseNow(dialect)})`;
    const renewed = await this.executor.get<{ fence: number }>(
      `UPDATE leases SET expires_at = ${databaseNowPlusSeconds(dialect)}, renewed_at = ${databaseNow(dialect)} WHERE name = ? AND holder = ? AND ${notRequested} RETURNING fence`,
      [this.seconds, name, holder, leaseRequestName(name), holder],
    );
    if (renewed) return { lease: noted({ name, holder, fence: Number(renewed.fence) }), taken: false };
    const before = await this.state(name);
    if (before?.holder === holder && !before.free) return undefined; // held by `holder`, but requested by another: not renewed
    const taken = await this.executor.get<{ fence: number }>(
      `INSERT INTO leases (name, holder, fence, expires_at, acquired_at, renewed_at)
       SELECT ?, ?, 1, ${databaseNowPlusSeconds(dialect)}, ${databaseNow(dialect)}, ${databaseNow(dialect)} WHERE ${notRequested}
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, fence = leases.fence + 1, expires_at = excluded.expires_at,
         acquired_at = excluded.acquired_at, renewed_at = excluded.renewed_at
       WHERE leases.holder IS NULL OR leases.expires_at IS NULL OR leases.expires_at < ${databaseNow(dialect)}
       RETURNING fence`,
      [name, holder, this.seconds, leaseRequestName(name), holder],
    );
    if (!taken) return undefined;
    const previousHolder = before?.holder ?? undefined;
    // Sent after the renewal attempt above: the INSERT's own send time would be later, so this deadline is the safer one.
    return { lease: noted({ name, holder, fence: Number(taken.fence) }), taken: true, ...(previousHolder !== undefined && previousHolder !== holder ? { previousHolder } : {}) };
  }

  /**
   * The live request of a holder other than `holder` for lease `name` (a one-off run waiting for it,
   * `leaseRequestName`), or undefined when there is none (or it expired).
   */
  async requestedByOther(name: string, holder: string): Promise<LeaseState | undefined> {
    const request = await this.state(leaseRequestName(name));
    return request && !request.free && request.holder !== holder ? request : undefined;
  }

  /**
   * Extends `lease` by the lease length, keeping its fence.
   * @throws LeaseLostError when another holder took it over (or it was released)
   */
  renew(lease: HeldLease): Promise<void> {
    return confirmLease(this.executor, lease, this.seconds);
  }

  /**
   * Makes sure this process holds `lease` for at least `minimumMs` more by its own clock
   * (`leaseTimeLeftMs`) before an action that must not happen without it (an API request of a
   * stream's run): when less is left (the renewal timer fell behind, the process was paused),
   * renews it first, one statement. Nothing is sent when enough is left.
   * @param minimumMs default a third of the lease: a holder whose timer renews every third has more
   * @throws LeaseLostError when another holder took it over (or it was released): do not act
   */
  async ensureHeld(lease: HeldLease, minimumMs = (this.seconds * 1000) / 3): Promise<void> {
    if (leaseTimeLeftMs(lease) > minimumMs) return;
    await this.renew(lease);
  }

  /**
   * Gives `lease` up (holder and expiry cleared, the fence kept) so that another holder may take it
   * at once. Nothing happens when it was taken over already.
   * @returns true when it was released
   */
  async release(lease: HeldLease): Promise<boolean> {
    knownDeadlines.delete(deadlineKey(lease));
    const result = await this.executor.run('UPDATE leases SET holder = NULL, expires_at = NULL WHERE name = ? AND holder = ? AND fence = ?', [
      lease.name,
      lease.holder,
      lease.fence,
    ]);
    return result.changes === 1;
  }

  /** Lease `name` as stored, or undefined when never taken. */
  async state(name: string): Promise<LeaseState | undefined> {
    const row = await this.executor.get<LeaseRow>(`${this.selectLeases()} WHERE name = ?`, [name]);
    return row ? decode(row) : undefined;
  }

  /** Every lease of the mirror, by name. */
  async list(): Promise<LeaseState[]> {
    return (await this.executor.all<LeaseRow>(`${this.selectLeases()} ORDER BY name`)).map(decode);
  }

  private selectLeases(): string {
    const now = databaseNow(this.executor.dialect);
    return `SELECT name, holder, fence, expires_at, acquired_at, renewed_at,
      CASE WHEN holder IS NULL OR expires_at IS NULL OR expires_at < ${now} THEN 1 ELSE 0 END AS free FROM leases`;
  }
}

function decode(row: LeaseRow): LeaseState {
  return {
    name: row.name,
    holder: row.holder,
    fence: Number(row.fence),
    expiresAt: row.expires_at,
    acquiredAt: row.acquired_at,
    renewedAt: row.renewed_at,
    free: Number(row.free) === 1,
  };
}

/** The lease name of a stream's runs. */
export function streamLeaseName(stream: string): string {
  return `stream:${stream}`;
}

/**
 * The name of the request row a waiting one-off run holds for lease `name` (`wait:stream:<stream>`):
 * take it with `acquire(leaseRequestName(name), holder)`, renew it the same way while waiting, and
 * `release` it after the run. @see the module comment
 */
export function leaseRequestName(name: string): string {
  return `${LEASE_REQUEST_PREFIX}${name}`;
}

/** The prefix of a lease request's name. */
export const LEASE_REQUEST_PREFIX = 'wait:';

/** The lease name of webhook delivery. */
export const WEBHOOKS_LEASE = 'webhooks';
