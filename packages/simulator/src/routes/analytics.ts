/**
 * GET /analytics/metrics (spec §4.17) and GET /analytics/report (spec §4.11), scope analytics:read.
 * Figures are derived on read from the world (transactions, customers, deals); nothing is stored.
 *
 * Report rules: (1) unknown metric keys are dropped, not rejected; (2) the first metric fixes the
 * unit and later metrics of another unit are dropped; (3) with no metric given the report uses the
 * first catalogue metric the company has data for in the range; (4) a company-scope metric ignores
 * `locationId`. `locationId` only narrows: ids outside the company are ignored. More than three
 * `metric` parameters (spec §8) is 400, as are an unknown `range` or `chart`.
 */
import { badRequest } from '../http-error.ts';
import type { CompanyData } from '../company-data.ts';
import type { RequestContext, Route } from './types.ts';

const DAY_MS = 86_400_000;

/** One metric of the catalogue (spec §2 Analytics metric); `currency` figures are cents. */
export interface MetricDefinition {
  key: string;
  label: string;
  hint: string;
  unit: 'currency' | 'count';
  scope: 'company' | 'location';
}

/** The metric catalogue (spec §2 "Analytics metric": the real catalogue is not shown). */
export const METRICS: readonly MetricDefinition[] = [
  { key: 'revenue', label: 'Revenue', hint: 'Confirmed income and invoices', unit: 'currency', scope: 'company' },
  { key: 'expenses', label: 'Expenses', hint: 'Confirmed expenses and deductions', unit: 'currency', scope: 'company' },
  { key: 'location_revenue', label: 'Location revenue', hint: 'Confirmed income and invoices attributed to the selected locations', unit: 'currency', scope: 'location' },
  { key: 'transaction_count', label: 'Transactions', hint: 'Confirmed transactions at the selected locations', unit: 'count', scope: 'location' },
  { key: 'new_customers', label: 'New customers', hint: 'Customers created', unit: 'count', scope: 'company' },
  { key: 'deals_won', label: 'Deals won', hint: 'Deals closed as won', unit: 'count', scope: 'company' },
];

/** The report ranges (spec §2 Analytics range: catalogue not shown): window length and bucket size in days. */
export const RANGES = [
  { key: '7d', label: 'Last 7 days', days: 7, bucketDays: 1, noun: '7 days' },
  { key: '30d', label: 'Last 30 days', days: 30, bucketDays: 1, noun: '30 days' },
  { key: '90d', label: 'Last 90 days', days: 90, bucketDays: 7, noun: '90 days' },
  { key: '12m', label: 'Last 12 months', days: 365, bucketDays: 30, noun: '12 months' },
] as const;

const CHARTS = ['area', 'bar', 'line'];

/** Data points of one metric: [ms epoch, value] pairs, restricted to `locations` when location-scoped. */
function metricEvents(data: CompanyData, key: string, locations: ReadonlySet<string>): [number, number][] {
  const events: [number, number][] = [];
  const inLocations = (locationId: string | null) => locationId !== null && locations.has(locationId);
  if (key === 'revenue' || key === 'expenses' || key === 'location_revenue' || key === 'transaction_count') {
    for (const record of data.streams.transactions) {
      if (record.status !== 'CONFIRMED') continue;
      const at = Date.parse(record.createdAt);
      if (key === 'revenue' && (record.type === 'INCOME' || record.type === 'INVOICE')) events.push([at, record.amount]);
      else if (key === 'expenses' && (record.type === 'EXPENSE' || record.type === 'DEDUCTION')) events.push([at, -record.amount]);
      else if (key === 'location_revenue' && (record.type === 'INCOME' || record.type === 'INVOICE') && inLocations(record.locationId)) events.push([at, record.amount]);
      else if (key === 'transaction_count' && inLocations(record.locationId)) events.push([at, 1]);
    }
  } else if (key === 'new_customers') {
    for (const record of data.streams.customers) events.push([Date.parse(record.createdAt), 1]);
  } else if (key === 'deals_won') {
    for (const record of data.streams.deals) if (record.status === 'WON' && record.closedAt) events.push([Date.parse(record.closedAt), 1]);
  }
  return events;
}

function listMetrics() {
  return {
    message: 'Metrics retrieved',
    content: { metrics: METRICS.map((metric) => ({ ...metric })), ranges: RANGES.map((range) => ({ key: range.key, label: range.label })) },
  };
}

function report(context: RequestContext) {
  const data = context.company.data;
  const requested = context.query.getAll('metric');
  if (requested.length > 3) throw badRequest(`metric may be given at most three times, got ${requested.length}`);
  const rangeKey = context.query.get('range') ?? '30d';
  const range = RANGES.find((candidate) => candidate.key === rangeKey);
  if (!range) throw badRequest(`range must be one of ${RANGES.map((candidate) => candidate.key).join(', ')}, got "${rangeKey}"`);
  const chart = context.query.get('chart') ?? 'area';
  if (!CHARTS.includes(chart)) throw badRequest(`chart must be one of ${CHARTS.join(', ')}, got "${chart}"`);

  const companyLocations = data.locations.map((location) => location.id);
  const askedLocations = context.query.getAll('locationId');
  const locationIds = askedLocations.length === 0 ? companyLocations : companyLocations.filter((id) => askedLocations.includes(id));
  const locationSet = new Set(locationIds);
  const allLocations = new Set(companyLocations);

  const endMs = Date.parse(context.company.now());
  const windowMs = range.days * DAY_MS;
  const startMs = endMs - windowMs;
  const bucketMs = range.bucketDays * DAY_MS;
  const bucketCount = Math.ceil(windowMs / bucketMs);

  const eventsFor = (metric: MetricDefinition) => metricEvents(data, metric.key, metric.scope === 'company' ? allLocations : locationSet);
  const sumIn = (events: [number, number][], from: number, to: number) => events.reduce((sum, [at, value]) => (at >= from && at < to ? sum + value : sum), 0);

  // Rules 1 and 2: drop unknown keys, then keys whose unit differs from the first.
  let metrics: MetricDefinition[] = [];
  for (const key of requested) {
    const metric = METRICS.find((candidate) => candidate.key === key);
    if (!metric || metrics.some((kept) => kept.key === key)) continue;
    if (metrics.length > 0 && metric.unit !== metrics[0]?.unit) continue;
    metrics.push(metric);
  }
  // Rule 3: no metric given -> the first metric the company has data for.
  if (requested.length === 0) {
    const withData = METRICS.find((metric) => sumIn(eventsFor(metric), startMs, endMs) !== 0);
    metrics = [withData ?? (METRICS[0] as MetricDefinition)];
  }

  const series = metrics.map((metric) => ({ metric, events: eventsFor(metric) }));
  const points = Array.from({ length: bucketCount }, (_, index) => {
    const from = startMs + index * bucketMs;
    const to = Math.min(endMs, from + bucketMs);
    const point: Record<string, string | number> = { bucket: new Date(from).toISOString() };
    for (const { metric, events } of series) point[metric.key] = sumIn(events, from, to);
    return point;
  });
  const summaries = series.map(({ metric, events }) => {
    const current = sumIn(events, startMs, endMs);
    const previous = sumIn(events, startMs - windowMs, startMs);
    const percent = previous === 0 ? (current === 0 ? 0 : 100) : Math.round(((current - previous) / Math.abs(previous)) * 1000) / 10;
    return { key: metric.key, current, previous, percent };
  });
  return {
    message: 'Report computed',
    content: {
      config: { metrics: metrics.map((metric) => metric.key), range: range.key, chart, locationIds },
      points: metrics.length === 0 ? [] : points,
      summaries,
      empty: summaries.every((summary) => summary.current === 0),
      rangeNoun: range.noun,
    },
  };
}

/** GET /analytics/metrics (spec §4.17) and GET /analytics/report (spec §4.11). */
export const analyticsRoutes: Route[] = [
  { method: 'GET', path: '/analytics/metrics', scope: 'analytics:read', handler: listMetrics },
  { method: 'GET', path: '/analytics/report', scope: 'analytics:read', handler: report },
];
