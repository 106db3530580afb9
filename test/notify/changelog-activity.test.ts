/**
 * The changelog as adaptive polling reads it (src/mirror/changelog-activity.ts): the position, and
 * whether a stream's change row was appended after one, on SQLite and PostgreSQL alike.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { changelogActivity } from '../../src/mirror/changelog-activity.ts';
import { MirrorStore } from '../../src/mirror/mirror-store.ts';
import { tempMirror, type TempMirror } from './helpers.ts';

let mirror: TempMirror | undefined;
afterEach(async () => {
  await mirror?.cleanup();
  mirror = undefined;
});

describe('changelogActivity', () => {
  it('tells a change row of the stream after a position from rows of other streams, and moves the position past both', async () => {
    mirror = await tempMirror();
    const activity = changelogActivity(mirror.connection);
    const store = new MirrorStore(mirror.connection);
    expect(await activity.position()).toBe(0);
    expect(await activity.touchedSince('deals', 0)).toEqual({ touched: false, position: 0 });

    const append = (stream: string, type: string) => store.appendChange({ type, stream, recordId: `${stream}-1`, data: { record: { id: `${stream}-1` }, changes: {} } });
    const first = await append('writes', 'write.succeeded');
    const start = await activity.position();
    expect(start).toBe(first.seq);
    const other = await append('writes', 'write.succeeded');
    expect(await activity.touchedSince('transactions', start)).toEqual({ touched: false, position: other.seq });
    const through = await append('transactions', 'transaction.created');
    expect(await activity.touchedSince('transactions', other.seq)).toEqual({ touched: true, position: through.seq });
    expect(await activity.touchedSince('deals', other.seq)).toEqual({ touched: false, position: through.seq });
    expect(await activity.touchedSince('transactions', through.seq)).toEqual({ touched: false, position: through.seq });
  });
});
