/**
 * The hr:write endpoints: POST /performance-reviews (spec §4.15), PUT /employees/{employeeId}/benefits
 * (spec §4.16), POST /time-clock-entries (spec §4.19); and POST /locations (spec §4.18,
 * locations:write).
 */
import { z } from 'zod';
import { badRequest, HttpError, notFound } from '../http-error.ts';
import type { TimeClockEntryRecord } from '../records.ts';
import { timeClockEntryView } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';
import { parseBody } from './validation.ts';

const reviewBody = z.object({
  employeeId: z.string().min(1),
  reviewDate: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/, { message: 'must be a date YYYY-MM-DD' })
    .refine((value) => !Number.isNaN(Date.parse(value)), { message: 'must be a real date' }),
  summary: z.string().optional(),
  strengths: z.string().optional(),
  improvements: z.string().optional(),
  status: z.enum(['DRAFT', 'SHARED'], { message: 'must be DRAFT or SHARED' }).default('DRAFT'),
  ratings: z
    .array(
      z.object({
        criterion: z.string().min(1),
        score: z.number().int({ message: 'must be an integer 1 to 5' }).min(1, { message: 'must be an integer 1 to 5' }).max(5, { message: 'must be an integer 1 to 5' }),
      }),
    )
    .min(1, { message: 'at least one rating is required' }),
});

/**
 * Creates a review. `overallScore` in the body is refused with 400 (it is computed: the mean of the
 * scores to one decimal). The reviewer (the token's employee) must be the employee's manager or HR,
 * else 403; an unknown employee is 404. SHARED notifies the employee (`company.data.notifications`).
 */
function createReview(context: RequestContext) {
  if (typeof context.body === 'object' && context.body !== null && 'overallScore' in context.body) {
    throw badRequest('overallScore is not accepted: it is computed as the mean of the rating scores');
  }
  const body = parseBody(reviewBody, context.body);
  const data = context.company.data;
  const employee = data.employees.find((candidate) => candidate.id === body.employeeId);
  if (!employee) throw notFound(`Employee ${body.employeeId} not found`);
  const reviewer = context.employee;
  if (employee.managerId !== reviewer.id && !reviewer.isHr) {
    throw new HttpError(403, `Only ${employee.fullname}'s manager or HR may review them`);
  }
  const now = context.company.now();
  const mean = body.ratings.reduce((sum, rating) => sum + rating.score, 0) / body.ratings.length;
  const review = {
    id: context.company.newId('rev'),
    employeeId: employee.id,
    reviewerEmployeeId: reviewer.id,
    reviewDate: body.reviewDate,
    summary: body.summary ?? null,
    strengths: body.strengths ?? null,
    improvements: body.improvements ?? null,
    status: body.status,
    ratings: body.ratings,
    overallScore: Math.round(mean * 10) / 10,
    createdAt: now,
  };
  data.performanceReviews.push(review);
  if (review.status === 'SHARED') {
    data.notifications.push({ id: context.company.newId('ntf'), employeeId: employee.id, kind: 'performance-review.shared', subjectId: review.id, at: now });
  }
  return { message: 'Performance review created', content: { reviewId: review.id, shared: review.status === 'SHARED' } };
}

const benefitsBody = z.object({ benefitIds: z.array(z.string(), { message: 'must be an array of benefit ids' }) });

/** Replaces the enrollment list; ids not belonging to the company are dropped, duplicates collapse. */
function replaceBenefits(context: RequestContext) {
  const data = context.company.data;
  const employee = data.employees.find((candidate) => candidate.id === context.params.employeeId);
  if (!employee) throw notFound(`Employee ${context.params.employeeId} not found`);
  const body = parseBody(benefitsBody, context.body);
  const known = new Set(data.benefits.map((benefit) => benefit.id));
  employee.benefitIds = [...new Set(body.benefitIds.filter((id) => known.has(id)))];
  return { message: 'Benefits replaced', content: { employeeId: employee.id, benefitIds: [...employee.benefitIds] } };
}

/**
 * Clocks the token's employee in. 409 when an entry is already open (no second entry). Inside a
 * scheduled shift the entry links to it and its location; outside any shift `shiftId` is null and
 * `locationId` is the employee's home location (the spec does not show that case).
 */
function clockIn(context: RequestContext) {
  const data = context.company.data;
  const employee = context.employee;
  const open = data.timeClockEntries.find((entry) => entry.employeeId === employee.id && entry.clockOutAt === null);
  if (open) throw new HttpError(409, `You are already clocked in (entry ${open.id} is open)`);
  const now = context.company.now();
  const shift = data.shifts.find((candidate) => candidate.employeeId === employee.id && candidate.startAt <= now && now < candidate.endAt);
  const entry: TimeClockEntryRecord = {
    id: context.company.newId('tce'),
    employeeId: employee.id,
    locationId: shift ? shift.locationId : employee.homeLocationId,
    shiftId: shift ? shift.id : null,
    clockInAt: now,
    clockOutAt: null,
    createdAt: now,
    updatedAt: now,
  };
  data.timeClockEntries.push(entry);
  return { message: 'Clocked in', content: { entry: timeClockEntryView(entry) } };
}

const locationBody = z.object({
  reference: z.string().trim().min(1, { message: 'is required' }).max(200),
  subdomain: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, { message: 'must be 1-63 lowercase letters, digits or hyphens' }),
  tagline: z.string().max(500).optional(),
  code: z.string().max(100).optional(),
});

/** Creates a location. A subdomain already used by any location is 409 (not shown in the spec). */
function createLocation(context: RequestContext) {
  const body = parseBody(locationBody, context.body);
  const taken = Object.values(context.world.companies).some((company) => company.data.locations.some((location) => location.subdomain === body.subdomain));
  if (taken) throw new HttpError(409, `Subdomain ${body.subdomain} is already taken`, 'subdomain_taken');
  const location = {
    id: context.company.newId('loc'),
    reference: body.reference,
    subdomain: body.subdomain,
    tagline: body.tagline ?? null,
    code: body.code ?? null,
    createdAt: context.company.now(),
  };
  context.company.data.locations.push(location);
  return { message: 'Location created', content: { location: { id: location.id } } };
}

/** POST /performance-reviews (§4.15), PUT /employees/{employeeId}/benefits (§4.16), POST /time-clock-entries (§4.19), POST /locations (§4.18). */
export const hrRoutes: Route[] = [
  { method: 'POST', path: '/performance-reviews', scope: 'hr:write', handler: createReview },
  { method: 'PUT', path: '/employees/{employeeId}/benefits', scope: 'hr:write', handler: replaceBenefits },
  { method: 'POST', path: '/time-clock-entries', scope: 'hr:write', handler: clockIn },
  { method: 'POST', path: '/locations', scope: 'locations:write', handler: createLocation },
];
