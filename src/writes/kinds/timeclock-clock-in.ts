/**
 * `timeclock.clock_in`: POST /time-clock-entries (spec §4.19, scope `hr:write`). No body: it opens an
 * entry for the employee the acting token acts as (name that token with `actAs`).
 *
 * Clocking in while an entry is open answers 409 and creates no second entry, so sending again is
 * safe and a 409 means the effect is already there: the write succeeds with outcome
 * `entry already open`.
 */
import { z } from 'zod';
import { defineWriteKind } from './fields.ts';

/** The outcome of a clock-in answered 409 (an entry is already open, spec §4.19): the write succeeded. */
export const ENTRY_ALREADY_OPEN = 'entry already open';

/** The payload of `timeclock.clock_in` (spec §4.19), with the rules in this module's header; every message names the rule. */
const timeclockClockInPayload = z.strictObject({});

/** The `timeclock.clock_in` write kind (spec §4.19): request, response, retry safety and ambiguity resolution. */
export const timeclockClockIn = defineWriteKind({
  name: 'timeclock.clock_in',
  spec: 'spec §4.19',
  summary: 'Clock in the employee the acting token acts as',
  scope: 'hr:write',
  payloadSchema: timeclockClockInPayload,
  method: 'POST',
  path: () => '/time-clock-entries',
  body: () => undefined,
  responseSchema: z.looseObject({
    entry: z.looseObject({ id: z.string(), employeeId: z.string(), clockInAt: z.string(), clockOutAt: z.string().nullable() }),
  }),
  retrySafety: 'conflict-means-done',
  ambiguity: { resolve: 'resend' },
  conflictOutcome: ENTRY_ALREADY_OPEN,
  remoteId: (content) => content.entry.id,
});
