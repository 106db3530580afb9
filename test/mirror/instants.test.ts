/** Instants, not text (src/mirror/instants.ts): the API's times compared as the instants they name. */
import { describe, expect, it } from 'vitest';
import { instantMs, sameInstant } from '../../src/mirror/instants.ts';

describe('instantMs, sameInstant', () => {
  it('reads Z, +00:00, +0000, no fraction, a longer fraction and no zone (UTC) as one instant; other text is NaN', () => {
    const ms = Date.UTC(2025, 10, 1, 7, 41, 35, 578);
    for (const text of ['2025-11-01T07:41:35.578Z', '2025-11-01T07:41:35.578+00:00', '2025-11-01T07:41:35.578+0000', '2025-11-01T07:41:35.578123Z', '2025-11-01T07:41:35.578', '2025-11-01 07:41:35.578Z']) {
      expect(instantMs(text), text).toBe(ms);
    }
    expect(instantMs('2025-11-01T07:41:35Z')).toBe(ms - 578);
    expect(instantMs('2025-11-01T09:41:35.578+02:00')).toBe(ms);
    expect(instantMs('2025-11-01')).toBe(Date.UTC(2025, 10, 1));
    for (const text of ['', 'November 1, 2025', '2025-11-01T07', 12, null]) expect(instantMs(text)).toBeNaN();
    // Text order is not time order across styles: '+' sorts before 'Z', 'Z' after '.'.
    expect('2025-11-01T07:41:35.578+00:00' < '2025-11-01T07:41:35.578Z').toBe(true);
    expect(sameInstant('2025-11-01T07:41:35.578+00:00', '2025-11-01T07:41:35.578Z')).toBe(true);
    expect(sameInstant('2025-11-01T07:41:35Z', '2025-11-01T07:41:35.000Z')).toBe(true);
    expect(sameInstant('2025-11-01T07:41:35.578Z', '2025-11-01T07:41:35.579Z')).toBe(false);
    // A date alone is not compared as an instant (a date field written another way stays a change).
    expect(sameInstant('2025-11-01', '2025-11-01T00:00:00Z')).toBe(false);
  });
});
