/**
 * GET /qa-corrective-actions (spec §4.4, scope quality:actions:read): the standard list parameters
 * plus `locationId` (required: 400 naming it when missing), `status` (OPEN or CLOSED), `category`,
 * `checkId`. Sort fields besides createdAt: updatedAt, openedAt, resolvedAt. Search: issue,
 * suspectedCause, actionTaken. Items are spec §2 QA corrective actions (no createdAt/updatedAt).
 * Churn closes open actions, changes what was done, and opens new ones.
 */
import { badRequest } from '../http-error.ts';
import type { CorrectiveActionRecord } from '../records.ts';
import { enumParameter } from '../routes/validation.ts';
import { iso } from '../seeding.ts';
import type { SimulatedStream } from './simulated-stream.ts';

const CATEGORIES = ['EQUIPMENT', 'PROCESS', 'TRAINING', 'OTHER'];
const ISSUES = ['Fridge above 5°C', 'Allergen label missing', 'Floor wet near fryer', 'Expired stock found'];
const CAUSES = ['Door seal worn', 'New starter not trained', 'Supplier label change', 'Rota gap'];
const ACTIONS_TAKEN = ['Replaced seal', 'Retrained staff', 'Relabelled stock', 'Discarded stock'];

/** A corrective action as the list returns it (spec §2): every field but the bookkeeping timestamps. */
export function correctiveActionView(record: CorrectiveActionRecord) {
  const { createdAt: _created, updatedAt: _updated, ...rest } = record;
  return rest;
}

/** GET /qa-corrective-actions (spec §4.4): read once per location. */
export const qaCorrectiveActionsList: SimulatedStream<CorrectiveActionRecord, 'qa_corrective_actions'> = {
  name: 'qa_corrective_actions',
  path: '/qa-corrective-actions',
  itemsKey: 'actions',
  scope: 'quality:actions:read',
  message: 'Corrective actions retrieved',
  defaultSize: 36,
  partitions: { parameter: 'locationId', values: (data) => data.locations.map((location) => location.id) },
  list: {
    sortFields: {
      updatedAt: (record) => record.updatedAt,
      openedAt: (record) => record.openedAt,
      resolvedAt: (record) => record.resolvedAt,
    },
    searchFields: (record) => [record.issue, record.suspectedCause, record.actionTaken],
  },
  filter(query) {
    const locationId = query.get('locationId');
    if (locationId === null || locationId === '') throw badRequest('locationId is required');
    const status = enumParameter(query, 'status', ['OPEN', 'CLOSED']);
    const category = query.get('category') ?? undefined;
    const checkId = query.get('checkId') ?? undefined;
    return (record) =>
      record.locationId === locationId &&
      (status === undefined || record.status === status) &&
      (category === undefined || record.category === category) &&
      (checkId === undefined || record.checkId === checkId);
  },
  serialize: (record) => correctiveActionView(record),
  churn: {
    weight: 8,
    change(company, random) {
      const actions = company.streamRecords('qa_corrective_actions');
      const action = random.next();
      const open = action < 0.45 ? random.pickWhere(actions, (record) => record.status === 'OPEN') : undefined;
      if (open) {
        company.updateRecord('qa_corrective_actions', open.id, { status: 'CLOSED', resolvedAt: company.now(), resolutionNotes: 'Verified at next check' });
        return { id: open.id, kind: 'closed' };
      }
      if (action < 0.75 && actions.length > 0) {
        const changed = random.pick(actions);
        company.updateRecord('qa_corrective_actions', changed.id, { actionTaken: random.pick(ACTIONS_TAKEN) });
        return { id: changed.id, kind: 'updated' };
      }
      // A new action at one of the company's locations, open.
      const now = company.now();
      const created = company.addRecord('qa_corrective_actions', {
        id: company.newId('qca'),
        locationId: random.pick(company.data.locations).id,
        shiftSessionId: company.newId('ss'),
        checkId: company.newId('chk'),
        issue: random.pick(ISSUES),
        suspectedCause: random.pick(CAUSES),
        actionTaken: random.pick(ACTIONS_TAKEN),
        ownerEmployeeId: company.employeeForRole('admin').id,
        category: random.pick(CATEGORIES),
        status: 'OPEN',
        openedAt: now,
        resolvedAt: null,
        resolutionNotes: null,
        createdAt: now,
        updatedAt: now,
      });
      return { id: created.id, kind: 'opened' };
    },
  },
  generate({ random: rng, times, company }) {
    const locationIds = company.locations.map((location) => location.id);
    const admin = company.employees.find((employee) => employee.tokenRole === 'admin');
    if (!admin) throw new Error(`company ${company.key}: corrective actions need the admin token employee`);
    const staffIds = company.employees.filter((employee) => employee.tokenRole === null).map((employee) => employee.id);
    const checkIds = Array.from({ length: 4 }, () => rng.id('chk'));
    return times(13).map((time, index) => {
      const closed = rng.chance(0.4);
      const openedAt = iso(time.createdMs);
      return {
        id: rng.id('qca'),
        locationId: locationIds[index % locationIds.length] as string,
        shiftSessionId: rng.id('ss'),
        checkId: rng.pick(checkIds),
        issue: rng.pick(ISSUES),
        suspectedCause: rng.pick(CAUSES),
        actionTaken: rng.pick(ACTIONS_TAKEN),
        ownerEmployeeId: rng.pick([admin.id, ...staffIds.slice(0, 3)]),
        category: rng.pick(CATEGORIES),
        status: closed ? ('CLOSED' as const) : ('OPEN' as const),
        openedAt,
        resolvedAt: closed ? iso(time.updatedMs) : null,
        resolutionNotes: closed ? 'Verified at next check' : null,
        createdAt: openedAt,
        updatedAt: iso(time.updatedMs),
      };
    });
  },
};
