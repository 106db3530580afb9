/**
 * Event-type filters: which changelog events a webhook endpoint (or a `changes` reader) wants.
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
