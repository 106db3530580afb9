/**
 * Job: the mirror's status per stream (the `status` command and the daemon's readiness details).
 */
import { existsSync } from 'node:fs';
import { openMirror } from '../src/mirror/database.ts';
import { MirrorStore } from '../src/mirror/store.ts';
import { STREAMS, type StreamName } from '../src/streams/definitions.ts';

export interface StreamStatus {
  stream: StreamName;
  supported: boolean;
  /** Live rows (listed upstream) and tombstoned rows. */
  records: number;
  tombstoned: number;
  /** ISO server time: the next incremental run asks updatedAfter = cursor - overlap. */
  cursor: string | null;
  completeScans: number;
  lastRun: {
    mode: string | null;
    startedAt: string | null;
    finishedAt: string | null;
    succeededAt: string | null;
    requests: number | null;
    records: number | null;
    changes: number | null;
  };
  lastError: string | null;
  /** The unfinished run a restart will resume, if any. */
  inProgress: { reason: string; mode: string; offset: number; total: number | null; records: number } | null;
}

export interface MirrorStatus {
  database: string;
  changelogSeq: number;
  streams: StreamStatus[];
  /** Writes by status (`queued`, `sending`, `succeeded`, `failed`, `needs_review`). */
  writes: Record<string, number>;
}

/**
 * Reads the status of every stream from the mirror at `dbPath`.
 * @throws Error when the file does not exist (nothing has run yet)
 */
export function readStatus(dbPath: string): MirrorStatus {
  if (dbPath !== ':memory:' && !existsSync(dbPath)) throw new Error(`no mirror at ${dbPath} yet: run \`bizops-sync backfill\` first`);
  const db = openMirror(dbPath);
  try {
    const store = new MirrorStore(db);
    const streams = Object.values(STREAMS).map((stream): StreamStatus => {
      const state = store.readSyncState(stream.name);
      const counts = store.countRecords(stream);
      return {
        stream: stream.name,
        supported: state.supported,
        records: counts.live,
        tombstoned: counts.deleted,
        cursor: state.cursor,
        completeScans: state.scanNumber,
        lastRun: {
          mode: state.lastRunMode,
          startedAt: state.lastRunStartedAt,
          finishedAt: state.lastRunFinishedAt,
          succeededAt: state.lastSuccessAt,
          requests: state.lastRunRequests,
          records: state.lastRunRecords,
          changes: state.lastRunChanges,
        },
        lastError: state.lastError,
        inProgress: state.run
          ? { reason: state.run.reason, mode: state.run.mode, offset: state.run.offset, total: state.run.lastTotal ?? null, records: state.run.records }
          : null,
      };
    });
    const writes = Object.fromEntries(
      (db.prepare('SELECT status, COUNT(*) AS n FROM writes GROUP BY status ORDER BY status').all() as { status: string; n: number }[]).map((row) => [row.status, row.n]),
    );
    return { database: dbPath, changelogSeq: store.lastSeq(), streams, writes };
  } finally {
    db.close();
  }
}
