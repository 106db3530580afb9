/**
 * Event-type filters (the face of src/notify/event-filter/: no imports, so checking a configuration's
 * patterns loads none of the changelog, the pull API or the delivery engines): which changelog events a webhook endpoint (or a `changes` reader) wants.
 *
 * A filter is a list of patterns (src/config/schema.ts `WebhookEndpointConfig.events`), matched against
 * an event's `type` (e.g. `deal.won`):
 *   - `*`          every event
 *   - `deal.*`     a prefix wildcard: every type starting with `deal.` (not `deal` itself)
 *   - `deal.won`   exactly that type
 * An event matches the filter when it matches any pattern. Spec §6 leaves outbound events
 * unspecified; the type names are this project's (docs/mirror.md).
 */

/** Answers whether an event type passes a filter. */
export type EventTypeFilter = (type: string) => boolean;

const EXACT_TYPE = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/**
 * Checks one pattern and returns it unchanged.
 * @param field names the pattern in the error (e.g. `webhooks.crm.events[1]`)
 * @throws Error naming the field and the rule when the pattern is not `*`, `prefix.*` or an exact type
 */
export function validateEventPattern(pattern: string, field = 'events'): string {
  if (pattern === '*') return pattern;
  const exact = pattern.endsWith('.*') ? pattern.slice(0, -2) : pattern;
  if (!EXACT_TYPE.test(exact)) {
    throw new Error(`${field}: "${pattern}" is not an event type pattern; use "*", a prefix wildcard like "deal.*", or an exact type like "deal.won"`);
  }
  return pattern;
}

/**
 * Whether a pattern (`*`, `prefix.*` or an exact type, already valid) matches `type`.
 */
function patternMatches(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  return pattern.endsWith('.*') ? type.startsWith(pattern.slice(0, -1)) : type === pattern;
}

/**
 * Checks that each pattern is well-formed and matches at least one of `knownTypes` (the event types
 * the changelog can hold: src/notify/event-schemas.ts `knownEventTypes`). A well-formed pattern no
 * type has (`deals.*` for `deal.*`) would select nothing for ever, and a reader moving its cursor
 * past the events it skipped would lose them all: it is refused instead (docs/decisions.md).
 * @param field names the list in errors (`types`, `--type`); each pattern is `<field>[<index>]`
 * @throws Error naming the field, the pattern and the rule: `types[0]: "deals.*" matches no event
 *   type (did you mean "deal.*"?); the known types are deal.created, ...`
 */
export function checkEventPatterns(patterns: readonly string[], knownTypes: readonly string[], field = 'events'): void {
  patterns.forEach((pattern, index) => {
    const where = `${field}[${index}]`;
    validateEventPattern(pattern, where);
    if (knownTypes.some((type) => patternMatches(pattern, type))) return;
    const guess = closestPattern(pattern, knownTypes);
    throw new Error(`${where}: "${pattern}" matches no event type${guess ? ` (did you mean "${guess}"?)` : ''}; the known types are ${knownTypes.join(', ')}`);
  });
}

/** The pattern of the same form closest to `pattern` (one edit of its type part, e.g. a plural `s`), or undefined. */
function closestPattern(pattern: string, knownTypes: readonly string[]): string | undefined {
  const wildcard = pattern.endsWith('.*');
  const text = wildcard ? pattern.slice(0, -2) : pattern;
  const candidates = new Set(wildcard ? knownTypes.map((type) => type.split('.')[0]!) : knownTypes);
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(text.toLowerCase(), candidate.toLowerCase());
    if (distance <= Math.max(1, Math.floor(candidate.length / 4)) && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best ? `${best.candidate}${wildcard ? '.*' : ''}` : undefined;
}

/**
 * `checkEventPatterns` against every event type the changelog can hold, the list loaded on first use
 * (src/notify/event-schemas.ts, with the stream registry and the other event types): a reader
 * checking its `--type` patterns pays for it only then.
 * @throws Error naming the field and the pattern, listing the known types
 */
export async function checkKnownEventPatterns(patterns: readonly string[], field = 'events'): Promise<void> {
  const { knownEventTypes } = await import('../event-schemas.ts');
  checkEventPatterns(patterns, knownEventTypes(), field);
}

/** Levenshtein distance between two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * Compiles patterns into a filter.
 * @param patterns at least one of `*`, `prefix.*`, exact type
 * @param field names the list in errors
 * @throws Error naming the field when the list is empty or a pattern is malformed
 */
export function compileEventFilter(patterns: readonly string[], field = 'events'): EventTypeFilter {
  if (patterns.length === 0) throw new Error(`${field}: must list at least one event type pattern ("*" for all)`);
  patterns.forEach((pattern, index) => validateEventPattern(pattern, `${field}[${index}]`));
  if (patterns.includes('*')) return () => true;
  const exact = new Set(patterns.filter((p) => !p.endsWith('.*')));
  const prefixes = patterns.filter((p) => p.endsWith('.*')).map((p) => p.slice(0, -1)); // keep the dot: `deal.`
  return (type) => exact.has(type) || prefixes.some((prefix) => type.startsWith(prefix));
}
