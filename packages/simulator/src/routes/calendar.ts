/**
 * POST /calendar-events/{eventId}/rsvp (spec §4.3, scope calendar:write): records a reply.
 * - 404 when the event is not the caller's company's, or the caller is not an attendee of it.
 * - `attendeeId` (default: the caller's attendee) must name an attendee of this event, else 404.
 * - `response`: ACCEPTED, DECLINED or TENTATIVE (the full set is "not shown"; others 400).
 * - `occurrenceStart` only with DECLINED (else 400) and only on a recurring event (else 400): the
 *   series answer stays and the timestamp is added to the attendee's `declinedOccurrences`.
 */
import { z } from 'zod';
import { badRequest, notFound } from '../http-error.ts';
import { calendarEventView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';
import { isoTimestamp, parseBody } from './validation.ts';

/** The RSVP answers the simulator accepts (spec §4.3: the full set is not shown). */
export const RSVP_RESPONSES = ['ACCEPTED', 'DECLINED', 'TENTATIVE'] as const;

const rsvpBody = z.object({
  response: z.enum(RSVP_RESPONSES, { message: `must be one of ${RSVP_RESPONSES.join(', ')}` }),
  attendeeId: z.string().min(1).optional(),
  note: z.string().max(2000).optional(),
  occurrenceStart: isoTimestamp.optional(),
});

function rsvp(context: RequestContext) {
  const event = context.company.data.calendarEvents.find((candidate) => candidate.id === context.params.eventId);
  const own = event?.attendees.find((attendee) => attendee.employeeId === context.employee.id);
  if (!event || !own) throw notFound(`Calendar event ${context.params.eventId} not found, or you are not an attendee of it`);
  const body = parseBody(rsvpBody, context.body);
  if (body.occurrenceStart !== undefined && body.response !== 'DECLINED') {
    throw badRequest('occurrenceStart is only valid with response DECLINED');
  }
  if (body.occurrenceStart !== undefined && event.recurrenceRule === null) {
    throw badRequest('occurrenceStart is only valid on a recurring event');
  }
  const attendee = body.attendeeId === undefined ? own : event.attendees.find((candidate) => candidate.id === body.attendeeId);
  if (!attendee) throw notFound(`Attendee ${body.attendeeId} is not on calendar event ${event.id}`);
  if (body.occurrenceStart !== undefined) {
    if (!attendee.declinedOccurrences.includes(body.occurrenceStart)) attendee.declinedOccurrences.push(body.occurrenceStart);
  } else {
    attendee.status = body.response;
  }
  if (body.note !== undefined) attendee.note = body.note;
  event.updatedAt = context.company.now();
  return { message: 'Reply recorded', content: { event: calendarEventView(event) } };
}

/** POST /calendar-events/{eventId}/rsvp (spec §4.3). */
export const calendarRoutes: Route[] = [{ method: 'POST', path: '/calendar-events/{eventId}/rsvp', scope: 'calendar:write', handler: rsvp }];
