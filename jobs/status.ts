/**
 * Job: the mirror's status per stream and the writes by status (the `status` command; the daemon
 * tests read it too). Reads the mirror only: no API settings needed. Works on both back ends:
 * SQLite (schema version `PRAGMA user_version`, health `PRAGMA quick_check`) and PostgreSQL (schema
 * version from `schema_version`, health: every table of the mirror present in its schema). What it
 * reports of the streams, writes and leases is src/status/'s report, the one the daemon's console shows.
 */
import { daemonAddress } from '../src/config/index.ts';
import { MIGRATIONS, mirrorHealthCheck, mirrorSchemaVersion } from '../src/mirror/index.ts';
import { mirrorKey, reachableUrl, readDaemonParts, readMirrorReport, verdictOf, type DaemonPartsReport, type MirrorReport, type Verdict } from '../src/status/index.ts';
import { MirrorDamagedError, MirrorNeedsMigrationError } from './mirror-errors.ts';
import { classifyMirrorError, mirrorLocation, openExistingMirror } from './open-mirror.ts';

export type { DaemonParts, DaemonPartsReport, StreamStatus, Verdict, WriteNeedingReview } from '../src/status/index.ts';

/** The schema version this build reads: its last migration's (both back ends number them alike). */
const SCHEMA_VERSION = MIGRATIONS.at(-1)?.version ?? 0;

/** What `status --json` prints: where the mirror is, its health, and its report (src/status/). */
export interface MirrorStatus extends MirrorReport {
  /** Where the mirror is: the file path, or the PostgreSQL URL with its password masked. */
  database: string;
  /** The back end holding the mirror. */
  backend: 'sqlite' | 'postgres';
  /**
   * The mirror's health: `ok`, or what is wrong. SQLite: `PRAGMA quick_check` of the file (the
   * problems SQLite found; docs/operations.md "A damaged mirror"). PostgreSQL: every table of the
   * mirror is in its schema (`missing tables: ...` otherwise); the server keeps its storage consistent.
   */
  quickCheck: string;
  /**
   * The verdict line (src/status/verdict.ts): `all 5 streams ok`, or what needs a look, worst
   * first, over every stream, the endpoints the mirror keeps state for, and the writes.
   */
  verdict: Verdict;
  /**
   * The daemons serving the mirror and each one's parts (src/status/daemon-parts.ts): live from the
   * daemon's `/readyz`, or as it last wrote them when it did not answer; `none` says so when no daemon is found.
   */
  daemons: DaemonPartsReport;
}

/** Where `readStatus` looks for a daemon besides the mirror's `daemons` rows. */
export interface ReadStatusOptions {
  /**
   * The daemon's configured address (`http.host`/`http.port` as reachable here: `configuredDaemonUrl`),
   * asked when the mirror records no daemon (one that cannot write the mirror); undefined: not asked.
   */
  daemonUrl?: string;
  /** How long each daemon's `/readyz` may take, ms. Default 2000. */
  daemonTimeoutMs?: number;
}

export { MirrorNeedsMigrationError } from './mirror-errors.ts';

/**
 * The daemon's configured HTTP address as reachable from this host (`http://127.0.0.1:8080`; a
 * wildcard `http.host` is asked at the loopback address), or undefined when `http.port` is 0.
 * @throws ConfigError when the config file named by BIZOPS_CONFIG does not exist or is not JSON
 */
export function configuredDaemonUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const address = daemonAddress({ env });
  return address ? reachableUrl(address.host, address.port) : undefined;
}

/**
 * Reads the status of every stream from the mirror at `dbPath` (a file path or a PostgreSQL URL),
 * opened READ-ONLY: `status` never migrates nor writes the mirror (a daemon may be writing it).
 * The daemons serving it are asked for their parts (`daemons`: each recorded daemon's `/readyz`,
 * then `options.daemonUrl` when none is recorded; 2 s each at most).
 * @throws MirrorMissingError when the file, or the PostgreSQL schema, does not exist (nothing has run yet)
 * @throws MirrorNeedsMigrationError when the file's schema is older than this bizops-sync's
 *   (`bizops-sync sync` or the daemon migrates it)
 * @throws MirrorDamagedError when SQLite cannot read the file (its header, or a page status reads:
 *   the message then carries quick_check's findings); ConfigError when the path is unusable.
 *   A file whose damaged pages status does not need is READ: `quickCheck` names the problems.
 */
export async function readStatus(dbPath: string, options: ReadStatusOptions = {}): Promise<MirrorStatus> {
  const connection = await openExistingMirror(dbPath, { readonly: true });
  const location = mirrorLocation(dbPath);
  let quickCheck: string | undefined;
  try {
    const version = await mirrorSchemaVersion(connection);
    if (version < SCHEMA_VERSION) {
      throw new MirrorNeedsMigrationError(
        `the mirror ${location} is at schema version ${version}, this bizops-sync reads version ${SCHEMA_VERSION}; \`status\` does not migrate it: run \`bizops-sync sync\` (or start the daemon) once`,
      );
    }
    quickCheck = await mirrorHealthCheck(connection);
    const now = new Date();
    const report = await readMirrorReport(connection, { now });
    const daemons = await readDaemonParts(connection, {
      mirrorKey: mirrorKey(dbPath),
      ...(options.daemonUrl === undefined ? {} : { configuredUrl: options.daemonUrl }),
      ...(options.daemonTimeoutMs === undefined ? {} : { timeoutMs: options.daemonTimeoutMs }),
    });
    const verdict = verdictOf({
      daemons: daemons.daemons,
      streams: report.streams,
      endpoints: report.endpoints,
      recentFailedWrites: report.recentFailedWrites,
      writesNeedingReview: report.writes.needs_review ?? 0,
      now,
    });
    return { database: location, backend: connection.dialect, quickCheck, verdict, ...report, daemons };
  } catch (error) {
    // A read-only open is lazy: a damaged header shows at the first statement, a damaged page at the
    // first read of it (quick_check may have listed it already: then the line names its findings).
    const classified = classifyMirrorError(dbPath, error);
    if (classified instanceof MirrorDamagedError && quickCheck !== undefined && quickCheck !== 'ok') {
      throw new MirrorDamagedError(
        `the mirror ${dbPath} is damaged (PRAGMA quick_check: ${quickCheck}); restore it from a backup, or move it away and run \`bizops-sync backfill\``,
        { cause: error },
      );
    }
    throw classified;
  } finally {
    await connection.close();
  }
}
