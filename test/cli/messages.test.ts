/**
 * Messages that help a person fix what is wrong: a refused token names the setting that holds it
 * and the URL that refused it; a 404 names the whole URL (a wrong base URL shows in it); an error
 * log line carries the error's message and stack; `status` does not show a run still going as
 * zeros; `enqueue --help` shows each kind's fields. Real processes against the simulator.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { BIN, listRequests, runCli, simulator, tempDir, type TempDir, waitFor } from '../helpers.ts';
import { cliEnv } from '../daemon/helpers.ts';

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
