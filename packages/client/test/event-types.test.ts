/**
 * The client's event types are generated from the published JSON Schemas (docs/event-schemas.json):
 * the checked-in file is what the generator writes now, so a schema change without
 * `npm run generate -w @bizops-sync/client` fails here.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GENERATED, generateEventTypes } from '../scripts/generate-events.ts';
import { EVENT_TYPES, type DealWonEvent, type EventOfType } from '../src/index.ts';

describe('the generated event types', () => {
  it('are current with docs/event-schemas.json', async () => {
    const schemas = (JSON.parse(readFileSync(new URL('../../../docs/event-schemas.json', import.meta.url), 'utf8')) as { schemas: Record<string, unknown> }).schemas;
    expect(EVENT_TYPES).toEqual(Object.keys(schemas));
    expect(readFileSync(GENERATED, 'utf8')).toBe(await generateEventTypes());
    // The types narrow by `type`: a deal.won's record has its status.
    const won: EventOfType['deal.won'] = { type: 'deal.won', timestamp: '2026-11-21T09:41:07.120Z', data: { seq: 1, stream: 'deals', record_id: 'deal_1', record: { id: 'deal_1', status: 'WON' }, changes: {} } } as DealWonEvent;
    expect(won.data.record.status).toBe('WON');
  });
});
