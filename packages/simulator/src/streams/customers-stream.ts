/**
 * GET /customers (spec §4 general notes: clients page through it with the pagination parameters; its
 * scope, other parameters and fields are not shown, so the simulator requires `customers:read` and
 * filters by `lifecycleStage`). Items under `content.customers` (spec §2 Customer).
 */
import type { CustomerRecord } from '../records.ts';
import { FIRST_NAMES, LAST_NAMES, iso } from '../seeding.ts';
import type { SimulatedStream } from './simulated-stream.ts';

/** A customer as the list returns it (spec §2 "Customer": id, firstName, lastName; the other fields are our choice). */
export function customerView(record: CustomerRecord) {
  return {
    id: record.id,
    firstName: record.firstName,
    lastName: record.lastName,
    email: record.email,
    lifecycleStage: record.lifecycleStage,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** GET /customers (assumed shape). */
export const customersList: SimulatedStream<CustomerRecord, 'customers'> = {
  name: 'customers',
  path: '/customers',
  itemsKey: 'customers',
  scope: 'customers:read',
  message: 'Customers retrieved',
  defaultSize: 100,
  list: {
    sortFields: {
      updatedAt: (record) => record.updatedAt,
      firstName: (record) => record.firstName,
      lastName: (record) => record.lastName,
    },
    searchFields: (record) => [record.firstName, record.lastName, record.email],
  },
  filter(query) {
    const lifecycleStage = query.get('lifecycleStage') ?? undefined;
    return lifecycleStage === undefined ? undefined : (record) => record.lifecycleStage === lifecycleStage;
  },
  serialize: (record) => customerView(record),
  churn: {
    weight: 8,
    change(company, random) {
      const existing = company.customers.length > 0 && random.chance(0.7) ? random.pick(company.customers) : undefined;
      if (existing) {
        const stage = random.pick(['LEAD', 'PROSPECT', 'CUSTOMER'].filter((candidate) => candidate !== existing.lifecycleStage));
        company.updateRecord('customers', existing.id, { lifecycleStage: stage });
        return { id: existing.id, kind: 'stage-changed' };
      }
      return { id: company.createCustomer().id, kind: 'created' };
    },
  },
  generate({ random: rng, times }) {
    return times(9).map((time, index) => {
      const firstName = rng.pick(FIRST_NAMES);
      const lastName = rng.pick(LAST_NAMES);
      return {
        id: rng.id('cus'),
        firstName,
        lastName,
        email: `${firstName.toLowerCase()}.${lastName.toLowerCase()}${index}@mail.example`,
        lifecycleStage: rng.pick(['LEAD', 'LEAD', 'PROSPECT', 'CUSTOMER']),
        createdAt: iso(time.createdMs),
        updatedAt: iso(time.updatedMs),
      };
    });
  },
};
