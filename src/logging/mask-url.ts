/**
 * Masking the password of a URL before it is shown (configuration output, logs, error messages).
 * Beside mask.ts, without pino or the configuration schema, so that every module that shows a URL
 * (the configuration, the PostgreSQL mirror connection, the CLI) masks it at no loading cost.
 */

/**
 * `redis://user:secret@host:6379` -> `redis://user:***@host:6379` (also `https://user:secret@api...`
 * in BIZOPS_BASE_URL, `postgres://user:secret@db/bizops` in BIZOPS_DB); URLs without a password
 * unchanged. A text that is not a URL has anything between `://` and the last `@` before the first
 * `/` masked.
 */
export function maskUrlPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString().replace('%2A%2A%2A', '***');
  } catch {
    return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*):[^/]*@/i, '$1:***@');
  }
}
