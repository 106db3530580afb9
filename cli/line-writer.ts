/**
 * Writes lines to a stream with backpressure: the producer waits while the stream's buffer is full,
 * so a program printing a million lines into a slow pipe holds at most one chunk of them in memory
 * (docs/mirror.md "Reading the mirror downstream": `changes` streams with a constant footprint).
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';

/** Options of `writeLines`. */
export interface WriteLinesOptions {
  /**
   * Characters gathered before one write (default 65536). 0 writes every line at once (a tail that
   * must show each line as it comes, e.g. `changes --follow`).
   */
  chunkChars?: number;
}

/**
 * Writes each line of `lines` plus a newline to `output`, in chunks of about `chunkChars`, waiting
 * for `drain` whenever `output` says its buffer is full.
 * @throws what `output` emits as `error` while waiting (e.g. EPIPE when the reader went away)
 */
export async function writeLines(output: Writable, lines: AsyncIterable<string>, options: WriteLinesOptions = {}): Promise<void> {
  const chunkChars = options.chunkChars ?? 65_536;
  let chunk = '';
  const flush = async () => {
    if (chunk.length === 0) return;
    const room = output.write(chunk);
    chunk = '';
    if (!room) await once(output, 'drain');
  };
  for await (const line of lines) {
    chunk += `${line}\n`;
    if (chunk.length >= chunkChars) await flush();
  }
  await flush();
}
