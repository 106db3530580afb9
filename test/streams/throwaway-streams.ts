/**
 * Two streams that ship nowhere, written as docs/adding-a-stream.md says a stream is written: each is
 * its definition (bizops-sync's `defineStream`), its registry line (here `registerStream`, in place
 * of a line in `STREAM_LIST`) and its simulator declaration (`SimulatedStream`, registered in place
 * of a line in `SIMULATED_STREAMS`). Nothing else is edited: the simulator derives the list route,
 * the scope the tokens hold, the snapshot key and churn from the declaration, and bizops-sync the
 * mirror table, configuration names, event schemas and metrics from the definition.
 *
 * - `locations` (`GET /locations`, scope `locations:read`, a scope the spec does not name): a plain
 *   list whose items carry `createdAt`/`updatedAt`; its name is also a count of the world's snapshot
 *   (the company's locations), which must not take the stream's.
 * - `gadgets` (`GET /gadgets?locationId=`): a partitioned list, one partition per location the deals
 *   name (as the corrective actions), its items carrying `createdAt`/`updatedAt` (as time-clock
 *   entries would): each partition measures the records' clock on its own pages (the corrective
 *   actions, without timestamps, are the other kind of partitioned stream).
 *
 * test/streams/throwaway-setup.ts registers both before anything derives from the registries.
 */
import { z } from 'zod';
import type { CompanyWorld, SimulatedStream, TimestampedRecord } from '@bizops-sync/simulator';
// The simulator's light modules only: its routes and tokens load after the registration.
import { badRequest } from '../../packages/simulator/src/http-error.ts';
import { column, defineStream, listRequest } from '../../src/streams/define-stream.ts';

/** A location as the simulator's `GET /locations` list keeps it (its own records, apart from the company's locations). */
export interface LocationListRecord extends TimestampedRecord {
  reference: string;
  code: string;
}

/** A gadget as the simulator keeps it: at one location, ON or OFF. */
export interface GadgetRecord extends TimestampedRecord {
  locationId: string;
  label: string;
  state: 'ON' | 'OFF';
}

const PLACES = ['Harbour', 'Market', 'Station', 'Airport'];
const LABELS = ['Mixer', 'Oven', 'Grill', 'Chiller', 'Kettle'];

/** The ISO text of a ms epoch. */
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A throwaway stream's records and changes through the world's generic methods (typed for the
 * declared streams: a stream registered at run time is one of them only at run time).
 */
function recordsOf<R>(company: CompanyWorld, stream: string): R[] {
  return company.streamRecords(stream as never) as unknown as R[];
}
function update(company: CompanyWorld, stream: string, id: string, patch: Record<string, unknown>): void {
  company.updateRecord(stream as never, id, patch as never);
}
function add(company: CompanyWorld, stream: string, record: TimestampedRecord): void {
  company.addRecord(stream as never, record as never);
}

/** `GET /locations`: bizops-sync's definition. */
export const locationsStream = defineStream({
  name: 'locations',
  specSection: 'not shown',
  request: listRequest('/locations', 'locations', { cursor: 'updatedAfter' }),
  itemSchema: z.looseObject({ id: z.string().min(1), reference: z.string(), code: z.string(), createdAt: z.string(), updatedAt: z.string() }),
  key: 'id',
  columns: [
    column('id', 'TEXT', { primaryKey: true }),
    column('reference', 'TEXT', { notNull: true }),
    column('code', 'TEXT', { notNull: true }),
    column('createdAt', 'TEXT'),
    column('updatedAt', 'TEXT'),
  ],
  listedFields: ['id', 'reference', 'code', 'createdAt', 'updatedAt'],
  changes: {
    events: ['location.created', 'location.renamed', 'location.updated', 'location.deleted'],
    classify: (previous, _next, changed) => (!previous ? 'location.created' : changed.includes('reference') ? 'location.renamed' : 'location.updated'),
    gone: 'location.deleted',
  },
});

/** `GET /gadgets?locationId=`: bizops-sync's definition, one partition per location the deals name. */
export const gadgetsStream = defineStream({
  name: 'gadgets',
  specSection: 'not shown',
  request: listRequest('/gadgets', 'gadgets', { cursor: 'updatedAfter' }),
  partitions: { param: 'locationId', values: { from: 'stream', stream: 'deals', field: 'locationId' } },
  itemSchema: z.looseObject({ id: z.string().min(1), locationId: z.string().min(1), label: z.string(), state: z.enum(['ON', 'OFF']), createdAt: z.string(), updatedAt: z.string() }),
  key: 'id',
  columns: [
    column('id', 'TEXT', { primaryKey: true }),
    column('locationId', 'TEXT', { notNull: true }),
    column('label', 'TEXT', { notNull: true }),
    column('state', 'TEXT', { notNull: true }),
    column('createdAt', 'TEXT'),
    column('updatedAt', 'TEXT'),
  ],
  listedFields: ['id', 'locationId', 'label', 'state', 'createdAt', 'updatedAt'],
  changes: {
    events: ['gadget.created', 'gadget.switched', 'gadget.updated', 'gadget.deleted'],
    classify: (previous, _next, changed) => (!previous ? 'gadget.created' : changed.includes('state') ? 'gadget.switched' : 'gadget.updated'),
    gone: 'gadget.deleted',
  },
});

/** `GET /locations`: the simulator's declaration (a scope the spec does not name: `locations:read`). */
export const locationsList: SimulatedStream<LocationListRecord, 'locations'> = {
  name: 'locations',
  path: '/locations',
  itemsKey: 'locations',
  scope: 'locations:read',
  message: 'Locations retrieved',
  defaultSize: 30,
  list: { sortFields: { updatedAt: (record) => record.updatedAt }, searchFields: (record) => [record.reference] },
  serialize: (record) => ({ id: record.id, reference: record.reference, code: record.code, createdAt: record.createdAt, updatedAt: record.updatedAt }),
  generate: ({ random, times }) =>
    times(31).map((time, index) => ({ id: random.id('lst'), reference: random.pick(PLACES), code: `L${index}`, createdAt: iso(time.createdMs), updatedAt: iso(time.updatedMs) })),
  churn: {
    weight: 4,
    change(company, random) {
      const locations = recordsOf<LocationListRecord>(company, 'locations');
      const action = random.next();
      if (action < 0.4 && locations.length > 0) {
        const location = random.pick(locations);
        update(company, 'locations', location.id, { reference: random.pick(PLACES.filter((place) => place !== location.reference)) });
        return { id: location.id, kind: 'renamed' };
      }
      if (action < 0.8 && locations.length > 0) {
        const location = random.pick(locations);
        update(company, 'locations', location.id, { code: `${location.code}-2` });
        return { id: location.id, kind: 'recoded' };
      }
      const now = company.now();
      const created = { id: company.newId('lst'), reference: random.pick(PLACES), code: 'NEW', createdAt: now, updatedAt: now };
      add(company, 'locations', created);
      return { id: created.id, kind: 'created' };
    },
  },
};

/** `GET /gadgets?locationId=`: the simulator's declaration (the parameter required: 400 without it). */
export const gadgetsList: SimulatedStream<GadgetRecord, 'gadgets'> = {
  name: 'gadgets',
  path: '/gadgets',
  itemsKey: 'gadgets',
  scope: 'quality:actions:read',
  message: 'Gadgets retrieved',
  defaultSize: 24,
  partitions: { parameter: 'locationId', values: (data) => data.locations.map((location) => location.id) },
  list: { sortFields: { updatedAt: (record) => record.updatedAt }, searchFields: (record) => [record.label] },
  filter(query) {
    const locationId = query.get('locationId');
    if (locationId === null || locationId === '') throw badRequest('locationId is required');
    return (record) => record.locationId === locationId;
  },
  serialize: (record) => ({ id: record.id, locationId: record.locationId, label: record.label, state: record.state, createdAt: record.createdAt, updatedAt: record.updatedAt }),
  generate: ({ random, times, company }) =>
    times(37).map((time, index) => ({
      id: random.id('gdg'),
      locationId: company.locations[index % company.locations.length]!.id,
      label: random.pick(LABELS),
      state: random.chance(0.5) ? ('ON' as const) : ('OFF' as const),
      createdAt: iso(time.createdMs),
      updatedAt: iso(time.updatedMs),
    })),
  churn: {
    weight: 4,
    change(company, random) {
      const gadgets = recordsOf<GadgetRecord>(company, 'gadgets');
      const action = random.next();
      if (action < 0.4 && gadgets.length > 0) {
        const gadget = random.pick(gadgets);
        update(company, 'gadgets', gadget.id, { state: gadget.state === 'ON' ? 'OFF' : 'ON' });
        return { id: gadget.id, kind: 'switched' };
      }
      if (action < 0.8 && gadgets.length > 0) {
        const gadget = random.pick(gadgets);
        update(company, 'gadgets', gadget.id, { label: `${gadget.label} (serviced)` });
        return { id: gadget.id, kind: 'relabelled' };
      }
      const now = company.now();
      const created: GadgetRecord = { id: company.newId('gdg'), locationId: random.pick(company.data.locations).id, label: random.pick(LABELS), state: 'ON', createdAt: now, updatedAt: now };
      add(company, 'gadgets', created);
      return { id: created.id, kind: 'created' };
    },
  },
};
