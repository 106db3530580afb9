/**
 * `employee.benefits.set`: PUT /employees/{employeeId}/benefits (spec §4.16, scope `hr:write`).
 *
 * Rules: `employeeId` non-empty; `benefitIds` the COMPLETE enrollment list (an empty array withdraws
 * every benefit; ids not of the company are dropped by the server). Idempotent: a PUT of the whole list.
 */
import { z } from 'zod';
import { defineWriteKind, nonEmptyText, pathId, segment, without } from './fields.ts';

/** The payload of `employee.benefits.set` (spec §4.16), with the rules in this module's header; every message names the rule. */
const employeeBenefitsSetPayload = z.strictObject({
  employeeId: pathId,
  benefitIds: z.array(nonEmptyText, { error: 'must be an array of benefit ids (the complete list; [] withdraws all)' }),
});

/** The `employee.benefits.set` write kind (spec §4.16): request, response, retry safety and ambiguity resolution. */
export const employeeBenefitsSet = defineWriteKind({
  name: 'employee.benefits.set',
  spec: 'spec §4.16',
  summary: "Replace an employee's benefit enrollment list",
  scope: 'hr:write',
  payloadSchema: employeeBenefitsSetPayload,
  method: 'PUT',
  path: (payload) => `/employees/${segment(payload.employeeId)}/benefits`,
  body: (payload) => without(payload, 'employeeId'),
  responseSchema: z.looseObject({ employeeId: z.string(), benefitIds: z.array(z.string()) }),
  retrySafety: 'idempotent',
  ambiguity: { resolve: 'resend' },
  remoteId: (content) => content.employeeId,
});
