/**
 * The list endpoints the simulator serves from its ground truth, one declaration each
 * (`SimulatedStream`, simulated-stream.ts): the list routes, `World.groundTruth`, the stream sizes,
 * the change counters and churn all iterate `SIMULATED_STREAMS`. Adding a list endpoint is one
 * declaration file and its line here.
 *
 * The order is the generation order: each stream's seed records draw from the company's generator in
 * turn (customers first: deals name them), so an entry added at the end leaves the earlier streams'
 * records as they were for a seed.
 */
import type { TimestampedRecord } from '../records.ts';
import { customersList } from './customers-stream.ts';
import { dealsList } from './deals-stream.ts';
import { onboardingsList } from './onboardings-stream.ts';
import { qaCorrectiveActionsList } from './qa-corrective-actions-stream.ts';
import type { SimulatedStream } from './simulated-stream.ts';
import { transactionsList } from './transactions-stream.ts';

export type { ChurnOutcome, SeedingCompany, SimulatedStream, StreamSeed } from './simulated-stream.ts';

/** Every simulated list endpoint, in generation order. */
export const SIMULATED_STREAMS = [customersList, dealsList, onboardingsList, transactionsList, qaCorrectiveActionsList] as const;

/** A simulated stream's name: `transactions`, `deals`, `onboardings`, `customers`, `qa_corrective_actions`. */
export type StreamName = (typeof SIMULATED_STREAMS)[number]['name'];

/** Every simulated stream's name, in generation order. */
export const STREAM_NAMES: readonly StreamName[] = SIMULATED_STREAMS.map((stream) => stream.name);

/** The internal record type of stream `Name`. */
export type RecordOf<Name extends StreamName> = Extract<(typeof SIMULATED_STREAMS)[number], { name: Name }> extends SimulatedStream<infer R, Name> ? R : never;

/** Each stream's records by name, kept sorted by (createdAt, id). */
export type StreamRecords = { [Name in StreamName]: RecordOf<Name>[] };

/** How many records to generate per stream for one company. */
export type StreamSizes = Record<StreamName, number>;

/** Company A's stream sizes when the options name none (company B gets a tenth of each, at least 5). */
export const DEFAULT_SIZES: StreamSizes = Object.fromEntries(SIMULATED_STREAMS.map((stream) => [stream.name, stream.defaultSize])) as StreamSizes;

/**
 * The declaration of a stream, by name.
 * @throws Error naming the simulated streams when `name` is not one
 */
export function simulatedStream(name: string): SimulatedStream<TimestampedRecord, StreamName> {
  const stream = SIMULATED_STREAMS.find((candidate) => candidate.name === name);
  if (!stream) throw new Error(`unknown stream ${String(name)}; expected one of ${STREAM_NAMES.join(', ')}`);
  return stream as unknown as SimulatedStream<TimestampedRecord, StreamName>;
}
