import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { writeLines } from '../../cli/line-writer.ts';

/** A sink that accepts one chunk, then holds the next until `release()`: a reader slower than the writer. */
class SlowSink extends Writable {
  received = '';
  private pending: (() => void) | undefined;
  constructor() {
    super({ highWaterMark: 16, decodeStrings: false });
  }
  override _write(chunk: string, _encoding: BufferEncoding, callback: () => void): void {
    this.received += chunk;
    this.pending = callback;
  }
  release(): boolean {
    const callback = this.pending;
    this.pending = undefined;
    callback?.();
    return callback !== undefined;
  }
}

describe('writeLines', () => {
  it('waits for the reader: the producer is never more than one chunk ahead of what the sink accepted', async () => {
    const sink = new SlowSink();
    let produced = 0;
    async function* lines() {
      for (let index = 0; index < 50; index += 1) {
        produced += 1;
        yield `line ${index}`;
      }
    }
    const done = writeLines(sink, lines(), { chunkChars: 20 });
    let finished = false;
    void done.then(() => (finished = true));
    while (!finished) {
      await new Promise((resolve) => setImmediate(resolve));
      // Lines gathered but not yet accepted by the sink: at most one chunk (about 20 characters, 3 lines).
      const accepted = sink.received.split('\n').length - 1;
      expect(produced - accepted).toBeLessThanOrEqual(3);
      sink.release();
    }
    await done;
    expect(sink.received).toBe(Array.from({ length: 50 }, (_, index) => `line ${index}\n`).join(''));
  });

  it('writes every line at once with chunkChars 0 (a tail shows each line as it comes)', async () => {
    const chunks: string[] = [];
    const sink = new Writable({ decodeStrings: false, write: (chunk: string, _encoding, callback) => (chunks.push(chunk), callback()) });
    async function* lines() {
      yield 'a';
      yield 'b';
    }
    await writeLines(sink, lines(), { chunkChars: 0 });
    expect(chunks).toEqual(['a\n', 'b\n']);
  });
});
