/**
 * `GET /customers` (spec §4 general notes: clients page through it with the pagination parameters;
 * its other parameters and fields are not shown). Items under `content.customers`; spec §2 shows
 * `id`, `firstName`, `lastName`; the rest is kept when the server sends it (nullable columns).
 */
import { z } from 'zod';
import { column, defineStream, listRequest } from './define-stream.ts';

/** A customer list item: `id`, `firstName`, `lastName` (spec §2 "Customer"); other fields optional and kept in `raw`. */
const customerSchema = z.looseObject({
  id: z.string().min(1),
  firstName: z.string(),
  lastName: z.string(),
  email: z.string().nullish(),
  lifecycleStage: z.string().nullish(),
  createdAt: z.string().nullish(),
  updatedAt: z.string().nullish(),
});

/** `GET /customers`: the company's customers, read like any list (one cursor, the two-scan rule). */
export const customersStream = defineStream({
  name: 'customers',
  specSection: '§4 general notes',
  request: listRequest('/customers', 'customers', { cursor: 'updatedAfter' }),
  itemSchema: customerSchema,
  key: 'id',
  columns: [
    column('id', 'TEXT', { primaryKey: true }),
    column('firstName', 'TEXT', { notNull: true }),
    column('lastName', 'TEXT', { notNull: true }),
    column('email', 'TEXT'),
    column('lifecycleStage', 'TEXT'),
    column('createdAt', 'TEXT'),
    column('updatedAt', 'TEXT'),
  ],
  listedFields: ['id', 'firstName', 'lastName', 'email', 'lifecycleStage', 'createdAt', 'updatedAt'],
  changes: {
    events: ['customer.created', 'customer.updated', 'customer.deleted'],
    classify: (previous) => (previous ? 'customer.updated' : 'customer.created'),
    gone: 'customer.deleted',
  },
});
