/**
 * The bearer keys of the daemon's HTTP port (`http.readApiKey`, `http.writeApiKey`): a request
 * carries `Authorization: Bearer <key>`, compared in constant time over SHA-256 digests (no length
 * leak). Never logged, never echoed. Whoever checks a key builds its `BearerKey` once, with the
 * routes that check it (the route table, the console), and holds it: no key is kept anywhere else.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * One configured key, its SHA-256 digest computed once: each check hashes only the key presented
 * and compares the two digests in constant time.
 */
export class BearerKey {
  readonly #digest: Buffer;

  /** @param key the configured key (non-empty) */
  constructor(key: string) {
    this.#digest = hash('sha256', key, 'buffer');
  }

  /**
   * True when `request` carries `Authorization: Bearer <key>` (scheme in any case). False for any
   * other header, or none.
   */
  matches(request: IncomingMessage): boolean {
    const match = BEARER.exec(request.headers.authorization ?? '');
    if (!match) return false;
    return timingSafeEqual(hash('sha256', match[1]!, 'buffer'), this.#digest);
  }
}
