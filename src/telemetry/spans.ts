/**
 * The spans of bizops-sync's traces (src/telemetry/index.ts says which and when they are exported):
 * `withSpan` over @opentelemetry/api, a no-op span while no SDK is registered. Imported by the parts
 * that trace (the sync run, the write engine, the sinks), not through the folder's face, so that a
 * command that traces nothing (`--help`, `config check`) does not load the API.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';

const TRACER = 'bizops-sync';

/**
 * Starts a span named `name` with `attributes`, the root of a trace of its own, not made active:
 * the caller ends it (`span.end()`). For work whose spans cannot each wrap a function (several
 * events sent in one round trip).
 */
export function startRootSpan(name: string, attributes: Attributes): Span {
  return trace.getTracer(TRACER).startSpan(name, { attributes, root: true });
}

/**
 * Runs `fn` inside a span named `name` with `attributes`; the span ends when `fn` settles, with an
 * error status and the exception recorded when it throws (the error is rethrown).
 * @param options.root start a new trace (a sync run) instead of a child of the active span
 */
export async function withSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, options: { root?: boolean } = {}): Promise<T> {
  return trace.getTracer(TRACER).startActiveSpan(name, { attributes, root: options.root ?? false }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}
