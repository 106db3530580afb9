/**
 * The daemon's row in the mirror's `daemons` table (migration 19): where its HTTP port answers, which
 * process it is, and its parts' states as it last could write them, so that `bizops-sync status`
 * (src/status/daemon-parts.ts) finds the daemons serving a mirror, asks each one's `/readyz` for the
 * live states, and shows the stored ones (with their age) when a daemon does not answer.
 *
 * Written at start and then every `intervalMs` (a third of `sync.leaseSeconds`, as the lease
 * rounds), each time one `INSERT ... ON CONFLICT DO UPDATE`, then one `DELETE` of the rows of
 * daemons not seen for an hour (`DAEMON_ROW_STALE_AFTER_MS`: a process killed without its stop) and
 * of an earlier process at the same address on the same host (restarted). A write that fails (the SQLite file locked by another process, the database away) is
 * logged at debug level and tried at the next tick: the live states come from the daemon's port.
 * `remove` deletes the process's rows at its stop.
 */
import { hostname } from 'node:os';
import { silentLogger, type Logger } from '../logging/logger.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import type { PartStatus } from './part-supervisor.ts';

/** Rows of daemons not seen for this long are deleted by a running daemon, ms. */
export const DAEMON_ROW_STALE_AFTER_MS = 60 * 60_000;

/** What `DaemonRecord` writes and how often. */
export interface DaemonRecordOptions {
  executor: SqlExecutor;
  /** The process's id in the mirror: its lease holder name (`PROCESS_LEASE_HOLDER`, `host:pid:random`). */
  instance: string;
  /** The connection whose mirror this is (`default` without `connections`). */
  connection: string;
  /** Where the daemon's HTTP port answers from its own host or container (src/status `reachableUrl`). */
  url: string;
  /** When the process started (ISO 8601). */
  startedAt: string;
  /** The connection's parts' states now (`PartSupervisor.statuses`). */
  parts(): PartStatus[];
  /** How often the row is written, ms (> 0). */
  intervalMs: number;
  logger?: Logger;
}

/** Writes and refreshes one daemon connection's `daemons` row (module comment). */
export class DaemonRecord {
  readonly #options: DaemonRecordOptions;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<boolean> | undefined;

  /** @throws RangeError when `intervalMs` is not a positive number */
  constructor(options: DaemonRecordOptions) {
    if (!(options.intervalMs > 0)) throw new RangeError(`daemon record intervalMs must be a positive number of ms, got ${String(options.intervalMs)}`);
    this.#options = options;
    this.#logger = (options.logger ?? silentLogger).child({ component: 'daemon-record' });
  }

  /** Writes the row now, then every `intervalMs` until `stop`. Never throws. */
  start(): Promise<boolean> {
    this.#timer ??= setInterval(() => void this.write(), this.#options.intervalMs).unref();
    return this.write();
  }

  /**
   * Writes the row (and deletes the rows of daemons not seen for an hour). Resolves true when
   * written, false when the mirror refused (logged at debug level). One write at a time: a call
   * while one runs joins it. Never throws.
   */
  write(): Promise<boolean> {
    this.#writing ??= this.#write().finally(() => {
      this.#writing = undefined;
    });
    return this.#writing;
  }

  /** Stops the timer and deletes this process's row (errors logged). Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#writing;
    const { executor, instance, connection } = this.#options;
    try {
      await executor.run('DELETE FROM daemons WHERE instance = ? AND connection = ?', [instance, connection]);
    } catch (error) {
      this.#logger.warn({ err: { message: error instanceof Error ? error.message : String(error) } }, 'could not delete the daemon row at stop; status shows it as not answering until a daemon deletes it an hour on');
    }
  }

  async #write(): Promise<boolean> {
    const { executor, instance, connection, url, startedAt } = this.#options;
    const now = new Date();
    try {
      await executor.run(
        `INSERT INTO daemons (instance, connection, url, pid, hostname, started_at, seen_at, parts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (instance, connection) DO UPDATE SET url = excluded.url, seen_at = excluded.seen_at, parts = excluded.parts`,
        [instance, connection, url, process.pid, hostname(), startedAt, now.toISOString(), JSON.stringify(this.#options.parts())],
      );
      // A daemon not seen for an hour, or an earlier process at this very address on this host (restarted without its stop), is gone.
      await executor.run('DELETE FROM daemons WHERE seen_at < ? OR (hostname = ? AND url = ? AND instance <> ?)', [new Date(now.getTime() - DAEMON_ROW_STALE_AFTER_MS).toISOString(), hostname(), url, instance]);
      return true;
    } catch (error) {
      this.#logger.debug({ err: { message: error instanceof Error ? error.message : String(error) } }, 'could not write the daemon row; tried again at the next tick');
      return false;
    }
  }
}
