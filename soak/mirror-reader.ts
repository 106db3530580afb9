/**
 * Reads the mirror the way a downstream system does (docs/mirror.md "Reading the mirror
 * downstream"): a SQLite file opened read-only, or the PostgreSQL schema with its own connection.
 * Never writes.
 */
import Database from 'better-sqlite3';
import pg from 'pg';

/** A read-only view of one mirror. */
export interface MirrorReader {
  /** Rows of one SELECT (`?` placeholders on both back ends). */
  all<Row = Record<string, unknown>>(sql: string, parameters?: unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

/**
 * Opens the mirror at `location`: a file path, or `postgres://...?schema=NAME`.
 * @throws Error when the file does not exist yet or the server refuses
 */
export async function openMirrorReader(location: string): Promise<MirrorReader> {
  if (/^postgres(ql)?:\/\//.test(location)) {
    const url = new URL(location);
    const schema = url.searchParams.get('schema') ?? 'bizops';
    url.searchParams.delete('schema');
    const client = new pg.Client({ connectionString: url.toString(), application_name: 'bizops-soak-reader' });
    client.on('error', () => undefined);
    await client.connect();
    await client.query(`SET search_path TO "${schema}"`);
    return {
      async all<Row>(sql: string, parameters: unknown[] = []) {
        let index = 0;
        const text = sql.replace(/\?/g, () => `$${++index}`);
        return (await client.query(text, parameters)).rows as Row[];
      },
      async close() {
        await client.end().catch(() => undefined);
      },
    };
  }
  const db = new Database(location, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  return {
    async all<Row>(sql: string, parameters: unknown[] = []) {
      return db.prepare(sql).all(...parameters) as Row[];
    },
    async close() {
      db.close();
    },
  };
}
