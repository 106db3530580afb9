/**
 * The spans of bizops-sync's traces (src/telemetry/index.ts says which and when they are exported):
 * `withSpan` over @opentelemetry/api once `startTelemetry` has started tracing, a no-op span of our
 * own until then. Imported by the parts that trace (the sync run, the write engine, the sinks), not
 * through the folder's face; it loads nothing of OpenTelemetry itself, so that a process that does not
 * trace (no `OTEL_EXPORTER_OTLP_ENDPOINT`: a one-off `sync`, `--help`, `config check`) never loads
 * the API: `startTelemetry` hands it over (`useTracingApi`) when tracing starts.
 */
import type { Attributes, Span, SpanContext } from '@opentelemetry/api';

const TRACER = 'bizops-sync';

/** What spans.ts uses of @opentelemetry/api: the module itself, as `import('@opentelemetry/api')` gives it. */
type TracingApi = typeof import('@opentelemetry/api');

/** The API once tracing started (`useTracingApi`); null while spans are no-ops. */
let tracingApi: TracingApi | null = null;

/**
 * Makes the spans real: from now on `withSpan` and `startRootSpan` go through `api`'s global tracer
 * (the provider `startTelemetry` registered); `null` makes them no-ops again (after a shutdown).
 */
export function useTracingApi(api: TracingApi | null): void {
  tracingApi = api;
}

/** True while spans are recorded (`useTracingApi` was given the API): a caller can skip building attributes otherwise. */
export function tracingOn(): boolean {
  return tracingApi !== null;
}

/** The span context of a span that is not recorded: the API's INVALID_SPAN_CONTEXT. */
const INVALID_SPAN_CONTEXT: SpanContext = { traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 };

/** A span that records nothing, as the API's no-op tracer makes them: every method returns at once. */
const NO_OP_SPAN: Span = {
  spanContext: () => INVALID_SPAN_CONTEXT,
  setAttribute: () => NO_OP_SPAN,
  setAttributes: () => NO_OP_SPAN,
  addEvent: () => NO_OP_SPAN,
  addLink: () => NO_OP_SPAN,
  addLinks: () => NO_OP_SPAN,
  setStatus: () => NO_OP_SPAN,
  updateName: () => NO_OP_SPAN,
  end: () => undefined,
  isRecording: () => false,
  recordException: () => undefined,
};

/**
 * Starts a span named `name` with `attributes`, the root of a trace of its own, not made active:
 * the caller ends it (`span.end()`). For work whose spans cannot each wrap a function (several
 * events sent in one round trip). A no-op span while tracing is off.
 */
export function startRootSpan(name: string, attributes: Attributes): Span {
  if (!tracingApi) return NO_OP_SPAN;
  return tracingApi.trace.getTracer(TRACER).startSpan(name, { attributes, root: true });
}

/**
 * Runs `fn` inside a span named `name` with `attributes`; the span ends when `fn` settles, with an
 * error status and the exception recorded when it throws (the error is rethrown). While tracing is
 * off, `fn` runs with a no-op span (a function call).
 * @param options.root start a new trace (a sync run) instead of a child of the active span
 */
export async function withSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>, options: { root?: boolean } = {}): Promise<T> {
  const api = tracingApi;
  if (!api) return fn(NO_OP_SPAN);
  return api.trace.getTracer(TRACER).startActiveSpan(name, { attributes, root: options.root ?? false }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: api.SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}
