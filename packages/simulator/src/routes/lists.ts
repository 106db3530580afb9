/**
 * The list endpoints of the mirrored streams and customers: GET /transactions (spec §4.13),
 * GET /employee-onboardings (§4.1), and the assumed GET /deals and GET /customers (not shown in the
 * spec; they follow the list conventions of §1 and put items under `content.deals` /
 * `content.customers`). Also GET /test-token (§4 general notes; response shape not shown: we return
 * who the token acts as and its scopes).
 */
import { badRequest } from '../http-error.ts';
import { listPage, parseListQuery, type ListDefinition } from '../list.ts';
import type { CustomerRecord, DealRecord, OnboardingRecord, TransactionRecord } from '../records.ts';
import { DEAL_STATUSES, TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../records.ts';
import { customerView, dealView, onboardingView, transactionListItem } from '../serialize.ts';
import type { RequestContext, Route } from './types.ts';

/** Allowed sortBy values and search fields per stream (allowed sortBy values are "not shown", spec §4). */
export const TRANSACTION_LIST: ListDefinition<TransactionRecord> = {
  sortFields: {
    updatedAt: (record) => record.updatedAt,
    date: (record) => record.date,
    amount: (record) => record.amount,
    type: (record) => record.type,
    status: (record) => record.status,
  },
  searchFields: (record) => [record.description, record.counterpartyName],
};

/** Sort fields and search fields of the assumed GET /deals. */
export const DEAL_LIST: ListDefinition<DealRecord> = {
  sortFields: {
    updatedAt: (record) => record.updatedAt,
    value: (record) => record.value,
    title: (record) => record.title,
    expectedCloseDate: (record) => record.expectedCloseDate,
    stageMovedAt: (record) => record.stageMovedAt,
    referenceId: (record) => record.referenceId,
  },
  searchFields: (record) => [record.title],
};

/** Sort fields and search fields of GET /employee-onboardings (spec §4.1). */
export const ONBOARDING_LIST: ListDefinition<OnboardingRecord> = {
  sortFields: {
    updatedAt: (record) => record.updatedAt,
    onboardingStep: (record) => record.onboardingStep,
    fullname: (record) => record.fullname,
  },
  searchFields: (record) => [record.fullname],
};

/** Sort fields and search fields of the assumed GET /customers. */
export const CUSTOMER_LIST: ListDefinition<CustomerRecord> = {
  sortFields: {
    updatedAt: (record) => record.updatedAt,
    firstName: (record) => record.firstName,
    lastName: (record) => record.lastName,
  },
  searchFields: (record) => [record.firstName, record.lastName, record.email],
};

/** Reads an optional enum query parameter. @throws HttpError 400 naming the parameter and the allowed values */
export function enumParameter(query: URLSearchParams, name: string, allowed: readonly string[]): string | undefined {
  const value = query.get(name);
  if (value === null) return undefined;
  if (!allowed.includes(value)) throw badRequest(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value;
}

function listTransactions(context: RequestContext) {
  const query = parseListQuery(context.query, Object.keys(TRANSACTION_LIST.sortFields));
  const type = enumParameter(context.query, 'type', TRANSACTION_TYPES);
  const status = enumParameter(context.query, 'status', TRANSACTION_STATUSES);
  const locationId = context.query.get('locationId') ?? undefined;
  const legalEntityId = context.query.get('legalEntityId') ?? undefined;
  const filtered = type !== undefined || status !== undefined || locationId !== undefined || legalEntityId !== undefined;
  const page = listPage(
    context.company.transactions,
    query,
    TRANSACTION_LIST,
    filtered
      ? (record) =>
          (type === undefined || record.type === type) &&
          (status === undefined || record.status === status) &&
          (locationId === undefined || record.locationId === locationId) &&
          (legalEntityId === undefined || record.legalEntityId === legalEntityId)
      : undefined,
    context.company.data.versions.transactions,
    context.listFault,
  );
  return { message: 'Transactions retrieved', content: { transactions: page.items.map((record) => transactionListItem(record, context.company.data.undeclaredFields)), pagination: page.pagination } };
}

function listDeals(context: RequestContext) {
  const query = parseListQuery(context.query, Object.keys(DEAL_LIST.sortFields));
  const status = enumParameter(context.query, 'status', DEAL_STATUSES);
  const pipelineId = context.query.get('pipelineId') ?? undefined;
  const locationId = context.query.get('locationId') ?? undefined;
  const filtered = status !== undefined || pipelineId !== undefined || locationId !== undefined;
  const page = listPage(
    context.company.deals,
    query,
    DEAL_LIST,
    filtered
      ? (record) =>
          (status === undefined || record.status === status) &&
          (pipelineId === undefined || record.pipelineId === pipelineId) &&
          (locationId === undefined || record.locationId === locationId)
      : undefined,
    context.company.data.versions.deals,
    context.listFault,
  );
  return { message: 'Deals retrieved', content: { deals: page.items.map(dealView), pagination: page.pagination } };
}

function listOnboardings(context: RequestContext) {
  const query = parseListQuery(context.query, Object.keys(ONBOARDING_LIST.sortFields));
  const page = listPage(context.company.onboardings, query, ONBOARDING_LIST, undefined, context.company.data.versions.onboardings, context.listFault);
  return { message: 'Employee onboardings retrieved', content: { onboardings: page.items.map((record) => onboardingView(record, context.company.data.undeclaredFields)), pagination: page.pagination } };
}

function listCustomers(context: RequestContext) {
  const query = parseListQuery(context.query, Object.keys(CUSTOMER_LIST.sortFields));
  const lifecycleStage = context.query.get('lifecycleStage') ?? undefined;
  const page = listPage(
    context.company.customers,
    query,
    CUSTOMER_LIST,
    lifecycleStage === undefined ? undefined : (record) => record.lifecycleStage === lifecycleStage,
    context.company.data.versions.customers,
    context.listFault,
  );
  return { message: 'Customers retrieved', content: { customers: page.items.map(customerView), pagination: page.pagination } };
}

/** GET /transactions (§4.13), /deals, /employee-onboardings (§4.1), /customers, and GET /test-token. */
export const listRoutes: Route[] = [
  { method: 'GET', path: '/transactions', scope: 'transactions:read', handler: listTransactions },
  { method: 'GET', path: '/deals', scope: 'deals:read', handler: listDeals },
  { method: 'GET', path: '/employee-onboardings', scope: 'employee:onboardings:read', handler: listOnboardings },
  { method: 'GET', path: '/customers', scope: 'customers:read', handler: listCustomers },
  {
    method: 'GET',
    path: '/test-token',
    scope: null,
    handler: (context) => ({
      message: 'Token is valid',
      content: {
        companyId: context.company.data.id,
        employeeId: context.employee.id,
        employeeName: context.employee.fullname,
        scopes: [...context.scopes],
      },
    }),
  },
];
