/**
 * What a write kind is: DATA, in the manner of Airbyte's declarative connectors. One engine
 * (src/writes/write-engine.ts) runs every kind; a kind only describes its payload rules, its request, its
 * response, how safe it is to send again, how an ambiguous outcome is resolved and what it writes
 * through into the mirror (docs/writes.md, spec §4, §7, §8).
 */
import type { z } from 'zod';
import type { StreamName } from '../../streams/definitions.ts';

/**
 * How safe a kind is to send again (docs/writes.md):
 * - `idempotent`: the same request twice leaves the same state (RSVP, deal close, benefits PUT,
 *   draft PATCH): any failure may be retried.
 * - `conflict-means-done`: a second send answers 409 and changes nothing (clock-in, spec §4.19): a 409
 *   means the effect is already there, so it is retried like an idempotent kind and a 409 succeeds.
 * - `unsent-only`: not idempotent (transactions, emails, reviews, locations): sent again only when the
 *   request provably never reached the server (refused connection, 429).
 * - `never-after-send`: spends money (domain purchase, spec §4.14): like `unsent-only`, and an
 *   ambiguous outcome is never resolved by sending again.
 */
export type RetrySafety = 'idempotent' | 'conflict-means-done' | 'unsent-only' | 'never-after-send';


/**
 * A list lookup that finds the record an ambiguous write may have created (spec §4.13 for
 * transactions): the engine pages through `path` with `query`, keeps the items `matches` accepts
 * that were not already claimed by another write, and succeeds when exactly one remains.
 */
export interface LedgerLookup<P> {
  /** List endpoint under /api/public/v1, e.g. `/transactions`. */
  path: string;
  /** Member of `content` holding the items, e.g. `transactions`. */
  itemsKey: string;
  /** Member of the write's `result` that holds the found item, as in a normal response (`transaction`). */
  recordKey: string;
  /** Filters narrowing the list; `createdAfterIso` is the earliest creation time to consider. */
  query(payload: P, createdAfterIso: string): Record<string, string | number | boolean | undefined>;
  /** True when a list item has every field the write would have given it. */
  matches(item: Record<string, unknown>, payload: P): boolean;
  /** Write-through for the found item (it carries only the list fields). */
  stream?: StreamName;
}

/**
 * How an ambiguous outcome (the request may have reached the server, no answer came back) is resolved:
 * - `resend`: send it again (idempotent kinds, clock-in).
 * - `ledger-lookup`: look for the created record in a list; found -> succeeded; not found -> send
 *   again (it provably did not land); several candidates -> needs review.
 * - `park`: status `needs_review` with `reason`; never sent again automatically.
 */
export type AmbiguityResolution<P> =
  | { resolve: 'resend' }
  | { resolve: 'ledger-lookup'; lookup: LedgerLookup<P> }
  | { resolve: 'park'; reason: string };

/** A record the response carries that the mirror stores (docs/writes.md: write-through). */
export interface WriteThrough<R> {
  stream: StreamName;
  /** The record inside the response content. */
  record(content: R): Record<string, unknown>;
}

/**
 * One write kind. `P` is the validated payload, `R` the validated response `content`.
 * @see src/writes/kinds/index.ts for the registry.
 */
export interface WriteKind<Name extends string = string, Schema extends z.ZodType = z.ZodType, R = unknown> {
  /** `resource.action`, e.g. `transaction.create`. */
  name: Name;
  /** Where the spec describes it, e.g. `spec §4.7`. */
  spec: string;
  /** One line for `--help` and docs. */
  summary: string;
  /** The scope the acting token needs (spec §5). */
  scope: string;
  /** The payload's rules and limits (spec §4, §8). Every message names the rule. */
  payloadSchema: Schema;
  method: 'POST' | 'PUT' | 'PATCH';
  /** Path under /api/public/v1, ids URI-encoded. */
  path(payload: z.output<Schema>): string;
  /** The JSON body (path ids removed), or undefined for none (clock-in). */
  body(payload: z.output<Schema>): Record<string, unknown> | undefined;
  /** Validates the response's `content`. */
  responseSchema: z.ZodType<R>;
  retrySafety: RetrySafety;
  ambiguity: AmbiguityResolution<z.output<Schema>>;
  /** When set, a 409 is success with this outcome (clock-in: `entry already open`). */
  conflictOutcome?: string;
  /** The id of the record the write created or changed, for `writes.remote_id`. */
  remoteId(content: R, payload: z.output<Schema>): string | undefined;
  writeThrough?: WriteThrough<R>;
}

/** The payload type a kind accepts at intake (before defaults and transforms). */
export type PayloadInput<K extends WriteKind> = z.input<K['payloadSchema']>;
/** The validated payload a kind sends. */
export type PayloadOutput<K extends WriteKind> = z.output<K['payloadSchema']>;
