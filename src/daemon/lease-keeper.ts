/**
 * The daemon's leases (docs/operations.md "Running two daemons (replicas)"): for one connection's
 * mirror, the daemon competes for `stream:<stream>` of each stream it runs and for `webhooks` when
 * endpoints are configured (src/mirror/leases.ts). Every third of the lease length, one round:
 *
 *   held     -> renew (fence kept); a renewal that finds the lease taken over drops it (`onLost`);
 *               a lease a one-off run is waiting for (a live request, `leaseRequestName`) is released
 *               instead, once `mayYield` says no run is in progress under it (`onLost`; `yielded()`)
 *   not held -> acquire when free or expired (fence + 1: `onAcquired`); never while another
 *               holder's request for it lives (`Leases.acquire`), so a yielded stream stays with the
 *               waiter until its request is released or lapses
 *
 * So a daemon that holds nothing takes a dead peer's leases at most a lease length plus a third of
 * it after the peer's last renewal, and a live holder never lets its leases lapse. `stop()` releases
 * every lease held, so a peer takes them over at its next round instead of waiting for expiry.
 *
 * Rounds that fail (the database busy, locked by another process, or away) are logged once when the
 * first one fails (a warning naming the leases and the first error), at most once every
 * `failureLogEveryMs` while they go on (with the failed rounds so far), and once when a round works
 * again (with how many failed): a locked mirror does not flood the log.
 */
import { silentLogger, type Logger } from '../logging/logger.ts';
import { LeaseLostError, type HeldLease, type Leases } from '../mirror/leases.ts';

/** Construction options of a LeaseKeeper. */
export interface LeaseKeeperOptions {
  /** The mirror's leases and their length. */
  leases: Leases;
  /** This process's holder name (the sync engine's `leaseHolder`, so its runs renew the same leases). */
  holder: string;
  /** The leases to compete for. */
  names: readonly string[];
  logger?: Logger;
  /**
   * Whether lease `name` may be released now for a one-off run waiting for it (default: always):
   * the daemon answers false while a run of the stream is in progress, so the run finishes first
   * (it renews the lease itself meanwhile). Must not throw.
   */
  mayYield?: (name: string) => boolean;
  /** Called when a lease was taken (after a round's acquire). Must not throw. */
  onAcquired?: (lease: HeldLease) => void;
  /** Called when a held lease was found taken over, or released by `stop()`. Must not throw. */
  onLost?: (name: string) => void;
  /**
   * Called after each round with the leases it could neither renew nor acquire because the database
   * failed (busy, away), each with its error; empty when every lease was renewed, acquired or found
   * held by another process. Must not throw.
   */
  onRoundEnded?: (failures: ReadonlyMap<string, Error>) => void;
  /** While rounds keep failing, at most one warning per this many ms after the first, ms. Default 60000. */
  failureLogEveryMs?: number;
}

/** Default `failureLogEveryMs`: a warning a minute at most while lease rounds keep failing. */
export const LEASE_FAILURE_LOG_EVERY_MS = 60_000;

/** Holds and renews a set of leases; see the module comment. Start once, stop once. */
export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  readonly #logger: Logger;
  readonly #held = new Map<string, HeldLease>();
  /** The leases released to a waiting one-off run, with the waiter (its request's holder), until taken again. */
  readonly #yielded = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #stopped = false;
  /** The rounds failed in a row, when the first failed and when that was last logged (ms since the epoch); null while rounds work. */
  #failing: { rounds: number; since: string; loggedAt: number } | null = null;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'leases' });
  }

  /** Milliseconds between rounds: a third of the lease. */
  get intervalMs(): number {
    return Math.max(10, Math.floor((this.#options.leases.seconds * 1000) / 3));
  }

  /** Runs the first round (taking every free lease) and schedules the next ones. */
  async start(): Promise<void> {
    await this.#runRound();
    this.#schedule();
  }

  /** True when this daemon holds lease `name` (as of its last round). */
  holds(name: string): boolean {
    return this.#held.has(name);
  }

  /** The lease `name` as held, or undefined. */
  lease(name: string): HeldLease | undefined {
    return this.#held.get(name);
  }

  /** The names of the leases held, sorted. */
  held(): string[] {
    return [...this.#held.keys()].sort();
  }

  /**
   * The leases this keeper released to a waiting one-off run (docs/operations.md "A one-off run
   * beside the daemon (--wait)") and not taken again since, sorted, each with the waiter's holder name.
   */
  yielded(): { lease: string; waiter: string }[] {
    return [...this.#yielded].map(([lease, waiter]) => ({ lease, waiter })).sort((a, b) => a.lease.localeCompare(b.lease));
  }

  /** Every lease this keeper competes for. */
  get names(): readonly string[] {
    return this.#options.names;
  }

  /** Stops the rounds and releases every lease held (`onLost` for each). Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#round;
    for (const [name, lease] of [...this.#held]) {
      this.#held.delete(name);
      this.#notify(() => this.#options.onLost?.(name));
      try {
        await this.#options.leases.release(lease);
      } catch (error) {
        this.#logger.warn({ lease: name, err: { message: (error as Error).message } }, 'could not release a lease; it lapses on its own');
      }
    }
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.#runRound().finally(() => this.#schedule());
    }, this.intervalMs);
    this.#timer.unref();
  }

  #runRound(): Promise<void> {
    this.#round = this.#roundOnce();
    return this.#round;
  }

  async #roundOnce(): Promise<void> {
    const { leases, holder } = this.#options;
    const failures = new Map<string, Error>();
    for (const name of this.#options.names) {
      if (this.#stopped) return;
      const held = this.#held.get(name);
      try {
        if (held) {
          const request = await leases.requestedByOther(name, holder);
          if (request && (this.#options.mayYield?.(name) ?? true)) {
            this.#held.delete(name);
            this.#yielded.set(name, request.holder ?? '?');
            this.#notify(() => this.#options.onLost?.(name));
            await leases.release(held);
            this.#logger.info({ lease: name, fence: held.fence, waiter: request.holder }, 'lease yielded to a one-off run waiting for it (--wait)');
            continue;
          }
          await leases.renew(held);
          continue;
        }
        const acquired = await leases.acquire(name, holder);
        if (!acquired || this.#stopped) continue;
        this.#held.set(name, acquired.lease);
        this.#yielded.delete(name);
        this.#logger.info(
          { lease: name, fence: acquired.lease.fence, ...(acquired.previousHolder ? { previousHolder: acquired.previousHolder } : {}) },
          acquired.previousHolder ? 'lease taken over: its holder stopped renewing it' : 'lease acquired',
        );
        this.#notify(() => this.#options.onAcquired?.(acquired.lease));
      } catch (error) {
        if (error instanceof LeaseLostError) {
          this.#held.delete(name);
          this.#logger.warn({ lease: name, fence: held?.fence }, 'lease lost: another process took it over');
          this.#notify(() => this.#options.onLost?.(name));
        } else {
          // The database is busy or away: the next round tries again; fences keep writes safe meanwhile.
          failures.set(name, error instanceof Error ? error : new Error(String(error)));
        }
      }
    }
    if (this.#stopped) return;
    this.#logRound(failures);
    this.#notify(() => this.#options.onRoundEnded?.(failures));
  }

  /** Logs a round's failures as the module comment says: when they start, at most every `failureLogEveryMs`, and when they end. */
  #logRound(failures: ReadonlyMap<string, Error>): void {
    const now = Date.now();
    if (failures.size === 0) {
      if (this.#failing) this.#logger.info({ failedRounds: this.#failing.rounds, failingSince: this.#failing.since }, `leases renewed or acquired again after ${this.#failing.rounds} failed round(s)`);
      this.#failing = null;
      return;
    }
    const leases = [...failures.keys()];
    const [first, error] = [...failures][0]!;
    const fields = { leases, err: { message: `${first}: ${error.message}` } };
    if (!this.#failing) {
      this.#failing = { rounds: 1, since: new Date(now).toISOString(), loggedAt: now };
      this.#logger.warn(fields, 'could not renew or acquire leases (the database is busy, locked by another process or away); trying again every round');
      return;
    }
    this.#failing.rounds += 1;
    if (now - this.#failing.loggedAt < (this.#options.failureLogEveryMs ?? LEASE_FAILURE_LOG_EVERY_MS)) return;
    this.#failing.loggedAt = now;
    this.#logger.warn({ ...fields, failedRounds: this.#failing.rounds, failingSince: this.#failing.since }, `still cannot renew or acquire leases after ${this.#failing.rounds} failed rounds`);
  }

  #notify(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      this.#logger.error({ err: error }, 'a lease callback threw');
    }
  }
}
