/**
 * `GET /qa-corrective-actions` (spec §4.4, §2 "QA corrective action"): `locationId` is required, so
 * the list is read once per location, a partition each (docs/sync.md "Partitioned streams"); the
 * locations are the configuration's `sync.partitions.qa_corrective_actions.locationId`, else the
 * deals' `locationId` values in the mirror. The spec's other parameters, `status` (OPEN or CLOSED),
 * `category` and `checkId`, are filters a definition may set in `request.filters`; none is set, so
 * every action is mirrored. Items under `content.actions`; they carry no createdAt/updatedAt.
 */
import { z } from 'zod';
import { column, defineStream, listRequest } from './define-stream.ts';

/** A corrective action (spec §2): every field a string but `resolvedAt`/`resolutionNotes`, null while open. */
const correctiveActionSchema = z.looseObject({
  id: z.string().min(1),
  locationId: z.string().min(1),
  shiftSessionId: z.string().nullish(),
  checkId: z.string().nullish(),
  issue: z.string(),
  suspectedCause: z.string().nullish(),
  actionTaken: z.string().nullish(),
  ownerEmployeeId: z.string().nullish(),
  category: z.string(),
  status: z.enum(['OPEN', 'CLOSED'], { error: (issue) => `expected one of OPEN, CLOSED, received ${JSON.stringify(issue.input)}` }),
  openedAt: z.string(),
  resolvedAt: z.string().nullish(),
  resolutionNotes: z.string().nullish(),
});

/** `GET /qa-corrective-actions?locationId=...`: one partition per location. */
export const qaCorrectiveActionsStream = defineStream({
  name: 'qa_corrective_actions',
  specSection: '§4.4',
  request: listRequest('/qa-corrective-actions', 'actions', { cursor: 'updatedAfter' }),
  partitions: { param: 'locationId', values: { from: 'stream', stream: 'deals', field: 'locationId' } },
  itemSchema: correctiveActionSchema,
  key: 'id',
  columns: [
    column('id', 'TEXT', { primaryKey: true }),
    column('locationId', 'TEXT', { notNull: true }),
    column('shiftSessionId', 'TEXT'),
    column('checkId', 'TEXT'),
    column('issue', 'TEXT', { notNull: true }),
    column('suspectedCause', 'TEXT'),
    column('actionTaken', 'TEXT'),
    column('ownerEmployeeId', 'TEXT'),
    column('category', 'TEXT', { notNull: true }),
    column('status', 'TEXT', { notNull: true, note: 'OPEN or CLOSED' }),
    column('openedAt', 'TEXT', { notNull: true }),
    column('resolvedAt', 'TEXT'),
    column('resolutionNotes', 'TEXT'),
  ],
  listedFields: ['id', 'locationId', 'shiftSessionId', 'checkId', 'issue', 'suspectedCause', 'actionTaken', 'ownerEmployeeId', 'category', 'status', 'openedAt', 'resolvedAt', 'resolutionNotes'],
  changes: {
    events: ['qa_action.opened', 'qa_action.closed', 'qa_action.updated', 'qa_action.deleted'],
    classify(previous, next, changed) {
      if (!previous) return 'qa_action.opened';
      if (changed.includes('status') && next.status === 'CLOSED') return 'qa_action.closed';
      return 'qa_action.updated';
    },
    gone: 'qa_action.deleted',
  },
});
