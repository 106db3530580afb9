/**
 * The OpenAPI 3.1 document of the daemon's HTTP port, generated from the routes' declarations
 * (route.ts) by zod-openapi: the same zod schemas the route table validates requests with. Served at
 * `GET /openapi.json` and written to docs/openapi.json (`npm run docs`). Loaded only when a document
 * is made (zod-openapi is not loaded at start).
 *
 * A per-connection route is documented twice: at its path (a deployment of one connection) and at
 * `/connections/{connection}<path>` (operationId suffixed `OfConnection`).
 */
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject, type ZodOpenApiResponsesObject } from 'zod-openapi';
import { CONNECTION_PREFIX, errorResponse, type RouteAccess, type RouteSpec } from './route.ts';

/** The document's `info`. */
export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
}

/** The suffix of a per-connection route's operationId under `/connections/{connection}`. */
export const CONNECTION_OPERATION_SUFFIX = 'OfConnection';

const connectionParam = z.object({
  connection: z.string().meta({ description: 'The connection\'s name (config `connections[].name`; docs/operations.md "Many companies").', example: 'acme' }),
});

/** The security requirement of each access (OpenAPI `security`): any one of the listed schemes. */
const SECURITY: Record<RouteAccess, Record<string, string[]>[]> = {
  public: [],
  read: [{ readKey: [] }],
  write: [{ writeKey: [] }],
  console: [{ consoleSession: [] }, { readKey: [] }],
  'console-open': [],
};

/**
 * What every route that changes something may answer besides its own responses: the SQLite mirror
 * file write-locked by another process past the connection's short tries (the daemon's HTTP server
 * answers it, src/daemon/http-server.ts).
 */
const MIRROR_LOCKED = {
  ...errorResponse('The SQLite mirror file is write-locked by another process (a command writing to it): try again after `Retry-After` seconds.'),
  headers: { 'retry-after': 'Seconds to wait (1).' },
};

/** One operation of `spec`, its path parameters extended with `extraPath` (the connection). */
function operation(spec: RouteSpec, operationId: string, extraPath: z.ZodObject | undefined): ZodOpenApiOperationObject {
  const path = extraPath && spec.params ? extraPath.extend(spec.params.shape) : (extraPath ?? spec.params);
  const responses: ZodOpenApiResponsesObject = {};
  const keyed = spec.access === 'read' || spec.access === 'write';
  const declared = { ...spec.responses };
  if (keyed && !declared[401]) declared[401] = errorResponse(`A missing or wrong bearer key (\`WWW-Authenticate: Bearer\`).`);
  if (spec.method !== 'GET' && !declared[503]) declared[503] = MIRROR_LOCKED;
  for (const [status, answer] of Object.entries(declared)) {
    responses[status as `${1 | 2 | 3 | 4 | 5}${string}`] = {
      description: answer.description,
      ...(answer.headers ? { headers: Object.fromEntries(Object.entries(answer.headers).map(([name, description]) => [name, { description, schema: { type: 'string' } }])) } : {}),
      ...(answer.content
        ? { content: Object.fromEntries(Object.entries(answer.content).map(([mediaType, schema]) => [mediaType, schema ? { schema } : {}])) }
        : {}),
    };
  }
  return {
    operationId,
    summary: spec.summary,
    ...(spec.description ? { description: spec.description } : {}),
    tags: [...spec.tags],
    security: SECURITY[spec.access],
    ...(path || spec.query || spec.headers
      ? { requestParams: { ...(path ? { path } : {}), ...(spec.query ? { query: spec.query } : {}), ...(spec.headers ? { header: spec.headers } : {}) } }
      : {}),
    ...(spec.body
      ? { requestBody: { required: spec.body.required, content: { [spec.body.mediaType]: { schema: spec.body.schema } } } }
      : {}),
    responses,
  };
}

/**
 * The OpenAPI 3.1 document of `specs` (module comment). Deterministic: the same specs give the same
 * document, paths in the order given.
 * @throws Error when two operations share an operationId (a declaration mistake)
 */
export function openApiDocument(specs: readonly RouteSpec[], info: OpenApiInfo): Record<string, unknown> {
  const paths: ZodOpenApiPathsObject = {};
  const seen = new Set<string>();
  const add = (path: string, spec: RouteSpec, operationId: string, extraPath?: z.ZodObject) => {
    if (seen.has(operationId)) throw new Error(`operationId ${operationId} is declared twice`);
    seen.add(operationId);
    const item = (paths[path] ??= {});
    (item as Record<string, ZodOpenApiOperationObject>)[spec.method.toLowerCase()] = operation(spec, operationId, extraPath);
  };
  for (const spec of specs) add(spec.path, spec, spec.operationId);
  for (const spec of specs.filter((candidate) => candidate.perConnection)) {
    add(`${CONNECTION_PREFIX}${spec.path}`, spec, `${spec.operationId}${CONNECTION_OPERATION_SUFFIX}`, connectionParam);
  }
  const document = createDocument({
    openapi: '3.1.0',
    info: { ...info },
    paths,
    components: {
      securitySchemes: {
        readKey: { type: 'http', scheme: 'bearer', description: 'config `http.readApiKey` (`BIZOPS_READ_API_KEY`): the changelog, consumers, schemas and the console. Without it those routes are off (404).' },
        writeKey: { type: 'http', scheme: 'bearer', description: 'config `http.writeApiKey` (`BIZOPS_WRITE_API_KEY`): the write API. Without it the write routes are off (404).' },
        consoleSession: { type: 'apiKey', in: 'cookie', name: 'bizops_console', description: 'The operator console\'s session, from `POST /console/sign-in` with the read key.' },
      },
    },
  });
  return document as unknown as Record<string, unknown>;
}
