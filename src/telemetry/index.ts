/**
 * OpenTelemetry traces (docs/operations.md "Traces"): a span per sync run (`sync.run`, the root of
 * its own trace), per page request (`api.page`) and per page commit (`mirror.commit`) inside it; a
 * trace per webhook delivery attempt (`webhook.deliver`) and per write send (`write.send`).
 * Attributes name what was worked on (`bizops.stream`, `bizops.partition`, `bizops.mode`,
 * `bizops.offset`, `bizops.records`), never a secret or a record's contents.
 *
 * Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and
 * `OTEL_SDK_DISABLED` is not `true`: then `startTelemetry` loads the SDK and the API (dynamic
 * imports, so a process without tracing loads nothing of OpenTelemetry) and exports over OTLP/HTTP,
 * the exporter reading the standard `OTEL_*` variables (headers, timeout, service name). Off, every
 * span is spans.ts's no-op: `withSpan` costs a function call.
 */
import { useTracingApi } from './spans.ts';

/** A started SDK: `shutdown` flushes the spans still buffered (call it before the process exits). */
export interface Telemetry {
  shutdown(): Promise<void>;
}

/** What `startTelemetry` exports to instead of OTLP (tests: an in-memory exporter's processor). */
export interface TelemetryOptions {
  /** Span processors (`@opentelemetry/sdk-trace-base` `SpanProcessor`s); default one batching to OTLP/HTTP. */
  spanProcessors?: unknown[];
}

/**
 * Starts tracing when the environment asks for it (module comment), or always when `options.spanProcessors`
 * is given. Registers the global tracer provider and the async context manager (spans nest across awaits), and
 * hands the API to spans.ts, whose spans are no-ops until then.
 * @returns null when tracing stays off
 */
export async function startTelemetry(env: NodeJS.ProcessEnv = process.env, options: TelemetryOptions = {}): Promise<Telemetry | null> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!options.spanProcessors && (!endpoint || env.OTEL_SDK_DISABLED === 'true')) return null;
  const { NodeTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-node');
  let processors = options.spanProcessors as InstanceType<typeof BatchSpanProcessor>[] | undefined;
  if (!processors) {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    // The signal's own variable is the whole URL; the general one is a base the path is appended to (OTLP spec).
    const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || `${env.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, '')}/v1/traces`;
    processors = [new BatchSpanProcessor(new OTLPTraceExporter({ url }))];
  }
  const provider = new NodeTracerProvider({ spanProcessors: processors });
  provider.register();
  const api = await import('@opentelemetry/api');
  useTracingApi(api);
  return {
    async shutdown() {
      useTracingApi(null);
      await provider.shutdown();
      api.trace.disable();
      api.context.disable();
    },
  };
}
