/**
 * GET /qa-corrective-actions (spec §4.4, scope quality:actions:read): standard list parameters plus
 * `locationId` (required: 400 when missing), `status` (OPEN or CLOSED), `category`, `checkId`.
 * Sort fields besides createdAt: updatedAt, openedAt, resolvedAt. Search: issue, suspectedCause, actionTaken.
 */
import { badRequest } from '../http-error.ts';
import { listPage, parseListQuery, type ListDefinition } from '../list.ts';
import type { CorrectiveActionRecord } from '../records.ts';
import { correctiveActionView } from '../serialize.ts';
import { enumParameter } from './lists.ts';
import type { RequestContext, Route } from './types.ts';

const ACTION_LIST: ListDefinition<CorrectiveActionRecord> = {
  sortFields: {
    updatedAt: (record) => record.updatedAt,
    openedAt: (record) => record.openedAt,
    resolvedAt: (record) => record.resolvedAt,
  },
  searchFields: (record) => [record.issue, record.suspectedCause, record.actionTaken],
};

function listActions(context: RequestContext) {
  const locationId = context.query.get('locationId');
  if (locationId === null || locationId === '') throw badRequest('locationId is required');
  const query = parseListQuery(context.query, Object.keys(ACTION_LIST.sortFields));
  const status = enumParameter(context.query, 'status', ['OPEN', 'CLOSED']);
  const category = context.query.get('category') ?? undefined;
  const checkId = context.query.get('checkId') ?? undefined;
  const data = context.company.data;
  // Actions are few: sort by (createdAt, id) per request; `versions` do not track them, so pass a fresh one.
  const records = [...data.correctiveActions].sort((left, right) =>
    left.createdAt < right.createdAt ? -1 : left.createdAt > right.createdAt ? 1 : left.id < right.id ? -1 : 1,
  );
  const page = listPage(
    records,
    query,
    ACTION_LIST,
    (record) =>
      record.locationId === locationId &&
      (status === undefined || record.status === status) &&
      (category === undefined || record.category === category) &&
      (checkId === undefined || record.checkId === checkId),
    Number.NaN,
  );
  return { message: 'Corrective actions retrieved', content: { actions: page.items.map(correctiveActionView), pagination: page.pagination } };
}

/** GET /qa-corrective-actions (spec §4.4). */
export const qualityRoutes: Route[] = [{ method: 'GET', path: '/qa-corrective-actions', scope: 'quality:actions:read', handler: listActions }];
