/**
 * The configuration schema: every key, its rule and its built-in default (zod). How the defaults,
 * the JSON file and the environment combine is load.ts.
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import { STREAM_LIST, STREAM_NAMES } from '../streams/definitions.ts';
import { unstorableTextRule } from '../client/storable-json.ts';

/** The path prefix of every endpoint (spec §1 convention 1), which the client adds to `baseUrl`. */
const API_PREFIX = '/api/public/v1';
/**
 * A base URL path that already holds the API prefix (at its end or before a resource path, e.g.
 * `/api/public/v1/deals`) or its start `/api/public`: every request would miss the API.
 */
const API_PREFIX_IN_PATH = /\/api\/public(\/v1)?(\/.*)?$/i;

/**
 * Why `expression` is not a node-cron expression, or null when it is one: 5 fields (minute hour
 * day-of-month month day-of-week), or 6 with a seconds field first (`*\/30 * * * * *` = every 30 s).
 * A plain expression (`isPlainCronExpression`) is valid without node-cron; any other is checked by
 * node-cron itself, loaded then (a one-off `sync` with the usual schedules loads no scheduler library).
 */
export function cronExpressionProblem(expression: string): string | null {
  if (isPlainCronExpression(expression)) return null;
  const { validateDetailed } = createRequire(import.meta.url)('node-cron') as typeof import('node-cron');
  const result = validateDetailed(expression);
  if (result.valid) return null;
  const why = result.errors.map((error) => (error.field === 'expression' ? error.message : `${error.field}: ${error.message}`)).join('; ');
  return `"${expression}" is not a valid cron expression (${why}); use 5 fields, or 6 with seconds first, e.g. "*/30 * * * * *"`;
}

/** The values each field of a 6-field cron expression allows, [min, max]: second, minute, hour, day of month, month, day of week (0 = Sunday). */
const CRON_FIELD_BOUNDS: readonly (readonly [number, number])[] = [
  [0, 59],
  [0, 59],
  [0, 23],
  [1, 31],
  [1, 12],
  [0, 6],
];

/**
 * Whether `expression` is a cron expression node-cron accepts, decided without it for the plain
 * ones: 5 or 6 fields separated by single spaces, each a comma-separated list of `*`, `*\/N`, `A`,
 * `A-B` or `A-B/N` (numbers within the field's bounds, A <= B, 1 <= N <= the field's maximum), and
 * the day of month or the month `*` (no impossible date such as `31 2`). False means "not decided
 * here" (names, `?`, `L`, `W`, 7 for Sunday, odd spacing), never "invalid".
 */
export function isPlainCronExpression(expression: string): boolean {
  if (!/^\S+(?: \S+){4,5}$/.test(expression)) return false;
  const fields = expression.split(' ');
  const bounds = fields.length === 6 ? CRON_FIELD_BOUNDS : CRON_FIELD_BOUNDS.slice(1);
  const [dayOfMonth, month] = fields.slice(-3, -1);
  if (dayOfMonth !== '*' && month !== '*') return false;
  return fields.every((field, index) => field.split(',').every((part) => isPlainCronPart(part, bounds[index]!)));
}

/** One element of a cron field's list (`*`, `*\/N`, `A`, `A-B`, `A-B/N`) within `[min, max]`. */
function isPlainCronPart(part: string, [min, max]: readonly [number, number]): boolean {
  const match = /^(?:(\*)|(\d{1,2})(?:-(\d{1,2}))?)(?:\/(\d{1,2}))?$/.exec(part);
  if (!match) return false;
  const [, star, from, to, step] = match;
  if (step !== undefined && (Number(step) < 1 || Number(step) > max || (star === undefined && to === undefined))) return false;
  if (star !== undefined) return true;
  const first = Number(from);
  const last = to === undefined ? first : Number(to);
  return first >= min && last <= max && first <= last;
}

/** A cron expression, checked at load: a bad schedule is a ConfigError naming its key, not a daemon that never runs. */
const cronExpression = z
  .string()
  .min(1)
  .superRefine((expression, context) => {
    const problem = cronExpressionProblem(expression);
    if (problem) context.addIssue({ code: 'custom', message: problem });
  });

/** A connection's name: `^[a-z0-9][a-z0-9_-]*$` (it appears in file names, metric labels and URLs). */
export const CONNECTION_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/**
 * Keys shared by every connection of a deployment: one Redis, one HTTP port. Top level only. Every
 * other key of the schema but `connection` is a connection's own (PER_CONNECTION_KEYS).
 */
export const PROCESS_WIDE_KEYS = ['redisUrl', 'http'] as const;

/** A registered stream's name (src/streams/definitions.ts): adding a stream there adds it here. */
const streamName = z.enum(STREAM_NAMES, { error: (issue) => `"${String(issue.input)}" is not a stream; expected one of ${STREAM_NAMES.join(', ')}` });

/**
 * A partition value: text the mirror can store (src/client/storable-json.ts: no NUL, no unpaired
 * surrogate), since it is compared with a column through a JSON function and sent in a query.
 */
const storableValue = z
  .string()
  .min(1)
  .refine((value) => unstorableTextRule(value) === undefined, { error: (issue) => unstorableTextRule(String(issue.input)) ?? 'must be text the mirror can store' });

/**
 * `sync.partitions`: the values of each partitioned stream's required parameter (docs/sync.md
 * "Partitioned streams"), e.g. `{ "qa_corrective_actions": { "locationId": ["loc_1", "loc_2"] } }`.
 * Keyed by a partitioned stream, then by its parameter (the only key allowed), then a non-empty
 * list of values.
 */
const partitionsSchema = z
  .record(z.string(), z.record(z.string(), z.array(storableValue).min(1, 'must list at least one value (leave the key out for none)')))
  .superRefine((partitions, context) => {
    for (const [name, params] of Object.entries(partitions)) {
      const stream = STREAM_LIST.find((candidate) => candidate.name === name);
      const partitioned = STREAM_LIST.filter((candidate) => 'partitions' in candidate && candidate.partitions).map((candidate) => candidate.name);
      const param = stream && 'partitions' in stream ? stream.partitions?.param : undefined;
      if (param === undefined) {
        context.addIssue({ code: 'custom', path: [name], message: `"${name}" is not a partitioned stream; expected one of ${partitioned.join(', ') || '(none)'}` });
        continue;
      }
      for (const key of Object.keys(params)) {
        if (key !== param) context.addIssue({ code: 'custom', path: [name, key], message: `"${key}" is not ${name}'s partition parameter; expected ${param}` });
      }
    }
  });

/** Smallest and largest decoded length of a webhook secret, bytes (Standard Webhooks: 24 to 64). */
export const WEBHOOK_SECRET_BYTES = { min: 24, max: 64 } as const;

/**
 * A Standard Webhooks secret: `whsec_` + base64 decoding to 24 to 64 bytes (a 1-byte key such as
 * `whsec_QQ==` signs nothing worth verifying). Error messages never contain the secret.
 */
const webhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'must be whsec_ followed by base64')
  .superRefine((secret, context) => {
    const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64').length;
    if (bytes < WEBHOOK_SECRET_BYTES.min || bytes > WEBHOOK_SECRET_BYTES.max) {
      context.addIssue({
        code: 'custom',
        message: `must decode to ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} bytes, got ${bytes} (generate one: echo "whsec_$(openssl rand -base64 32)")`,
      });
    }
  });

/** One webhook endpoint (docs/webhooks.md "Endpoints"); names are unique (checked at start, not here). */
const webhookEndpointSchema = z.object({
  /** A short name for logs, metrics and `webhooks list`. */
  name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only'),
  /** `http(s)` URL receiving the signed POSTs; redirects are not followed. */
  url: z.url({ protocol: /^https?$/ }),
  /** Standard Webhooks secret: `whsec_` followed by base64 of 24 to 64 bytes. */
  secret: webhookSecret,
  /**
   * Secret rotation: the secret being replaced. Until `previousSecretExpiresAt` every request carries
   * two signatures (one per secret, space-separated in `webhook-signature`), so a receiver still on
   * the old secret verifies too. Same rule as `secret`; requires `previousSecretExpiresAt`.
   */
  previousSecret: webhookSecret.optional(),
  /** When the previous secret stops being signed with (ISO 8601 with an offset, e.g. `2026-12-01T00:00:00Z`). */
  previousSecretExpiresAt: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-12-01T00:00:00Z' }).optional(),
  /** Event types to deliver: exact (`deal.won`), a prefix wildcard (`deal.*`), or `*` for all. */
  events: z.array(z.string().min(1)).min(1).default(['*']),
  /**
   * Days an endpoint may keep failing (no 2xx since its first failure of the streak) before it is
   * disabled and a `webhook.endpoint_disabled` event is sent to the other endpoints. Fractions
   * allowed (tests scale time down).
   */
  disableAfterDays: z.number().positive().default(5), // DEFAULT_WEBHOOK_DISABLE_AFTER_DAYS
  /**
   * Requests in flight at once (docs/webhooks.md "Ordering"): events of different records go out
   * side by side, those of one record one at a time. A receiver answering in 100 ms gets up to
   * 160 events a second with the default 16.
   */
  maxInFlight: z.number().int().min(1).max(256).default(16), // DEFAULT_MAX_IN_FLIGHT
  /**
   * `record` (default): events of one record arrive in changelog order and a failing event holds
   * back only its record's later events. `endpoint`: every event in changelog order, one request at
   * a time, a failing event holding back every later one.
   */
  ordering: z.enum(['record', 'endpoint'], { error: 'must be "record" (by record, in parallel) or "endpoint" (strict order, one at a time)' }).default('record'),
  /** Where a new endpoint starts: `end` (the changelog's end) or `snapshot` (the current rows first: docs/mirror.md "Starting from a snapshot"). */
  initial: z.enum(['end', 'snapshot'], { error: 'must be "end" or "snapshot"' }).optional(),
}).superRefine((endpoint, context) => {
  if (endpoint.previousSecret !== undefined && endpoint.previousSecretExpiresAt === undefined) {
    context.addIssue({ code: 'custom', path: ['previousSecretExpiresAt'], message: 'is required with previousSecret (when the old secret stops being signed with)' });
  }
});

/** The kinds of sink (docs/sinks.md), each one file of src/notify/sinks/. */
export const SINK_KINDS = ['nats', 'rabbitmq', 'redis-stream'] as const;

/** The URL schemes each kind of sink accepts. */
const SINK_URL_SCHEMES: Record<(typeof SINK_KINDS)[number], readonly string[]> = {
  nats: ['nats:', 'tls:'],
  rabbitmq: ['amqp:', 'amqps:'],
  'redis-stream': ['redis:', 'rediss:'],
};

/** The keys only one kind of sink reads (the others refuse them). */
const SINK_KIND_KEYS: Record<string, (typeof SINK_KINDS)[number]> = {
  subjectPrefix: 'nats',
  stream: 'nats',
  createStream: 'nats',
  duplicateWindowSeconds: 'nats',
  exchange: 'rabbitmq',
  declareExchange: 'rabbitmq',
  key: 'redis-stream',
  keyPrefix: 'redis-stream',
  maxLen: 'redis-stream',
};

/**
 * One sink (docs/sinks.md "Configuration"): the changelog published to a broker by the delivery
 * core, like a webhook endpoint. Names are unique across webhooks and sinks (checked at start).
 * The URL, which may hold the broker's password, comes from `url`, or from the environment variable
 * `urlEnv` names, or from the file `urlFile` names (load.ts reads them); it is masked wherever shown.
 */
const sinkSchema = z
  .object({
    /** A short name for logs, metrics and `sinks list`. */
    name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, _ . - only'),
    kind: z.enum(SINK_KINDS, { error: 'must be "nats", "rabbitmq" or "redis-stream"' }),
    /** The broker: `nats://`, `amqp(s)://`, `redis(s)://` (with its credentials, if any). */
    url: z.string().min(1).optional(),
    /** The name of an environment variable holding `url` (set by load.ts). */
    urlEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name').optional(),
    /** A file holding `url` (read by load.ts, trimmed). */
    urlFile: z.string().min(1).optional(),
    /** Event types to publish: exact (`deal.won`), a prefix wildcard (`deal.*`), or `*` for all. */
    events: z.array(z.string().min(1)).min(1).default(['*']),
    /** Days a sink may fail (no acknowledgement since its first failure) before it is disabled with a `sink.disabled` event. */
    disableAfterDays: z.number().positive().default(5),
    /** Events in flight at once, each of a different record (docs/sinks.md "Ordering"). */
    maxInFlight: z.number().int().min(1).max(1024).default(256),
    /** `record` (default): per record in changelog order, records side by side; `endpoint`: every event in order, one at a time. */
    ordering: z.enum(['record', 'endpoint'], { error: 'must be "record" (by record, in parallel) or "endpoint" (strict order, one at a time)' }).default('record'),
    /** Where a new sink starts: `end` (the changelog's end) or `snapshot` (the current rows first: docs/mirror.md "Starting from a snapshot"). */
    initial: z.enum(['end', 'snapshot'], { error: 'must be "end" or "snapshot"' }).default('end'),
    /** How long a publish may wait for the broker's acknowledgement, seconds. */
    ackTimeoutSeconds: z.number().positive().max(300).default(10),
    /** nats: subjects are `<subjectPrefix>.<stream>.<record_id>`. Default `bizops`. */
    subjectPrefix: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'tokens of letters, digits, _ and - joined by dots').optional(),
    /** nats: the JetStream stream that takes the subjects (created when `createStream`). Default `BIZOPS`. */
    stream: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, _ and - only').optional(),
    /** nats: create the stream (subjects `<subjectPrefix>.>`) when it is missing. Default false. */
    createStream: z.boolean().optional(),
    /** nats: the created stream's duplicate window, seconds (`Nats-Msg-Id` deduplication). Default 120. */
    duplicateWindowSeconds: z.number().int().min(1).max(86_400).optional(),
    /** rabbitmq: the exchange published to (routing key `<stream>.<event type>`). Default `bizops`. */
    exchange: z.string().min(1).max(255).optional(),
    /** rabbitmq: declare the exchange (durable, topic) when it is missing. Default false. */
    declareExchange: z.boolean().optional(),
    /** redis-stream: one stream key for every event (instead of one per stream). */
    key: z.string().min(1).optional(),
    /** redis-stream: a key per stream, `<keyPrefix><stream>`. Default `bizops:changes:`. */
    keyPrefix: z.string().min(1).optional(),
    /** redis-stream: `XADD ... MAXLEN ~ maxLen` (approximate trimming); none by default. */
    maxLen: z.number().int().positive().optional(),
  })
  .superRefine((sink, context) => {
    // load.ts has set `url` from urlEnv or urlFile (and refused more than one of the three).
    if (sink.url === undefined) context.addIssue({ code: 'custom', path: ['url'], message: 'is required (or urlEnv: an environment variable holding it, or urlFile: a file holding it)' });
    if (sink.url !== undefined) {
      let protocol: string | undefined;
      try {
        protocol = new URL(sink.url).protocol;
      } catch {
        context.addIssue({ code: 'custom', path: ['url'], message: `must be a URL (${SINK_URL_SCHEMES[sink.kind].map((scheme) => `${scheme}//`).join(' or ')})` });
      }
      if (protocol !== undefined && !SINK_URL_SCHEMES[sink.kind].includes(protocol)) {
        context.addIssue({ code: 'custom', path: ['url'], message: `a ${sink.kind} sink's URL starts with ${SINK_URL_SCHEMES[sink.kind].map((scheme) => `${scheme}//`).join(' or ')}, got ${protocol}//` });
      }
    }
    for (const [key, kind] of Object.entries(SINK_KIND_KEYS)) {
      if ((sink as Record<string, unknown>)[key] !== undefined && kind !== sink.kind) context.addIssue({ code: 'custom', path: [key], message: `is a key of ${kind} sinks, not of ${sink.kind}` });
    }
    if (sink.key !== undefined && sink.keyPrefix !== undefined) context.addIssue({ code: 'custom', path: ['key'], message: 'one stream key for every event, or keyPrefix for one per stream: not both' });
  });

/**
 * The configuration (docs/configuration.md): every key with its rule and built-in default.
 * Environment variables and the JSON file are merged onto these defaults by load.ts, which names
 * the variable, the key and the rule when a value breaks one. Times are ms unless the key says
 * seconds; schedules are node-cron expressions (5 fields, or 6 with seconds first).
 */
export const configSchema = z.object({
  /**
   * The connection's name (docs/operations.md "Many companies"): the key under `connections` in the
   * file, or `default` when the file has no `connections`. Set by load.ts, not by the user; it names
   * the connection in logs, metrics (`connection` label), `status` and `--connection`.
   */
  connection: z.string().regex(CONNECTION_NAME, 'lowercase letters, digits, _ and - only, starting with a letter or digit').default('default'),
  /**
   * `{base_url}` of spec §1, without `/api/public/v1`: the client adds the prefix, so a base URL
   * already holding it (or its start `/api/public`, or it and a resource path) would miss the API, every list would answer 404 and a stream marked
   * `unsupported` by that 404 would be skipped until it is probed again (docs/decisions.md).
   */
  baseUrl: z
    .url({ protocol: /^https?$/ })
    // URL.canParse first: zod runs refinements after a failed `url()` too, and `new URL` would throw a bare 'Invalid URL'.
    .refine((url) => !URL.canParse(url) || !API_PREFIX_IN_PATH.test(new URL(url).pathname), {
      message: `must be the API's {base_url} without ${API_PREFIX} or a part of it (the client adds ${API_PREFIX} to every path); drop it and what follows it from the URL`,
    }),
  /** How each API request is bounded (docs/operations.md "Timeouts"). */
  api: z
    .object({
      /**
       * Longest time one request may take, headers and whole body included, seconds (fractions
       * allowed). Past it the request is aborted and retried like any timeout: undici's own
       * timeouts apply between chunks only, so a server trickling its body would hold a page for ever.
       */
      requestDeadlineSeconds: z.number().positive().max(3600).default(60),
    })
    .prefault({}),
  /**
   * Bearer tokens by name (spec §5). `default` acts for syncing; a write may name another one to act
   * as that employee (e.g. a clock-in). Never logged.
   */
  tokens: z.record(z.string().regex(/^[A-Za-z0-9_.-]+$/), z.string().min(1)).refine((t) => 'default' in t, {
    message: 'a token named "default" is required (set BIZOPS_TOKEN or BIZOPS_TOKEN_FILE)',
  }),
  /**
   * The mirror: a SQLite file path, or a PostgreSQL URL `postgres://user:password@host:5432/db?schema=name`
   * (docs/mirror.md "PostgreSQL"; schema default `bizops`) (`BIZOPS_DB`, or `BIZOPS_DATABASE_URL` for a
   * URL). `{connection}` in it is replaced by the connection's name (`?schema={connection}`). Default
   * `./data/mirror.db`, or `./data/<connection>.db` when the file has `connections`. Its password is
   * masked when shown.
   */
  dbPath: z.string().min(1).default('./data/mirror.db'),
  /** Redis of the write queue and of the rate budget shared by every process (`REDIS_URL`); its password is masked when shown. */
  redisUrl: z.string().regex(/^rediss?:\/\//, 'must start with redis:// or rediss://').default('redis://127.0.0.1:6379'),
  /**
   * The company the tokens act for: the key of the shared rate budget (spec §8, per company).
   * Required for each connection when the file has `connections` (load.ts); `default` otherwise.
   */
  companyId: z.string().min(1).default('default'),
  /** The rate budget (docs/rate-budget.md, spec §8). */
  rateLimit: z
    .object({
      /**
       * Requests per window (spec §8: 60 per minute by default): a ceiling on this deployment's own
       * requests in each window of the API, whatever the server says remains (docs/rate-budget.md).
       */
      perMinute: z.number().int().positive().default(60),
      /** Window length, ms. 60000 in production; tests scale time down. */
      windowMs: z.number().int().positive().default(60_000),
      /** Budget key: one per company (default) or one per token (spec §8 "also described as per API key"). */
      scope: z.enum(['company', 'token']).default('company'),
      /**
       * How long a request waits for Redis (the shared budget) when Redis stops answering mid-run,
       * seconds, before it fails (docs/rate-budget.md "When Redis is away"): nothing is sent meanwhile.
       */
      redisWaitSeconds: z.number().positive().max(3600).default(60),
    })
    .prefault({}),
  /** When and what the sync runs (docs/sync.md, docs/operations.md "Schedules"). */
  sync: z
    .object({
      /** Seconds subtracted from the cursor on each incremental run, to absorb clock skew and ties. */
      overlapSeconds: z.number().int().min(0).default(120),
      /** Cron (seconds field allowed) for every stream's incremental sync. */
      schedule: cronExpression.default('*/30 * * * * *'),
      /** Per-stream overrides of `schedule`, e.g. `{ "deals": "*\/10 * * * * *" }` (every 10 seconds). */
      streamSchedules: z.partialRecord(streamName, cronExpression).default({}),
      /** Cron for reconciliation (complete scans that find records gone from a list). */
      reconcileSchedule: cronExpression.default('0 17 */6 * * *'),
      /**
       * An `unsupported` stream (its list answered 404) is asked again by a sync at most this often,
       * seconds (default 600: a list that comes back is mirrored within 10 minutes, for one request per
       * 10 minutes while it stays away); 0 asks on every sync. A backfill or reconciliation always asks.
       */
      unsupportedProbeSeconds: z.number().int().min(0).default(600),
      /**
       * Failed runs in a row that make a stream `failing` (one `stream.failing` event;
       * docs/operations.md "Operational events"). Default 3.
       */
      failingAfterRuns: z.number().int().min(1).default(3),
      /**
       * A stream is `stale` (one `stream.stale` event) when it had no successful run for this many
       * of its schedule's intervals (the longest gap between its next ten ticks), and at least
       * `staleMinimumSeconds`. Default 10 (the default 30 s schedule: 5 minutes).
       */
      staleAfterSchedules: z.number().positive().default(10),
      /** The least time without a successful run that makes a stream `stale`, seconds. Default 300. */
      staleMinimumSeconds: z.number().min(0).default(300),
      /**
       * How long a stream's or the webhook delivery's lease lasts without renewal, seconds
       * (docs/operations.md "Running two daemons (replicas)"): a replica takes a dead daemon's
       * streams and webhooks within about this long. Renewed every third of it. Default 30.
       */
      leaseSeconds: z.number().positive().max(3600).default(30),
      /**
       * How long a run waits for the mirror's database when it is away (a PostgreSQL restart or
       * failover), seconds, before it fails; it then goes on from its checkpoint (docs/sync.md
       * "When the database goes away"). 0: no wait. Default 60.
       */
      databaseWaitSeconds: z.number().min(0).max(3600).default(60),
      /**
       * A complete scan that would tombstone more than this share of a stream's live records (and
       * more than 10 records) tombstones none, says so (`stream.mass_deletion_held`, `status`) and
       * waits for `backfill --confirm-deletions` (docs/sync.md "Mass deletions held"). Default 0.1; 1 never holds.
       */
      massDeletionShare: z.number().gt(0).max(1).default(0.1),
      /**
       * Adaptive polling (docs/sync.md "Adaptive polling"): a stream whose last 3 runs appended no
       * change is polled on every 2nd, 4th, ... tick of its schedule, up to every this-many-th; a
       * change or a write-through touching it brings it back to every tick. 1 polls on every tick.
       * Default 4 (2 minutes on the default 30-second schedule).
       */
      maxPollFactor: z.number().int().min(1).max(1024).default(4),
      /**
       * The change probe (docs/sync.md "Change probe"): a resting poll of a complete-scan stream
       * (onboardings) asks two one-item questions instead of reading the whole list, and scans when
       * they say it moved; a complete scan still comes at least every this-many ticks of its
       * schedule, for a change the probe cannot see. 1: every poll scans (no probe). Default 16
       * (8 minutes on the default 30-second schedule).
       */
      maxScanFactor: z.number().int().min(1).max(1024).default(16),
      /** Streams to run. Default: every registered stream. */
      streams: z.array(streamName).default(() => [...STREAM_NAMES]),
      /**
       * The values of a partitioned stream's required parameter, e.g. `{ "qa_corrective_actions":
       * { "locationId": ["loc_1", "loc_2"] } }`: the stream reads exactly these. Unset, a stream whose
       * definition takes them from another stream's column reads the values mirrored there.
       */
      partitions: partitionsSchema.default({}),
    })
    .prefault({}),
  /** The changelog (docs/mirror.md "Retention"). */
  changes: z
    .object({
      /**
       * Change rows older than this many days are pruned (fractions allowed), in small batches,
       * never past a webhook endpoint's or a named consumer's cursor; 0 keeps everything. Default 30:
       * longer than a failing event's retry schedule (about 27.5 h) and an endpoint's disableAfterDays
       * (5) together, with room for a downstream outage and a month of history to replay.
       */
      retainDays: z.number().min(0).max(36_500).default(30),
    })
    .prefault({}),
  /** The write queue (docs/writes.md). */
  writes: z
    .object({
      /**
       * How often every process running writes sweeps the `writes` table for unfinished writes whose
       * queue job is gone or whose claim expired, and queues them again, seconds (also on every Redis reconnect).
       */
      sweepSeconds: z.number().positive().max(3600).default(5),
      /** How long a run's claim on a write lasts unless renewed (every third of it), seconds: a dead worker's writes are taken over after this. */
      claimSeconds: z.number().min(1).max(3600).default(30),
      /**
       * Ledger lookups of a transaction whose outcome is unknown go on until the request deadline plus
       * this long after the send (a server may commit late), and after a re-send the ledger is watched
       * this long again, seconds.
       */
      ledgerSettleSeconds: z.number().min(0).max(3600).default(60),
    })
    .prefault({}),
  /** The daemon's HTTP port: /healthz, /readyz, /metrics, the write API and the read routes (docs/operations.md "The HTTP port"). */
  http: z
    .object({
      /** Address to bind: 127.0.0.1 by default, 0.0.0.0 in the image. */
      host: z.string().default('127.0.0.1'),
      /** Port; 0 picks any free port (logged at start). */
      port: z.number().int().min(0).max(65535).default(8080),
      /**
       * How long a `/readyz` verdict is reused, seconds: the readiness probe (one list request with
       * `limit=1`, spent from the rate budget) runs at most this often.
       */
      readinessCacheSeconds: z.number().int().min(1).max(3600).default(30),
      /** Bearer key required by `POST /writes` and `GET /writes/{id}`; the write routes are off when unset. */
      writeApiKey: z.string().min(16, 'must be at least 16 characters').optional(),
      /**
       * Bearer key of the read routes (the changelog over HTTP, named consumers, event schemas:
       * src/daemon/read-access.ts); the read routes are off when unset. At least 16 characters.
       */
      readApiKey: z.string().min(16, 'must be at least 16 characters').optional(),
    })
    .prefault({}),
  /** Webhook endpoints receiving every matching changelog event (docs/webhooks.md); `BIZOPS_WEBHOOK_URL` + `_SECRET` define one named `env`. */
  webhooks: z.array(webhookEndpointSchema).default([]),
  /** Sinks: the changelog published to NATS JetStream, RabbitMQ or Redis Streams (docs/sinks.md). */
  sinks: z.array(sinkSchema).default([]),
});

/**
 * The keys each connection has its own value of: every key of the schema but `connection` (set by
 * the loader) and the process-wide ones. Under `connections`, a top-level value of one of these is a
 * default every connection inherits. Derived from the schema, so a key added there is a connection's own.
 */
export const PER_CONNECTION_KEYS: readonly string[] = Object.keys(configSchema.shape).filter(
  (key) => key !== 'connection' && !(PROCESS_WIDE_KEYS as readonly string[]).includes(key),
);

/** The validated configuration of one connection, defaults filled in (`loadConfig`, `loadDeployment`). */
export type Config = z.infer<typeof configSchema>;

/**
 * Every connection of one deployment (`loadDeployment`): one Config each, in the order of the
 * file's `connections` object, sharing `redisUrl` and `http` (process-wide keys, equal in every one).
 */
export interface DeploymentConfig {
  /** At least one. Without `connections` in the file: the one connection named `default`. */
  connections: readonly Config[];
  /** True when the file names its connections (`connections`); false for the single `default` one. */
  named: boolean;
}
/**
 * One validated webhook endpoint of `Config.webhooks` (`disableAfterDays`, `maxInFlight` and
 * `ordering` optional for library callers: defaults 5, 16 and `record`).
 */
export type WebhookEndpointConfig = Omit<z.infer<typeof webhookEndpointSchema>, 'disableAfterDays' | 'maxInFlight' | 'ordering'> & {
  disableAfterDays?: number;
  maxInFlight?: number;
  ordering?: 'record' | 'endpoint';
};

/** Default of an endpoint's `disableAfterDays`. */
export const DEFAULT_WEBHOOK_DISABLE_AFTER_DAYS = 5;

/** One validated sink of `Config.sinks` (docs/sinks.md "Configuration"); `url` set (load.ts read `urlEnv` or `urlFile`). */
export type SinkConfig = z.infer<typeof sinkSchema>;

/** A kind of sink. */
export type SinkKind = (typeof SINK_KINDS)[number];
