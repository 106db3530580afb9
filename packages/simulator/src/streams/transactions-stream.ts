/**
 * GET /transactions (spec §4.13, scope transactions:read): the company's ledger. Query: the standard
 * list parameters plus `type`, `status`, `locationId`, `legalEntityId`. Items carry the list-item
 * fields of spec §2 (no timestamps). Churn confirms, voids and creates transactions.
 */
import type { TransactionRecord, TransactionStatus, TransactionType } from '../records.ts';
import { TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../records.ts';
import { enumParameter } from '../routes/validation.ts';
import { dayIso, iso, signedAmount } from '../seeding.ts';
import { transactionListItem } from '../serialize.ts';
import type { SeededRandom } from '../random.ts';
import type { SimulatedStream } from './simulated-stream.ts';

const DAY_MS = 86_400_000;
const COUNTERPARTIES = ['Northwind Supply', 'Blue Harbor Foods', 'Acme Tools', 'City Utilities', 'Greenleaf Farms', 'Pioneer Insurance', 'Metro Rentals', 'Summit Consulting', 'IRS', 'State Tax Board'];
const DESCRIPTIONS: Record<TransactionType, readonly string[]> = {
  INCOME: ['Catering order', 'Weekend sales', 'Event booking', 'Online orders', 'Gift card sales'],
  EXPENSE: ['Produce delivery', 'Kitchen equipment repair', 'Cleaning supplies', 'Electricity bill', 'Rent'],
  DEDUCTION: ['Equipment depreciation', 'Home office deduction', 'Vehicle mileage'],
  TAX_PAYMENT: ['Quarterly estimated tax', 'Sales tax remittance', 'Payroll tax deposit'],
  REFUND: ['Supplier refund', 'Overcharge refund', 'Returned goods'],
  TRANSFER: ['Transfer to savings', 'Transfer between accounts'],
  INVOICE: ['Invoice to corporate client', 'Invoice for private event', 'Monthly retainer invoice'],
};
const IRS_CATEGORIES = ['SUPPLIES', 'UTILITIES', 'RENT', 'REPAIRS', 'TAXES', 'SALES', 'OTHER'];

function pickType(rng: SeededRandom): TransactionType {
  const roll = rng.next();
  if (roll < 0.35) return 'INCOME';
  if (roll < 0.65) return 'EXPENSE';
  if (roll < 0.75) return 'INVOICE';
  if (roll < 0.8) return 'REFUND';
  if (roll < 0.85) return 'DEDUCTION';
  if (roll < 0.9) return 'TAX_PAYMENT';
  return 'TRANSFER';
}

/** GET /transactions (spec §4.13). */
export const transactionsList: SimulatedStream<TransactionRecord, 'transactions'> = {
  name: 'transactions',
  path: '/transactions',
  itemsKey: 'transactions',
  scope: 'transactions:read',
  message: 'Transactions retrieved',
  defaultSize: 500,
  list: {
    sortFields: {
      updatedAt: (record) => record.updatedAt,
      date: (record) => record.date,
      amount: (record) => record.amount,
      type: (record) => record.type,
      status: (record) => record.status,
    },
    searchFields: (record) => [record.description, record.counterpartyName],
  },
  filter(query) {
    const type = enumParameter(query, 'type', TRANSACTION_TYPES);
    const status = enumParameter(query, 'status', TRANSACTION_STATUSES);
    const locationId = query.get('locationId') ?? undefined;
    const legalEntityId = query.get('legalEntityId') ?? undefined;
    if (type === undefined && status === undefined && locationId === undefined && legalEntityId === undefined) return undefined;
    return (record) =>
      (type === undefined || record.type === type) &&
      (status === undefined || record.status === status) &&
      (locationId === undefined || record.locationId === locationId) &&
      (legalEntityId === undefined || record.legalEntityId === legalEntityId);
  },
  serialize: (record, data) => transactionListItem(record, data.undeclaredFields),
  generate({ random: rng, count, times, company }) {
    const transactionTimes = times(12);
    const locationIds = company.locations.map((location) => location.id);
    const transactions: TransactionRecord[] = new Array(count);
    for (let index = 0; index < count; index += 1) {
      const time = transactionTimes[index] as { createdMs: number; updatedMs: number };
      const type = pickType(rng);
      const roll = rng.next();
      const status: TransactionStatus = roll < 0.8 ? 'CONFIRMED' : roll < 0.95 ? 'PENDING' : 'VOIDED';
      const dateMs = time.createdMs;
      const hasLocation = rng.chance(0.85);
      // One toISOString per timestamp: the day, tax year and quarter are read off createdAt's text
      // (same values as from a Date, for years 0000-9999; this loop dominates generating many companies).
      const createdAt = iso(time.createdMs);
      const plainYear = createdAt.length === 24;
      transactions[index] = {
        id: rng.id('txn'),
        type,
        status,
        amount: signedAmount(type, rng.int(1, 5000) * 100 + rng.int(0, 99)),
        description: rng.pick(DESCRIPTIONS[type]),
        date: plainYear ? `${createdAt.slice(0, 10)}T00:00:00.000Z` : dayIso(dateMs),
        dueDate: status === 'PENDING' && rng.chance(0.8) ? dayIso(dateMs + 30 * DAY_MS) : null,
        counterpartyName: rng.pick(COUNTERPARTIES),
        counterpartyEmail: null,
        irsCategory: rng.pick(IRS_CATEGORIES),
        notes: null,
        locationId: hasLocation ? rng.pick(locationIds) : null,
        legalEntityId: rng.pick(company.legalEntities).id,
        taxYear: plainYear ? Number(createdAt.slice(0, 4)) : new Date(dateMs).getUTCFullYear(),
        taxQuarter: plainYear ? Math.floor((Number(createdAt.slice(5, 7)) - 1) / 3) + 1 : Math.floor(new Date(dateMs).getUTCMonth() / 3) + 1,
        createdAt,
        updatedAt: time.updatedMs === time.createdMs ? createdAt : iso(time.updatedMs),
      };
    }
    return transactions;
  },
  churn: {
    weight: 45,
    change(company, random) {
      const action = random.next();
      if (action < 0.35) {
        const pending = random.pickWhere(company.transactions, (record) => record.status === 'PENDING');
        if (pending) return { id: company.updateTransaction(pending.id, { status: 'CONFIRMED' }).id, kind: 'confirmed' };
      } else if (action < 0.55) {
        const live = random.pickWhere(company.transactions, (record) => record.status !== 'VOIDED');
        if (live) return { id: company.updateTransaction(live.id, { status: 'VOIDED' }).id, kind: 'voided' };
      }
      const status = random.chance(0.3) ? 'PENDING' : 'CONFIRMED';
      const created = company.createTransaction({
        status,
        dueDate: status === 'PENDING' ? new Date(Date.parse(company.now()) + 30 * DAY_MS).toISOString() : null,
        locationId: random.pick(company.data.locations).id,
        legalEntityId: random.pick(company.data.legalEntities).id,
      });
      return { id: created.id, kind: 'created' };
    },
  },
};
