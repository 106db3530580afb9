/**
 * The list endpoints the simulator serves from its ground truth, one declaration each
 * (`SimulatedStream`, simulated-stream.ts): the list routes, `World.groundTruth`, the stream sizes,
 * the change counters, churn, the scopes the tokens hold and the world's snapshot all derive from
 * `SIMULATED_STREAMS`. Adding a list endpoint is one declaration file and its line here
 * (docs/adding-a-stream.md); a test may add one at run time (`registerSimulatedStream`).
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

/**
 * Adds a list endpoint at run time, after the declared ones (generated last, so the other streams'
 * records stay as they were for a seed): `SIMULATED_STREAMS`, `STREAM_NAMES`, `DEFAULT_SIZES` and
 * `simulatedStream` see it at once. For tests that prove a new stream needs nothing but its
 * declaration: call it before the rest of the simulator (its routes, tokens and world) is imported,
 * as a vitest setup file does (test/streams/throwaway-setup.ts); a shipped stream is a line in
 * `SIMULATED_STREAMS` instead.
 * @throws Error naming the stream when a stream of that name or path is declared already
 */
export function registerSimulatedStream<R extends TimestampedRecord>(declaration: SimulatedStream<R, string>): void {
  const clash = SIMULATED_STREAMS.find((stream) => stream.name === declaration.name || stream.path === declaration.path);
  if (clash) throw new Error(`simulated stream ${declaration.name}: ${clash.name} (${clash.path}) is declared already with that name or path`);
  (SIMULATED_STREAMS as unknown as SimulatedStream<R, string>[]).push(declaration);
  (STREAM_NAMES as string[]).push(declaration.name);
  (DEFAULT_SIZES as Record<string, number>)[declaration.name] = declaration.defaultSize;
}
