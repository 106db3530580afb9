/**
 * Masking the password of a URL before it is shown (configuration output, logs, error messages), and
 * every credential of a URL that is not ours to show (a webhook endpoint's: `maskUrlCredentials`).
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

/** What replaces a credential in a URL shown or stored by `maskUrlCredentials`. */
const MASK = '***';

/**
 * A URL with every place a credential can travel masked, for a URL whose credentials are not ours
 * to show (a webhook endpoint's): the user and password (`https://***:***@host/...`), every query
 * parameter's value with its name kept (`?token=***&channel=***`: the receiver's parameters are
 * opaque, any of them may be a key), the fragment (`#***`). Scheme, host, port and path stay, so the
 * result names the receiver. Idempotent. Text that is not a URL: anything after `?` or `#` and
 * between `://` and `@` masked.
 *
 *   maskUrlCredentials('https://bot:s3cret@hooks.example/in?token=abc') // 'https://***:***@hooks.example/in?token=***'
 */
export function maskUrlCredentials(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url.replace(/(:\/\/)[^/?#]*@/, `$1${MASK}@`).replace(/([?#]).*$/s, `$1${MASK}`);
  }
  const user = parsed.username === '' ? '' : MASK;
  const password = parsed.password === '' ? '' : `:${MASK}`;
  const userInfo = user === '' && password === '' ? '' : `${user}${password}@`;
  const query = parsed.search === '' ? '' : `?${[...parsed.searchParams.keys()].map((name) => `${encodeURIComponent(name)}=${MASK}`).join('&')}`;
  const fragment = parsed.hash === '' ? '' : `#${MASK}`;
  return `${parsed.protocol}//${userInfo}${parsed.host}${parsed.pathname}${query}${fragment}`;
}

/**
 * The credentials a URL carries, as literal secrets for the log and error-line masking: the whole
 * URL when it holds any (a user, a password, a query, a fragment), and each of those parts of 8
 * characters or more, as written and decoded (a shorter one would mask ordinary words wherever
 * they appear, and is no key worth the name). `[]` for a URL without any.
 */
export function urlCredentials(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const decoded = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  const parts = [parsed.username, parsed.password, ...parsed.searchParams.values(), parsed.hash.slice(1)].flatMap((part) => [part, decoded(part), encodeURIComponent(part)]);
  if (parsed.username === '' && parsed.password === '' && parsed.search === '' && parsed.hash === '') return [];
  return [...new Set([url, ...parts.filter((part) => part.length >= 8)])];
}
