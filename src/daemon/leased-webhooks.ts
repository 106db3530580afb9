/**
 * Webhook delivery while this daemon holds the mirror's `webhooks` lease (docs/operations.md
 * "Running two daemons (replicas)"): the lease keeper calls `begin` when it takes the lease and
 * `end` when it loses it; `begin` starts a new dispatcher whose every cursor move confirms the
 * lease's fence (src/notify/delivery/delivery-dispatcher.ts `fence`), `end` stops it. A dispatcher cannot be
 * started twice, so each hold gets a fresh one. Between holds, `stats()` reads the mirror through a
 * dispatcher that is never started (the endpoints' cursors and lags are the replica's then).
 *
 * A request cannot be fenced once it has left, so before each one the dispatcher asks `mayDeliver`:
 * true only while the lease is known to be unexpired by the database's clock (src/mirror/leases.ts
 * `leaseKnownValid`: its last renewal, sent less than a lease length ago). A daemon paused past its
 * lease (SIGSTOP, a stalled VM) therefore sends nothing when it wakes, even before its lease keeper
 * learns that a replica took the lease over; if nobody did, the next renewal lets it go on.
 */
import { silentLogger, type Logger } from '../logging/logger.ts';
import { leaseKnownValid, type HeldLease } from '../mirror/leases.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { DeliveryDispatcher } from '../notify/delivery/delivery-dispatcher.ts';
import type { WebhookEndpointStats } from '../notify/delivery/delivery-dispatcher.ts';

/** Construction options of LeasedWebhookDelivery. */
export interface LeasedWebhookDeliveryOptions {
  /**
   * A new, not started dispatcher with these `DeliveryDispatcherOptions` `fence` and `mayDeliver`
   * (none for the stand-by one, which only reads).
   */
  create(lease?: DeliveryUnderLease): Promise<DeliveryDispatcher>;
  /** Confirms `lease` inside a transaction (src/mirror/leases.ts `confirmLease` with the lease length). */
  confirm(tx: SqlExecutor, lease: HeldLease): Promise<void>;
  logger?: Logger;
}

/** What a dispatcher delivering under the lease is given (`DeliveryDispatcherOptions`). */
export interface DeliveryUnderLease {
  /** Confirms the lease's fence inside each of the dispatcher's writes. */
  fence(tx: SqlExecutor): Promise<void>;
  /** True while the lease is known to be unexpired: asked before each request leaves. */
  mayDeliver(): boolean;
}

/** One connection's webhook delivery under its lease; see the module comment. */
export class LeasedWebhookDelivery {
  readonly #options: LeasedWebhookDeliveryOptions;
  readonly #logger: Logger;
  #current: DeliveryDispatcher | null = null;
  /** The lease of the latest `begin`, until `end`. */
  #holding: HeldLease | null = null;
  #standby: Promise<DeliveryDispatcher> | undefined;
  /** Begins and ends run one after another, in the order called. */
  #queue: Promise<void> = Promise.resolve();

  constructor(options: LeasedWebhookDeliveryOptions) {
    this.#options = options;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'webhooks' });
  }

  /** True while a dispatcher delivers (this daemon holds the `webhooks` lease). */
  get delivering(): boolean {
    return this.#current !== null;
  }

  /**
   * Starts delivering under `lease` (after any earlier `begin` or `end`). The daemon calls it through
   * its part supervisor (part-supervisor.ts), which calls it again after a backoff when it throws.
   * @throws the creation's or the start's error (the database busy or away: creating the dispatcher
   *   reads and registers the endpoints); nothing is left running then
   */
  begin(lease: HeldLease): Promise<void> {
    this.#holding = lease;
    const step = this.#queue.then(async () => {
      if (this.#holding !== lease) return; // ended (or taken again) meanwhile
      await this.#stopCurrent();
      let dispatcher: DeliveryDispatcher | undefined;
      try {
        dispatcher = await this.#options.create({
          fence: (tx) => this.#options.confirm(tx, lease),
          mayDeliver: () => this.#holding === lease && leaseKnownValid(lease),
        });
        await dispatcher.start();
      } catch (error) {
        await dispatcher?.stop().catch(() => undefined);
        throw error;
      }
      this.#current = dispatcher;
      this.#logger.info({ fence: lease.fence }, 'webhook delivery started: this daemon holds the webhooks lease');
    });
    this.#queue = step.catch(() => undefined);
    return step;
  }

  /** Stops delivering (the lease was lost or released). */
  end(): Promise<void> {
    this.#holding = null;
    return this.#enqueue(() => this.#stopCurrent());
  }

  /** Resolves when every `begin` and `end` called so far is done (the endpoints registered, the loops started or stopped). */
  settled(): Promise<void> {
    return this.#queue;
  }

  /** Wakes the delivering dispatcher, if any. Never throws. */
  notify(): void {
    this.#current?.notify();
  }

  /** Per-endpoint figures, from the delivering dispatcher or, standing by, from the mirror. */
  async stats(): Promise<WebhookEndpointStats[]> {
    const current = this.#current;
    if (current) return current.stats();
    this.#standby ??= this.#options.create();
    return (await this.#standby).stats();
  }

  async #stopCurrent(): Promise<void> {
    const current = this.#current;
    this.#current = null;
    if (!current) return;
    await current.stop();
    this.#logger.info('webhook delivery stopped: the webhooks lease is not held');
  }

  #enqueue(step: () => Promise<void>): Promise<void> {
    this.#queue = this.#queue.then(step).catch((error: unknown) => {
      this.#logger.error({ err: error }, 'stopping webhook delivery failed');
    });
    return this.#queue;
  }
}
