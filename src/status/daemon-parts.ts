/**
 * The daemons serving a mirror and their parts' states, as `bizops-sync status` shows them
 * (docs/operations.md "The daemon's parts"). Read-only: it reads the mirror's `daemons` rows
 * (migration 19, written by each daemon: src/daemon/daemon-record.ts) and asks each recorded
 * daemon's `GET /readyz` (public, no key; `timeoutMs`, 2 s by default) for its live states:
 *
 * - the daemon answered, and its answer names the instance the row names (`daemon.instance`): the
 *   live states (`source: 'live'`);
 * - it did not answer, or another process answers at that address: the states the row stored, with
 *   when they were written (`source: 'stored'`) and why the live ones are missing (`error`);
 * - no row: the daemon may be unable to write the mirror (another process holds the SQLite file's
 *   write lock), so the daemon at the configured address (`http.host`/`http.port`, `configuredUrl`)
 *   is asked too; its answer counts only when it serves this very mirror (`daemon.mirrors` holds
 *   this mirror's `mirrorKey` for a connection). Otherwise `none` says in one line that no daemon is
 *   recorded, and whether anything answered at the configured address.
 *
 * A part's error is its short form (about 80 characters, secrets masked by the daemon's supervisor,
 * src/daemon/part-supervisor.ts); nothing here shows more of it.
 */
import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { PartStatus } from '../daemon/part-supervisor.ts';
import type { SqlExecutor } from '../mirror/sql/executor.ts';
import { isPostgresUrl, parsePostgresLocation } from '../mirror/sql/postgres-location.ts';

/** How long `status` waits for a daemon's `/readyz`, ms. */
export const DAEMON_ANSWER_TIMEOUT_MS = 2000;

/** One daemon (process) serving the mirror, for one of its connections, with its parts' states. */
export interface DaemonParts {
  /** The daemon process's id (its lease holder name, `host:pid:random`); null for a daemon found at the configured address only. */
  instance: string | null;
  /** The connection of the daemon whose parts these are (`default` without `connections`). */
  connection: string;
  /** The daemon's HTTP port as it recorded it (`http://127.0.0.1:8080`), or the configured address. */
  url: string;
  /** Its process id and host, when recorded. */
  pid: number | null;
  hostname: string | null;
  /** When the process started (ISO 8601), when known. */
  startedAt: string | null;
  /** `live`: the daemon answered now; `stored`: the states it last wrote into the mirror. */
  source: 'live' | 'stored';
  /** When the row was last written (ISO 8601); null for a daemon found at the configured address only. */
  seenAt: string | null;
  /** Why the live states are missing (`source: 'stored'`): no answer, or another process answered. */
  error: string | null;
  /** Each part's state, in the daemon's order. */
  parts: PartStatus[];
}

/** What `status` knows of the daemons serving the mirror. */
export interface DaemonPartsReport {
  /** Each daemon connection serving this mirror, recorded or found at the configured address. */
  daemons: DaemonParts[];
  /** One line when `daemons` is empty: no daemon recorded, and what the configured address said. Null otherwise. */
  none: string | null;
}

/** Where to look besides the mirror's rows. */
export interface DaemonPartsOptions {
  /** This mirror's key (`mirrorKey(dbPath)`): a daemon at `configuredUrl` must serve it. */
  mirrorKey: string;
  /** The daemon's configured address (`http://127.0.0.1:8080`); undefined: the rows only. */
  configuredUrl?: string;
  /** How long each `/readyz` may take, ms. Default `DAEMON_ANSWER_TIMEOUT_MS`. */
  timeoutMs?: number;
}

const PART_STATUS = z.looseObject({
  part: z.string(),
  state: z.enum(['starting', 'running', 'retrying', 'standby', 'stopped']),
  required: z.boolean(),
  since: z.string(),
  error: z.string().optional(),
  failures: z.number().optional(),
  reason: z.string().optional(),
});

/** What `status` reads of a `/readyz` answer: the daemon's identity and each connection's parts. */
const READYZ = z.looseObject({
  daemon: z.looseObject({ instance: z.string(), pid: z.number(), startedAt: z.string(), mirrors: z.record(z.string(), z.string()) }).optional(),
  parts: z.record(z.string(), PART_STATUS).optional(),
  connections: z.record(z.string(), z.looseObject({ parts: z.record(z.string(), PART_STATUS).optional() })).optional(),
});
type Readyz = z.infer<typeof READYZ>;

interface DaemonRow {
  instance: string;
  connection: string;
  url: string;
  pid: number;
  hostname: string;
  started_at: string;
  seen_at: string;
  parts: string;
}

/**
 * A mirror's identity across processes, 16 hex digits: the same for every process that opens the
 * same mirror, whatever the path or URL it was given (a SQLite file's real path; a PostgreSQL
 * server's host, port, database and schema, without user or password). Nothing of the location can
 * be read back from it, so the daemon's public `/readyz` may carry it.
 */
export function mirrorKey(dbPath: string): string {
  let identity: string;
  if (isPostgresUrl(dbPath)) {
    const { connectionString, schema } = parsePostgresLocation(dbPath);
    const url = new URL(connectionString);
    identity = `postgres://${url.hostname}:${url.port || '5432'}${url.pathname}#${schema}`;
  } else {
    const absolute = resolve(dbPath);
    try {
      identity = `sqlite:${realpathSync(absolute)}`;
    } catch {
      identity = `sqlite:${absolute}`;
    }
  }
  return createHash('sha256').update(identity).digest('hex').slice(0, 16);
}

/**
 * The daemons serving the mirror behind `executor` and their parts' states (module comment).
 * Never throws for a daemon that does not answer.
 * @throws the driver's error when the `daemons` table cannot be read
 */
export async function readDaemonParts(executor: SqlExecutor, options: DaemonPartsOptions): Promise<DaemonPartsReport> {
  const timeoutMs = options.timeoutMs ?? DAEMON_ANSWER_TIMEOUT_MS;
  const rows = await executor.all<DaemonRow>('SELECT instance, connection, url, pid, hostname, started_at, seen_at, parts FROM daemons ORDER BY started_at, instance, connection');
  // One request per daemon address, however many connections it serves.
  const answers = new Map<string, Promise<Readyz | Error>>();
  const ask = (url: string) => {
    let answer = answers.get(url);
    if (!answer) answers.set(url, (answer = askReadyz(url, timeoutMs)));
    return answer;
  };
  const daemons: DaemonParts[] = [];
  for (const row of rows) {
    const answer = await ask(row.url);
    const recorded = { instance: row.instance, connection: row.connection, url: row.url, pid: Number(row.pid), hostname: row.hostname, startedAt: row.started_at, seenAt: row.seen_at };
    const live = answer instanceof Error ? undefined : connectionParts(answer, row.connection);
    if (!(answer instanceof Error) && answer.daemon?.instance === row.instance && live) {
      daemons.push({ ...recorded, source: 'live', error: null, parts: live });
      continue;
    }
    const error =
      answer instanceof Error
        ? `did not answer (${answer.message})`
        : answer.daemon?.instance === row.instance
          ? 'answered without its parts'
          : `another process answers at ${row.url}${answer.daemon ? ` (daemon ${answer.daemon.instance})` : ''}`;
    daemons.push({ ...recorded, source: 'stored', error, parts: storedParts(row.parts) });
  }
  if (daemons.length > 0 || options.configuredUrl === undefined) {
    return { daemons, none: daemons.length > 0 ? null : 'no daemon recorded in the mirror (none running, or none has written to it yet)' };
  }
  const configured = options.configuredUrl;
  const answer = await ask(configured);
  if (answer instanceof Error) {
    const refused = answer.message === 'ECONNREFUSED';
    return {
      daemons,
      none: refused
        ? `no daemon recorded in the mirror, and nothing listens at ${configured} (http.host/http.port): no daemon is running for it`
        : `no daemon recorded in the mirror, and the daemon cannot be reached at ${configured} (http.host/http.port: ${answer.message})`,
    };
  }
  const served = Object.entries(answer.daemon?.mirrors ?? {}).filter(([, key]) => key === options.mirrorKey);
  for (const [connection] of served) {
    const parts = connectionParts(answer, connection);
    if (!parts) continue;
    daemons.push({
      instance: answer.daemon!.instance,
      connection,
      url: configured,
      pid: answer.daemon!.pid,
      hostname: null,
      startedAt: answer.daemon!.startedAt,
      source: 'live',
      seenAt: null,
      error: null,
      parts,
    });
  }
  if (daemons.length > 0) return { daemons, none: null };
  return { daemons, none: `no daemon recorded in the mirror; the daemon answering at ${configured} (http.host/http.port) serves another mirror` };
}

/**
 * `GET <url>/readyz` (200 or 503 both carry the verdict), or the Error saying why no usable answer
 * came: the connection's error code (`ECONNREFUSED`: nothing listens), `no answer within N ms`, or
 * an answer that is not a daemon's.
 */
async function askReadyz(url: string, timeoutMs: number): Promise<Readyz | Error> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    const text = await response.text();
    if (response.status !== 200 && response.status !== 503) return new Error(`HTTP ${response.status} from /readyz: not a bizops-sync daemon's answer`);
    const parsed = READYZ.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : new Error("/readyz's answer is not a bizops-sync daemon's");
  } catch (error) {
    if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return new Error(`no answer within ${timeoutMs} ms`);
    if (error instanceof SyntaxError) return new Error("/readyz's answer is not a bizops-sync daemon's");
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : undefined;
    const code = cause && 'code' in cause ? String(cause.code) : undefined;
    return new Error(code ?? cause?.message ?? (error instanceof Error ? error.message : String(error)));
  }
}

/**
 * The parts of `connection` in a `/readyz` answer: `connections[connection].parts`, or the top
 * level's with one connection; undefined when it has none.
 */
function connectionParts(answer: Readyz, connection: string): PartStatus[] | undefined {
  const parts = answer.connections?.[connection]?.parts ?? (answer.connections === undefined ? answer.parts : undefined);
  return parts ? Object.values(parts).map((part) => part as PartStatus) : undefined;
}

/** The parts a row stored (its JSON), or none when it cannot be read. */
function storedParts(json: string): PartStatus[] {
  try {
    const parsed = z.array(PART_STATUS).safeParse(JSON.parse(json));
    return parsed.success ? parsed.data.map((part) => part as PartStatus) : [];
  } catch {
    return [];
  }
}

/**
 * The base URL at which a server bound to `host:port` answers from its own host or container: a
 * wildcard address (`0.0.0.0`, `::`, empty) is reached at the loopback address (`127.0.0.1`, `[::1]`).
 */
export function reachableUrl(host: string, port: number): string {
  const reachable = host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' || host === '[::]' ? '::1' : host;
  const bracketed = reachable.includes(':') && !reachable.startsWith('[') ? `[${reachable}]` : reachable;
  return `http://${bracketed}:${port}`;
}
