/**
 * The seam between the delivery core (this folder: cursors, ordering by record, held events,
 * attempts, retries, pauses, disabling) and one kind of sink (docs/sinks.md). A kind only sends one
 * event and says how it went: a webhook endpoint POSTs it (src/notify/webhooks/webhook-sender.ts), a
 * broker publishes it and waits for the broker's acknowledgement (src/notify/sinks/). Everything else
 * (which event goes when, what is written to the mirror, what a failure holds back) is the core's,
 * the same for every kind. A new kind is one file: a `SinkSender` factory registered in
 * src/notify/sinks/sink-kinds.ts.
 */
import type { Attributes } from '@opentelemetry/api';
import type { ChangeEvent } from '../changelog-reader.ts';
import { startRootSpan, tracingOn, withSpan } from '../../telemetry/spans.ts';

/** An event the sink acknowledged: a webhook receiver's 2xx, a broker's publish acknowledgement. */
export interface DeliverySuccess {
  ok: true;
  /** The HTTP status of a webhook's 2xx; 0 for a broker (no status). */
  status: number;
  durationMs: number;
  /** What the sink answered, at most 1 KiB ('' when nothing): a webhook's body, a broker's acknowledgement (stream and sequence). */
  response: string;
}

/** An attempt that failed: an answer other than an acknowledgement, no answer, or an abort. */
export interface DeliveryFailure {
  ok: false;
  /** The HTTP status of a webhook's answer, or null (no answer; every broker failure). */
  status: number | null;
  /** One line for logs, `webhooks list` and `sinks list`, e.g. `HTTP 503`, `ECONNREFUSED ...`, `publish not acknowledged within 5000 ms`. Never a secret. */
  error: string;
  /** How long the sink asked to wait before the next attempt, ms (a webhook's Retry-After), or null. */
  retryAfterMs: number | null;
  /** True when the sink wants no more events (a webhook's 410 Gone): the core disables it at once. */
  gone: boolean;
  /** True when the dispatcher's stop aborted the attempt: not the sink's failure, nothing recorded. */
  aborted: boolean;
  durationMs: number;
  /** What the sink answered, at most 1 KiB; null without an answer. */
  response: string | null;
}

/** One attempt's outcome; narrow on `ok`. */
export type DeliveryOutcome = DeliverySuccess | DeliveryFailure;

/**
 * Sends the events of one sink. The core calls `send` for at most `maxInFlight` events at once,
 * never two of one record at once (a record's next event only after the earlier one's outcome).
 */
export interface SinkSender {
  /**
   * Sends one changelog event (its body: src/notify/event-payload.ts `webhookPayload`; its id:
   * `event.eventId`, the same on every attempt) and resolves once the sink acknowledged it or the
   * attempt failed. Opens or re-opens the sink's connection as needed. Never rejects: a failure is
   * a `DeliveryFailure` (with `aborted: true` when `signal` aborted it).
   */
  send(event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome>;
  /**
   * Optional: sends several events at once, each of a different record (a broker's pipeline: one
   * round trip for all), and resolves once every one of them was acknowledged or failed, with each
   * one's outcome in the order given (one failing does not fail the others). Each outcome means what
   * `send`'s does. Without it the core calls `send` once per event. Never rejects.
   */
  sendBatch?(events: readonly ChangeEvent[], signal: AbortSignal): Promise<DeliveryOutcome[]>;
  /** Closes the sink's connections (the dispatcher stopping). Never rejects. */
  close(): Promise<void>;
}

/** Milliseconds since `started` (a `performance.now()`), to a tenth. */
export function elapsedMs(started: number): number {
  return Math.round((performance.now() - started) * 10) / 10;
}

/** A failure without an answer (a broker's refusal, a timeout, a lost connection): one line, no secret. */
export function failedWithoutAnswer(error: string, started: number, aborted = false): DeliveryFailure {
  return { ok: false, status: null, error, retryAfterMs: null, gone: false, aborted, durationMs: elapsedMs(started), response: null };
}

/** One line naming an error (its code, message and cause), for a `DeliveryFailure`. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error && error.cause.message !== error.message ? `: ${error.cause.message}` : '';
  return `${typeof code === 'string' && !error.message.includes(code) ? `${code} ` : ''}${error.message}${cause}`.replace(/\s+/g, ' ').trim();
}

/**
 * `sender` with each attempt a trace of its own (docs/operations.md "Traces"): a root span `name`
 * carrying `target` (which endpoint or sink), the event's id, type, seq, stream and partition, and
 * whether it was delivered; never a URL (it may hold credentials) nor the body. Every kind's factory
 * wraps its sender with it, so the attributes are the same for webhooks and brokers.
 * @param name the span's name: `webhook.deliver`, `sink.deliver`
 * @param target the target's attributes, e.g. `{ 'bizops.endpoint': 'crm' }`
 */
export function tracedSender(sender: SinkSender, name: string, target: Attributes): SinkSender {
  const attributesOf = (event: ChangeEvent): Attributes => ({
    ...target,
    'bizops.event_id': event.eventId,
    'bizops.event_type': event.type,
    'bizops.seq': event.seq,
    'bizops.stream': event.stream,
    'bizops.partition': event.partition ?? '',
  });
  const traced: SinkSender = {
    send(event: ChangeEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
      return withSpan(
        name,
        attributesOf(event),
        async (span) => {
          const outcome = await sender.send(event, signal);
          span.setAttribute('bizops.delivered', outcome.ok);
          return outcome;
        },
        { root: true },
      );
    },
    close: () => sender.close(),
  };
  const sendBatch = sender.sendBatch?.bind(sender);
  if (sendBatch) {
    // Each event of a batch is still an attempt with a trace of its own, ending when the batch's answers arrive.
    traced.sendBatch = async (events, signal) => {
      // While tracing is off no span, and no attributes, per event.
      if (!tracingOn()) return sendBatch(events, signal);
      const spans = events.map((event) => startRootSpan(name, attributesOf(event)));
      const outcomes = await sendBatch(events, signal);
      spans.forEach((span, index) => {
        span.setAttribute('bizops.delivered', outcomes[index]?.ok ?? false);
        span.end();
      });
      return outcomes;
    };
  }
  return traced;
}

/**
 * The longest a sink's `close()` waits for its broker (ms): the answer to its close handshake, or an
 * opening under way; the sink's `ackTimeoutSeconds` when shorter. Everything the broker acknowledged
 * is recorded by then and the rest is sent again, so a close only releases the connection; the
 * dispatcher closes its sinks when the daemon stops, which must end well within the daemon's forced
 * exit (10 s after the stop signal), whatever `ackTimeoutSeconds` says (default 10 s).
 */
export const CLOSE_WAIT_MS = 2_000;

/**
 * `promise`, or a rejection (`signal.reason`) as soon as `signal` aborts, whichever comes first;
 * `promise` itself goes on (its outcome then ignored). A sink's send waits for its connection's
 * opening with it.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/**
 * `promise`'s value, or `fallback` when it has not settled within `ms` milliseconds (it rejects
 * when `promise` rejects first); `promise` itself goes on. A sink's close bounds its broker's
 * answer with it: a broker that stopped answering never gives one.
 */
export async function resultWithin<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<F>((resolve) => {
        timer = setTimeout(() => resolve(fallback), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
