/**
 * GET /deals: not shown in the spec (its scope neither: the simulator requires `deals:read`); it
 * follows the list conventions of spec §1 with items under `content.deals` (spec §2 Deal). Query: the
 * standard list parameters plus `status`, `pipelineId`, `locationId`. Its generator also makes the
 * company's pipelines (the stages deals move through). Churn moves stages, wins, loses, reopens and
 * creates deals.
 */
import type { CustomerRecord, DealRecord, DealStatus } from '../records.ts';
import { DEAL_STATUSES } from '../records.ts';
import { enumParameter } from '../routes/validation.ts';
import { dayIso, iso } from '../seeding.ts';
import { dealView } from '../serialize.ts';
import type { SimulatedStream } from './simulated-stream.ts';

const DAY_MS = 86_400_000;
const DEAL_PRODUCTS = ['annual catering contract', 'office lunch plan', 'wedding package', 'franchise inquiry', 'bulk supply order', 'holiday party'];

/** GET /deals (assumed). */
export const dealsList: SimulatedStream<DealRecord, 'deals'> = {
  name: 'deals',
  path: '/deals',
  itemsKey: 'deals',
  scope: 'deals:read',
  message: 'Deals retrieved',
  defaultSize: 200,
  list: {
    sortFields: {
      updatedAt: (record) => record.updatedAt,
      value: (record) => record.value,
      title: (record) => record.title,
      expectedCloseDate: (record) => record.expectedCloseDate,
      stageMovedAt: (record) => record.stageMovedAt,
      referenceId: (record) => record.referenceId,
    },
    searchFields: (record) => [record.title],
  },
  filter(query) {
    const status = enumParameter(query, 'status', DEAL_STATUSES);
    const pipelineId = query.get('pipelineId') ?? undefined;
    const locationId = query.get('locationId') ?? undefined;
    if (status === undefined && pipelineId === undefined && locationId === undefined) return undefined;
    return (record) =>
      (status === undefined || record.status === status) &&
      (pipelineId === undefined || record.pipelineId === pipelineId) &&
      (locationId === undefined || record.locationId === locationId);
  },
  serialize: (record) => dealView(record),
  generate({ random: rng, times, company }) {
    const pipelines = ['Sales', 'Events'].map((name) => ({
      id: rng.id('pip'),
      name,
      stageIds: Array.from({ length: 5 }, () => rng.id('stg')),
      stageProbabilities: [10, 25, 50, 75, 90],
    }));
    company.pipelines.push(...pipelines);
    const customers = (company.streams.customers ?? []) as readonly CustomerRecord[];
    const locationIds = company.locations.map((location) => location.id);
    const admin = company.employees.find((employee) => employee.tokenRole === 'admin');
    const ordinary = company.employees.find((employee) => employee.tokenRole === 'employee');
    if (!admin || !ordinary) throw new Error(`company ${company.key}: deals need the admin and employee token employees`);
    const staffIds = company.employees.filter((employee) => employee.tokenRole === null).map((employee) => employee.id);
    return times(5).map((time, index) => {
      const pipeline = rng.pick(pipelines);
      const stageIndex = rng.int(0, pipeline.stageIds.length - 1);
      const roll = rng.next();
      const status: DealStatus = roll < 0.7 ? 'OPEN' : roll < 0.85 ? 'WON' : 'LOST';
      const customer = customers.length > 0 ? rng.pick(customers) : null;
      const createdAt = iso(time.createdMs);
      const updatedAt = iso(time.updatedMs);
      return {
        id: rng.id('deal'),
        referenceId: 1000 + index,
        locationId: rng.pick(locationIds),
        pipelineId: pipeline.id,
        stageId: pipeline.stageIds[stageIndex] as string,
        accountId: rng.id('acct'),
        ownerId: rng.pick([admin.id, ordinary.id, ...staffIds.slice(0, 4)]),
        title: `${customer ? `${customer.firstName} ${customer.lastName}` : 'Walk-in'}: ${rng.pick(DEAL_PRODUCTS)}`,
        value: rng.int(50, 50_000) * 100,
        currency: 'USD',
        status,
        probability: status === 'WON' ? 100 : status === 'LOST' ? 0 : (pipeline.stageProbabilities[stageIndex] ?? 10),
        expectedCloseDate: dayIso(time.createdMs + rng.int(30, 120) * DAY_MS),
        sortOrder: index,
        wonLostReason: status === 'OPEN' ? null : status === 'WON' ? 'Signed the proposal' : 'Chose a competitor',
        closedAt: status === 'OPEN' ? null : updatedAt,
        stageMovedAt: updatedAt,
        createdAt,
        updatedAt,
        customerId: customer ? customer.id : null,
      };
    });
  },
  churn: {
    weight: 35,
    change(company, random) {
      const action = random.next();
      if (action < 0.45) {
        const open = random.pickWhere(company.deals, (record) => record.status === 'OPEN');
        const pipeline = open && company.data.pipelines.find((candidate) => candidate.id === open.pipelineId);
        if (open && pipeline) {
          const stageIndex = pipeline.stageIds.indexOf(open.stageId);
          if (stageIndex >= 0 && stageIndex < pipeline.stageIds.length - 1) {
            const now = company.now();
            company.updateDeal(open.id, {
              stageId: pipeline.stageIds[stageIndex + 1] as string,
              probability: pipeline.stageProbabilities[stageIndex + 1] ?? open.probability,
              stageMovedAt: now,
              updatedAt: now,
            });
            return { id: open.id, kind: 'stage-moved' };
          }
        }
      } else if (action < 0.75) {
        const open = random.pickWhere(company.deals, (record) => record.status === 'OPEN');
        if (open) {
          const won = random.chance(0.6);
          company.closeDeal(open.id, { status: won ? 'WON' : 'LOST', reason: won ? 'Signed after churn' : 'Went quiet' });
          return { id: open.id, kind: won ? 'won' : 'lost' };
        }
      } else if (action < 0.85) {
        const closed = random.pickWhere(company.deals, (record) => record.status !== 'OPEN');
        if (closed) {
          company.closeDeal(closed.id, { status: 'OPEN' });
          return { id: closed.id, kind: 'reopened' };
        }
      }
      return { id: company.createDeal().id, kind: 'created' };
    },
  },
};
