/**
 * What seeded records draw from: the timeline of createdAt/updatedAt pairs (with deliberate ties),
 * bursts of equal createdAt, names, and the record order every stream array keeps. The company's
 * generator (generate.ts) and each stream's own (streams/) use these, so the same seed gives the same
 * records.
 */
import { SeededRandom } from './random.ts';
import type { TimestampedRecord } from './records.ts';
import { NEGATIVE_TRANSACTION_TYPES } from './records.ts';

/** One day, ms. */
export const DAY_MS = 86_400_000;
/** The span seed records are created in: the 365 days before the anchor, ms. */
export const SPAN_MS = 365 * DAY_MS;

/** First names the seed data and later-created records draw from. */
export const FIRST_NAMES = [
  'Alex', 'Sam', 'Jordan', 'Taylor', 'Morgan', 'Casey', 'Riley', 'Jamie', 'Avery', 'Quinn', 'Harper', 'Rowan',
  'Elena', 'Marco', 'Priya', 'Kenji', 'Amara', 'Lucas', 'Sofia', 'Omar', 'Ines', 'Noah', 'Mia', 'Liam',
  'Chloe', 'Mateo', 'Zara', 'Felix', 'Nadia', 'Hugo',
];
/** Last names the seed data and later-created records draw from. */
export const LAST_NAMES = [
  'Morgan', 'Lee', 'Patel', 'Garcia', 'Nguyen', 'Smith', 'Kowalski', 'Okafor', 'Rossi', 'Tanaka', 'Muller', 'Silva',
  'Dubois', 'Hansen', 'Novak', 'Cohen', 'Khan', 'Berg', 'Fischer', 'Lopez', 'Brown', 'Walsh', 'Ibrahim', 'Costa',
];

/** ms epoch -> ISO timestamp with milliseconds. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The UTC midnight of a ms epoch, as an ISO timestamp. */
export function dayIso(ms: number): string {
  return iso(ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS));
}

/** Sorts records by (createdAt, id) ascending, the order every stream array keeps. */
export function compareCreated(left: TimestampedRecord, right: TimestampedRecord): number {
  if (left.createdAt < right.createdAt) return -1;
  if (left.createdAt > right.createdAt) return 1;
  return left.id < right.id ? -1 : left.id > right.id ? 1 : 0;
}

/** Signs an amount of cents by transaction type (spec §4.7): EXPENSE, DEDUCTION, TAX_PAYMENT negative. */
export function signedAmount(type: string, amount: number): number {
  const magnitude = Math.abs(amount);
  return NEGATIVE_TRANSACTION_TYPES.has(type) ? -magnitude : magnitude;
}

/** A record's creation and last update, ms epoch. */
export interface RecordTimes {
  createdMs: number;
  updatedMs: number;
}

/**
 * createdAt/updatedAt pairs for `count` stream records, increasing createdAt, spread over the year
 * before `anchorMs`. About 2% share the previous record's createdAt and 2% its updatedAt (ties).
 */
export function timeline(rng: SeededRandom, count: number, anchorMs: number): RecordTimes[] {
  const out: RecordTimes[] = new Array(count);
  const start = anchorMs - SPAN_MS;
  const step = SPAN_MS / Math.max(count, 1);
  let previous = { createdMs: start, updatedMs: start };
  for (let index = 0; index < count; index += 1) {
    let createdMs = Math.floor(start + index * step + rng.next() * step);
    if (index > 0 && rng.chance(0.02)) createdMs = previous.createdMs;
    let updatedMs = createdMs;
    if (rng.chance(0.4)) updatedMs = createdMs + Math.floor(rng.next() * (anchorMs - createdMs));
    if (index > 0 && rng.chance(0.02) && previous.updatedMs >= createdMs) updatedMs = previous.updatedMs;
    previous = { createdMs, updatedMs };
    out[index] = previous;
  }
  return out;
}

/**
 * Groups `times` into bursts sharing one createdAt (runs of 1 to `2 * meanBurst - 1` records). Draws
 * from its own generator (`seed`), so the rest of the seeded data stays the same with or without bursts.
 * No bursts when `meanBurst` is undefined or at most 1.
 */
export function inBursts(times: RecordTimes[], meanBurst: number | undefined, seed: number): RecordTimes[] {
  if (meanBurst === undefined || meanBurst <= 1) return times;
  const rng = new SeededRandom(seed);
  let index = 0;
  while (index < times.length) {
    const size = rng.int(1, 2 * Math.floor(meanBurst) - 1);
    const createdMs = (times[index] as RecordTimes).createdMs;
    for (let member = index; member < Math.min(times.length, index + size); member += 1) {
      const time = times[member] as RecordTimes;
      time.createdMs = createdMs;
      time.updatedMs = Math.max(time.updatedMs, createdMs);
    }
    index += size;
  }
  return times;
}
