import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, waitFor } from '../helpers.ts';

let child: ChildProcess | undefined;
afterEach(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  child = undefined;
});

describe('bizops-sync simulate --companies', { timeout: 60_000 }, () => {
  it('serves N extra companies from one server, each with its token, sizes and own rate budget', async () => {
    child = spawn(process.execPath, [BIN, 'simulate', '--port', '0', '--companies', '2', '--company-transactions', '7', '--rate-limit', '2', '--window-ms', '600000'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    let stdout = '';
    child.stdout?.on('data', (chunk) => (stdout += String(chunk)));
    const url = await waitFor(() => /simulator listening on (http:\/\/\S+)/.exec(stdout)?.[1], 'the simulator to print its URL', 30_000);
    expect(stdout).toContain('companies C1..C2');
    expect(stdout).not.toContain('sim-company-1-token'); // one summary line, not one per company

    const get = (path: string, token: string) => fetch(`${url}/api/public/v1${path}`, { headers: { Authorization: `Bearer ${token}` } });
    const two = await get('/transactions?limit=100', 'sim-company-2-token');
    const body = (await two.json()) as { content: { pagination: { total: number } } };
    expect(body.content.pagination.total).toBe(7);
    expect((await get('/transactions?limit=1', 'sim-company-1-token')).status).toBe(200);
    expect((await get('/transactions?limit=1', 'sim-company-1-token')).status).toBe(200);
    expect((await get('/transactions?limit=1', 'sim-company-1-token')).status).toBe(429);
    // Company 2 spent one of its two; company 1's exhaustion leaves it alone.
    expect((await get('/transactions?limit=1', 'sim-company-2-token')).status).toBe(200);

    const counts = (await (await fetch(`${url}/__admin/request-counts`)).json()) as { companies: Record<string, { requests: number; rateLimited: number }> };
    expect(counts.companies.C1).toMatchObject({ requests: 3, rateLimited: 1 });
    expect(counts.companies.C2).toMatchObject({ requests: 2, rateLimited: 0 });
  });
});
