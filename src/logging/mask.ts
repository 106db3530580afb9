/**
 * Masking secrets inside free text (error messages, URLs, log lines). Its own module, without pino,
 * so that the CLI's error line and readers of the mirror mask secrets without loading the logger
 * (logger.ts re-exports it).
 */

/** Strings that look like credentials are masked even inside free text (error messages, URLs). */
const SECRET_PATTERNS: RegExp[] = [/Bearer\s+[^\s"',]+/gi, /whsec_[A-Za-z0-9+/=]+/g];

/** Literal secrets shorter than this are not masked (they would mask ordinary words). */
const MIN_LITERAL_SECRET_LENGTH = 4;

/**
 * Masks bearer tokens and webhook secrets inside a string, and each of `literals` (the configured
 * tokens, which have no recognisable shape) wherever it appears, as `[redacted]`.
 */
export function maskSecrets(text: string, literals: readonly string[] = []): string {
  let out = text;
  for (const pattern of SECRET_PATTERNS) out = out.replace(pattern, (m) => (m.startsWith('whsec_') ? 'whsec_[redacted]' : 'Bearer [redacted]'));
  for (const secret of literals) if (secret.length >= MIN_LITERAL_SECRET_LENGTH) out = out.split(secret).join('[redacted]');
  return out;
}
