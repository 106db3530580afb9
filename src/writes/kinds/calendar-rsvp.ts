/**
 * `calendar.rsvp`: POST /calendar-events/{eventId}/rsvp (spec §4.3, scope `calendar:write`).
 *
 * Rules: `eventId` non-empty; `response` an upper-case answer (`ACCEPTED`, `DECLINED` occur; the full
 * set is not shown, so the server decides beyond the shape); `occurrenceStart` (an ISO timestamp of
 * one occurrence) only with `DECLINED`. Idempotent: the same reply twice leaves the same state.
 */
import { z } from 'zod';
import { defineWriteKind, isoTimestamp, nonEmptyText, pathId, segment, text, without } from './fields.ts';

/** The payload of `calendar.rsvp` (spec §4.3), with the rules in this module's header; every message names the rule. */
const calendarRsvpPayload = z
  .strictObject({
    eventId: pathId,
    response: z
      .string({ error: 'must be a string such as ACCEPTED or DECLINED' })
      .regex(/^[A-Z][A-Z_]*$/, { error: 'must be an upper-case answer such as ACCEPTED or DECLINED' }),
    attendeeId: nonEmptyText.optional(),
    note: text.max(2000, { error: 'must be at most 2000 characters' }).optional(),
    occurrenceStart: isoTimestamp.optional(),
  })
  .superRefine((payload, context) => {
    if (payload.occurrenceStart !== undefined && payload.response !== 'DECLINED') {
      context.addIssue({ code: 'custom', path: ['occurrenceStart'], message: 'is only valid with response DECLINED' });
    }
  });

/** The `calendar.rsvp` write kind (spec §4.3): request, response, retry safety and ambiguity resolution. */
export const calendarRsvp = defineWriteKind({
  name: 'calendar.rsvp',
  spec: 'spec §4.3',
  summary: 'Reply to a calendar invitation (or decline one occurrence)',
  scope: 'calendar:write',
  payloadSchema: calendarRsvpPayload,
  method: 'POST',
  path: (payload) => `/calendar-events/${segment(payload.eventId)}/rsvp`,
  body: (payload) => without(payload, 'eventId'),
  responseSchema: z.looseObject({ event: z.looseObject({ id: z.string() }) }),
  retrySafety: 'idempotent',
  ambiguity: { resolve: 'resend' },
  remoteId: (content) => content.event.id,
});
