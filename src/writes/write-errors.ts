/**
 * Errors of the write queue's intake (docs/writes.md). Each message is one line a person can act
 * on: it names the write kind, the field and the rule, or the write and what to do next.
 */

/** One broken rule of a payload: `field` is a dot path (`ratings[0].score`), empty for the whole payload. */
export interface WriteFieldIssue {
  field: string;
  rule: string;
}

/**
 * The payload (or the kind, or the options) breaks a rule: nothing was stored or queued.
 * `message`: `transaction.create: amount: must be at least 1 (cents)` (more issues: `; ` joined).
 */
export class WriteValidationError extends Error {
  override name = 'WriteValidationError';
  readonly kind: string;
  readonly issues: readonly WriteFieldIssue[];

  constructor(kind: string, issues: readonly WriteFieldIssue[]) {
    const described = issues.map((issue) => (issue.field ? `${issue.field}: ${issue.rule}` : issue.rule)).join('; ');
    super(`${kind}: ${described}`);
    this.kind = kind;
    this.issues = issues;
  }
}

/**
 * The idempotency key names an existing write whose kind, payload or acting token differs: the same
 * key must mean the same write. Nothing new was stored.
 */
export class IdempotencyConflictError extends Error {
  override name = 'IdempotencyConflictError';
  readonly idempotencyKey: string;
  /** The id of the write the key already names. */
  readonly existingWriteId: string;

  constructor(idempotencyKey: string, existingWriteId: string, difference: string) {
    super(
      `idempotency key "${idempotencyKey}" already names write ${existingWriteId} with a different ${difference}; use a new key for a different write`,
    );
    this.idempotencyKey = idempotencyKey;
    this.existingWriteId = existingWriteId;
  }
}
