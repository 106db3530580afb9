/**
 * A list item zod would copy unchanged is taken as listed (src/client/items-as-listed.ts, through
 * `storableItems`): the item itself, equal to zod's output key for key and in the same order; every
 * other item (a key out of order, a value zod changes or refuses, a schema the check does not model)
 * gets zod's own output or zod's own error. Items as the simulator lists them, over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startSimulator, type RunningSimulator } from '@bizops-sync/simulator';
import { asListedCheck } from '../../src/client/items-as-listed.ts';
import { dealSchema, storableItems, transactionListItemSchema, transactionSchema } from '../../src/client/schemas.ts';
import { STREAM_LIST, type RegisteredStream } from '../../src/streams/definitions.ts';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startSimulator({ seed: 11, rateLimit: false, size: { transactions: 150, deals: 120, onboardings: 20 } });
});
afterAll(async () => {
  await sim.close();
});

/** Every item of `stream`'s lists as the simulator serves them (JSON parsed, nothing else). */
async function listedItems(stream: RegisteredStream): Promise<unknown[]> {
  const items: unknown[] = [];
  for (const query of sim.world.partitionQueries(stream.name)) {
    for (let offset = 0; ; offset += 100) {
      const search = new URLSearchParams({ ...query, limit: '100', offset: String(offset) });
      const response = await fetch(`${sim.url}/api/public/v1${stream.request.path}?${search}`, { headers: { authorization: `Bearer ${sim.tokens.admin}` } });
      const body = (await response.json()) as { content: Record<string, unknown> & { pagination: { hasMore: boolean } } };
      items.push(...(body.content[stream.request.itemsKey] as unknown[]));
      if (!body.content.pagination.hasMore) break;
    }
  }
  return items;
}

/** zod's own answer for `input` (the schema unwrapped). */
function zodParse(schema: z.ZodType, input: unknown): { success: boolean; json?: string; message?: string } {
  const parsed = schema.safeParse(input);
  return parsed.success ? { success: true, json: JSON.stringify(parsed.data) } : { success: false, message: parsed.error.message };
}

describe('list items taken as listed', () => {
  it('every stream: each listed item is accepted with zod\'s output, byte for byte; transactions and deals are the items themselves', async () => {
    const zodSchemas: Record<string, z.ZodType> = { transactions: transactionListItemSchema, deals: dealSchema };
    for (const stream of STREAM_LIST as readonly RegisteredStream[]) {
      const items = await listedItems(stream);
      expect(items.length, stream.name).toBeGreaterThan(0);
      for (const item of items) {
        const expected = JSON.stringify(item);
        const parsed = stream.itemSchema.safeParse(item);
        expect(parsed.success, stream.name).toBe(true);
        expect(JSON.stringify(parsed.success ? parsed.data : undefined), stream.name).toBe(expected);
        const zodSchema = zodSchemas[stream.name];
        if (zodSchema) {
          // No copy: the item itself, which zod's copy equals in keys, order and values.
          expect(parsed.success && parsed.data === item, stream.name).toBe(true);
          expect(zodParse(zodSchema, item)).toEqual({ success: true, json: expected });
        }
      }
    }
  });

  it('an item zod refuses gets zod\'s error; one whose keys come in another order gets zod\'s copy (shape order)', async () => {
    const [listed] = (await listedItems(STREAM_LIST.find((stream) => stream.name === 'transactions') as RegisteredStream)) as Record<string, unknown>[];
    const schema = storableItems(transactionListItemSchema);
    const refused: Record<string, unknown>[] = [
      { ...listed, type: 'GIFT' },
      { ...listed, amount: 1.5 },
      { ...listed, amount: '100' },
      { ...listed, amount: 2 ** 53 },
      { ...listed, id: '' },
      { ...listed, description: null },
      Object.fromEntries(Object.entries(listed!).filter(([key]) => key !== 'date')),
    ];
    for (const item of refused) {
      const parsed = schema.safeParse(item);
      expect(parsed.success).toBe(false);
      expect(parsed.success ? undefined : parsed.error.message).toBe(zodParse(transactionListItemSchema, item).message);
    }
    // Accepted, but zod's copy differs from the item: an extra key before the shape's, the shape's keys reversed, an integer-like key.
    const reordered: Record<string, unknown>[] = [
      { note: 'first', ...listed },
      Object.fromEntries(Object.entries(listed!).reverse()),
      { ...listed, 7: 'seven' },
    ];
    for (const item of reordered) {
      const parsed = schema.safeParse(item);
      expect(parsed.success).toBe(true);
      expect(parsed.success && parsed.data === item).toBe(false);
      expect(JSON.stringify(parsed.success ? parsed.data : undefined)).toBe(zodParse(transactionListItemSchema, item).json);
    }
    // Extra keys after the shape's pass through, as zod's loose copy keeps them.
    const extended = { ...listed, counterpartyName: 'Acme', tags: ['a'] };
    const parsed = schema.safeParse(extended);
    expect(parsed.success && (parsed.data as unknown) === extended).toBe(true);
    expect(JSON.stringify(extended)).toBe(zodParse(transactionListItemSchema, extended).json);
  });

  it('a schema with anything the check does not model is left to zod', () => {
    expect(asListedCheck(transactionListItemSchema)).toBeTypeOf('function');
    expect(asListedCheck(dealSchema)).toBeTypeOf('function');
    // Nullish (optional and nullable) fields, all present: modelled.
    expect(asListedCheck(transactionSchema)).toBeTypeOf('function');
    const notModelled = [
      z.object({ id: z.string() }), // strips the other keys: its copy differs
      z.strictObject({ id: z.string() }),
      z.looseObject({ id: z.string().trim() }), // changes the value
      z.looseObject({ id: z.string().max(3) }),
      z.looseObject({ n: z.int().min(0) }),
      z.looseObject({ n: z.coerce.number() }),
      z.looseObject({ user: z.looseObject({ name: z.string() }) }), // nested: copied by zod
      z.looseObject({ id: z.string() }).refine(() => true),
      z.looseObject({ when: z.string().transform((value) => value.length) }),
      z.string(),
    ];
    for (const schema of notModelled) expect(asListedCheck(schema)).toBeUndefined();
  });
});
