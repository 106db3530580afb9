/**
 * The bearer keys of the daemon's HTTP port (`http.readApiKey`, `http.writeApiKey`): a request
 * carries `Authorization: Bearer <key>`, compared in constant time over SHA-256 digests (no length
 * leak). Never logged, never echoed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * True when `request` carries `Authorization: Bearer <key>` (scheme in any case), compared in
 * constant time. False for any other header, or none.
 */
export function bearerKeyMatches(request: IncomingMessage, key: string): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return false;
  const presented = createHash('sha256').update(match[1]!).digest();
  const expected = createHash('sha256').update(key).digest();
  return timingSafeEqual(presented, expected);
}
