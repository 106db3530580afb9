/**
 * The list endpoints: one route per simulated stream (streams/: GET /transactions, spec §4.13;
 * GET /employee-onboardings, §4.1; GET /qa-corrective-actions, §4.4; the assumed GET /deals and
 * GET /customers, which follow the list conventions of §1), each from its declaration. Also
 * GET /test-token (§4 general notes; response shape not shown: we return who the token acts as and
 * its scopes).
 */
import { listPage, parseListQuery } from '../list.ts';
import type { TimestampedRecord } from '../records.ts';
import { SIMULATED_STREAMS, type SimulatedStream } from '../streams/index.ts';
import type { HandlerResult, RequestContext, Route } from './types.ts';

/**
 * The handler of one simulated list endpoint: its own parameters (filters) first, then the standard
 * list parameters (spec §1 Pagination), then one page of the stream's records, serialized.
 */
function listHandler(stream: SimulatedStream<TimestampedRecord>): (context: RequestContext) => HandlerResult {
  return (context) => {
    const data = context.company.data;
    const filter = stream.filter?.(context.query, data);
    const query = parseListQuery(context.query, Object.keys(stream.list.sortFields));
    const records = data.streams[stream.name as keyof typeof data.streams] as TimestampedRecord[];
    const page = listPage(records, query, stream.list, filter, data.versions[stream.name as keyof typeof data.versions], context.listFault);
    return { message: stream.message, content: { [stream.itemsKey]: page.items.map((record) => stream.serialize(record, data)), pagination: page.pagination } };
  };
}

/** Every simulated list endpoint (streams/: GET /transactions, /deals, /employee-onboardings, ...), and GET /test-token. */
export const listRoutes: Route[] = [
  ...SIMULATED_STREAMS.map((stream): Route => ({ method: 'GET', path: stream.path, scope: stream.scope, handler: listHandler(stream as unknown as SimulatedStream<TimestampedRecord>) })),
  {
    method: 'GET',
    path: '/test-token',
    scope: null,
    handler: (context) => ({
      message: 'Token is valid',
      content: {
        companyId: context.company.data.id,
        employeeId: context.employee.id,
        employeeName: context.employee.fullname,
        scopes: [...context.scopes],
      },
    }),
  },
];
