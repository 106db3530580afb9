/**
 * Messages that help a person fix what is wrong: a refused token names the setting that holds it
 * and the URL that refused it; a 404 names the whole URL (a wrong base URL shows in it); an error
 * log line carries the error's message and stack; `status` does not show a run still going as
 * zeros; `enqueue --help` shows each kind's fields. Real processes against the simulator.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { BIN, listRequests, runCli, simulator, tempDir, type TempDir, waitFor } from '../helpers.ts';
import { cliEnv } from '../daemon/helpers.ts';
import { ApiUnreachableError, assertApiReachable } from '../../src/client/index.ts';

let dir: TempDir | undefined;
let sim: RunningSimulator | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sim?.close();
  sim = undefined;
  dir?.remove();
  dir = undefined;
});

async function setUp(extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  sim = await simulator({ size: { transactions: 250, deals: 10, onboardings: 3, customers: 5 } });
  dir = tempDir();
  return cliEnv({ BIZOPS_BASE_URL: sim.url, BIZOPS_TOKEN: String(sim.tokens.admin), BIZOPS_DB: dir.file('mirror.db'), BIZOPS_CONFIG: '', BIZOPS_LOG_LEVEL: 'info', ...extra });
}

/** The JSON log lines of a CLI run's stderr. */
function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('messages that help', () => {
  it('a refused token names BIZOPS_TOKEN and the URL that refused it; the error log carries the message and the stack', async () => {
    const env = await setUp({ BIZOPS_TOKEN: 'not-a-token-the-api-knows' });
    const result = await runCli(['backfill', '--stream', 'transactions', '--no-progress'], env);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(
      `transactions: failed (backfill, complete scan), 0 pages, 0 records, 0 changes; error: the API refused BIZOPS_TOKEN (HTTP 401 from ${sim!.url}/api/public/v1/transactions)\n`,
    );
    expect(result.stdout + result.stderr).not.toContain('[redacted]');
    const failed = logLines(result.stderr).find((line) => line.msg === 'run failed; its checkpoint stands');
    const err = failed?.err as Record<string, unknown> | undefined;
    expect(err).toMatchObject({ type: 'AuthenticationError', status: 401, message: `the API refused BIZOPS_TOKEN (HTTP 401 from ${sim!.url}/api/public/v1/transactions)` });
    expect(String(err?.stack)).toMatch(/^AuthenticationError: the API refused BIZOPS_TOKEN[^\n]*\n\s+at /);
    expect(result.stderr).not.toContain('"type":"Object"');
    expect(result.stderr).not.toContain('not-a-token-the-api-knows');
  });

  it('a wrong base URL (every list answering 404) is one line naming the whole URL, exit 2, and status marks nothing', async () => {
    const env = await setUp();
    const wrong = { ...env, BIZOPS_BASE_URL: `${sim!.url}/gateway` };
    const result = await runCli(['sync', '--stream', 'deals', '--no-progress'], wrong);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr.trim()).toBe(
      `bizops-sync: configuration error: BIZOPS_BASE_URL (baseUrl): ${sim!.url}/gateway is not the API's base URL: every stream's list answered 404 (GET ${sim!.url}/gateway/api/public/v1/deals); nothing was marked unsupported`,
    );
    const status = await runCli(['status'], wrong);
    expect(status.stdout).not.toContain('unsupported');
  });

  it('an API at a closed port: sync and the daemon each end with one line naming the address (exit 1), after trying for at most 10 s', async () => {
    const env = await setUp();
    // A port that was just free: nothing listens on it.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const away = { ...env, BIZOPS_BASE_URL: `http://127.0.0.1:${closed}`, BIZOPS_HTTP_PORT: '0' };
    const [sync, daemon] = await Promise.all([runCli(['sync', '--no-progress'], away), runCli(['daemon'], away)]);
    for (const result of [sync, daemon]) {
      expect(result.code, result.stderr).toBe(1);
      const lines = result.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('{'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^bizops-sync: BIZOPS_BASE_URL \\(baseUrl\\): cannot reach the API at http://127\\.0\\.0\\.1:${closed}: connection refused \\(ECONNREFUSED\\); tried for (\\d) s$`));
    }
    // No stream ran: nothing was requested of the simulator, nothing marked.
    expect(sim!.requests).toHaveLength(0);
  });

  it('a host name that does not resolve is named the same way', async () => {
    const error = await assertApiReachable('http://no-such-host.invalid:8080', { windowMs: 300, retryDelayMs: 100 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiUnreachableError);
    expect((error as ApiUnreachableError).message).toMatch(/^BIZOPS_BASE_URL \(baseUrl\): cannot reach the API at http:\/\/no-such-host\.invalid:8080: the host name (does not resolve \(ENOTFOUND\)|could not be resolved \(DNS\) \(EAI_AGAIN\)); tried for 0 s$/);
    // A host that answers at the TCP level is reachable, whatever it answers over HTTP.
    sim = await simulator({ size: { transactions: 1, deals: 1, onboardings: 1 } });
    await expect(assertApiReachable(sim.url, { windowMs: 1_000 })).resolves.toBeUndefined();
  });

  it('status shows a run still going as in progress, not as the zeros of a run that did nothing', async () => {
    const env = await setUp();
    // The second page is held at the server: the backfill is surely still running while status looks.
    sim!.faults.inject({ match: { path: '/transactions', query: { offset: '100' } }, kind: 'latency', ms: 600_000, times: 1 });
    // A 1 s lease, renewed while the page is held, lapses soon after the kill below.
    const backfill = spawn(process.execPath, [BIN, 'backfill', '--stream', 'transactions', '--no-progress'], { env: { ...env, BIZOPS_LEASE_SECONDS: '1' }, stdio: 'ignore' });
    children.push(backfill);
    await waitFor(() => listRequests(sim!, '/transactions').some((request) => request.query.includes('offset=100')), 'the backfill to ask for its second page');
    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    const row = status.stdout.split('\n').find((line) => line.startsWith('transactions '));
    expect(row).toMatch(/backfill\/complete: in progress since \d{4}-\d\d-\d\dT/);
    expect(row).not.toContain('0 req');
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { streams: { stream: string; lastRun: { state: string } }[] };
    expect(json.streams.find((stream) => stream.stream === 'transactions')?.lastRun.state).toBe('running');
    // Killed, it is a run stopped before its end, which the next run resumes.
    backfill.kill('SIGKILL');
    await new Promise((resolve) => backfill.on('exit', resolve));
    const after = await waitFor(async () => {
      const shown = (await runCli(['status'], env)).stdout;
      return shown.includes('stopped before its end') ? shown : undefined;
    }, 'the killed run\'s lease to lapse', 60_000);
    expect(after).toMatch(/transactions .*backfill\/complete: stopped before its end \(started .*; the next run resumes it\)/);
  });

  it('enqueue --help shows each write kind with its fields, required ones starred', async () => {
    const help = await runCli(['enqueue', '--help'], cliEnv());
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/transaction\.create +Write a ledger transaction[^\n]*\n +fields: type\* \(INCOME\|EXPENSE[^)]*\),\s+amount\* \(integer\), description/);
    expect(help.stdout).toMatch(/deal\.close[^\n]*\n +fields: dealId\*, status\* \(WON\|LOST\|OPEN\), reason, markContactAsCustomer \(true\|false\)/);
    expect(help.stdout).toMatch(/timeclock\.clock_in[^\n]*\n +fields: none/);
    expect(help.stdout).toMatch(/domain\.purchase[^\n]*\n +fields: domain\*, expectedPriceMax\* \(integer\)/);
  });
});
