/**
 * Arrays bound to PostgreSQL placeholders (executor.ts `SqlArray`), in the server's binary array
 * format (`array_send`/`array_recv`): a one-dimensional `text[]` whose elements are sent as their
 * UTF-8 bytes. The driver sends a Buffer parameter in binary format, so neither side escapes or
 * parses an array literal (`{"...","..."}`): the JSON text of a page's records and change rows
 * crosses as it is. The statement must read the placeholder as `text[]` (`?::text[]`) and cast the
 * elements it needs as other types (`u.amount::bigint`), as the server casts text parameters.
 */
import type { SqlArray } from './executor.ts';

/** PostgreSQL's type oid of `text`, the element type of every array bound. */
const TEXT_OID = 25;

/**
 * `values` as a binary `text[]` (numbers as their decimal text, null as NULL elements).
 * Layout: dimensions (1, or 0 when empty), has-nulls flag, element type oid, then per dimension its
 * length and lower bound (1), then per element its byte length (-1 for NULL) and bytes; all
 * integers 32-bit big-endian.
 */
export function binaryTextArray(values: SqlArray): Buffer {
  const count = values.length;
  const texts = new Array<string | null>(count);
  let size = count > 0 ? 20 : 12;
  let hasNull = 0;
  for (let index = 0; index < count; index += 1) {
    const value = values[index];
    if (value === null || value === undefined) {
      texts[index] = null;
      hasNull = 1;
      size += 4;
    } else {
      const text = typeof value === 'string' ? value : String(value);
      texts[index] = text;
      size += 4 + Buffer.byteLength(text, 'utf8');
    }
  }
  const buffer = Buffer.allocUnsafe(size);
  let offset = buffer.writeInt32BE(count > 0 ? 1 : 0, 0);
  offset = buffer.writeInt32BE(hasNull, offset);
  offset = buffer.writeUInt32BE(TEXT_OID, offset);
  if (count > 0) {
    offset = buffer.writeInt32BE(count, offset);
    offset = buffer.writeInt32BE(1, offset);
  }
  for (const text of texts) {
    if (text === null) {
      offset = buffer.writeInt32BE(-1, offset);
      continue;
    }
    const length = buffer.write(text, offset + 4, 'utf8');
    buffer.writeInt32BE(length, offset);
    offset += 4 + length;
  }
  return buffer;
}
