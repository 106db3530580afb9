/**
 * An error a handler throws to answer with a status and a JSON body `{ message, err? }` (spec §7).
 *
 * Invalid bodies and parameters get 400 (spec §7: "Status codes for invalid bodies or parameters ...
 * not shown"; 400 is what real servers send), with a message naming the field and the rule.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly err: string | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(status: number, message: string, err?: string, headers?: Record<string, string>) {
    super(message);
    this.status = status;
    this.err = err;
    this.headers = headers;
  }

  /** The JSON body: `{ message }` or `{ message, err }`. */
  body(): Record<string, unknown> {
    return this.err === undefined ? { message: this.message } : { message: this.message, err: this.err };
  }
}

/** 400 naming the field and the rule. */
export function badRequest(message: string): HttpError {
  return new HttpError(400, message);
}

/** 404 `{ message }`. */
export function notFound(message: string): HttpError {
  return new HttpError(404, message);
}
