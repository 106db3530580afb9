/**
 * The container files, kept correct by reading them (no Docker engine runs the tests): the compose
 * file passes a variable only when the user set it (so a mounted configuration file's values
 * apply), forwards what a deployment sets, waits for the simulator under its profile; the images
 * are pinned by version and labelled; the documented ENTRYPOINT is the Dockerfile's; and the
 * image's health check, run for real, tells the daemon from a one-off command.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import packageJson from '../../package.json' with { type: 'json' };
import { tempDir, type TempDir } from '../helpers.ts';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

interface ComposeService {
  image?: string;
  environment?: Record<string, string | null>;
  depends_on?: Record<string, { condition?: string; required?: boolean }>;
  profiles?: string[];
}
const compose = parse(read('docker-compose.yml')) as { services: Record<string, ComposeService> };
const worker = compose.services.worker!;
const dockerfile = read('Dockerfile');

let dir: TempDir | undefined;
let server: Server | undefined;
afterEach(async () => {
  dir?.remove();
  dir = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

describe('docker-compose.yml', () => {
  it("passes a BIZOPS_ variable only when the user set it: no default of its own overrides the mounted file's", () => {
    const environment = worker.environment!;
    for (const [name, value] of Object.entries(environment)) {
      if (!name.startsWith('BIZOPS_') || name === 'BIZOPS_HTTP_HOST' || name === 'BIZOPS_HTTP_PORT') continue;
      // `NAME:` with no value: compose passes the caller's value when set, and nothing otherwise.
      expect(value, name).toBeNull();
    }
    for (const name of ['BIZOPS_SCHEDULE', 'BIZOPS_RATE_LIMIT_PER_MIN', 'BIZOPS_BASE_URL', 'BIZOPS_TOKEN', 'BIZOPS_DB']) expect(environment, name).toHaveProperty(name, null);
    // Forwarded, so that a deployment can set them on the command line as the README's table says.
    for (const name of ['BIZOPS_WRITE_API_KEY', 'BIZOPS_COMPANY_ID', 'BIZOPS_RATE_WINDOW_MS', 'BIZOPS_LOG_LEVEL']) expect(environment, name).toHaveProperty(name, null);
    // The file's own services: its Redis and the mapped port.
    expect(environment).toMatchObject({ REDIS_URL: 'redis://redis:6379', BIZOPS_HTTP_HOST: '0.0.0.0', BIZOPS_HTTP_PORT: '8080' });
  });

  it('the worker waits for the simulator under its profile, and only needs it there', () => {
    expect(compose.services.simulator!.profiles).toEqual(['simulator']);
    expect(worker.depends_on).toMatchObject({ redis: { condition: 'service_healthy' }, simulator: { condition: 'service_healthy', required: false } });
    // The simulator target has a health check for that condition.
    expect(dockerfile).toMatch(/FROM build AS simulator[\s\S]*?HEALTHCHECK[\s\S]*?__admin\/state/);
  });

  it('base images are pinned by version', () => {
    const redisImage = compose.services.redis!.image!;
    expect(redisImage).toMatch(/^redis:\d+\.\d+\.\d+-alpine$/);
    const nodeImage = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1];
    expect(nodeImage).toMatch(/^node:24\.\d+\.\d+-slim$/);
    for (const from of dockerfile.matchAll(/^FROM (\S+)/gm)) expect(['${NODE_IMAGE}', 'build'], from[0]).toContain(from[1]);
  });
});

describe('Dockerfile', () => {
  it('labels the image (OCI), its version the package version', () => {
    const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));
    for (const label of ['title', 'description', 'version', 'revision', 'licenses', 'base.name']) expect(runtime).toContain(`org.opencontainers.image.${label}=`);
    expect(runtime).toContain(`ARG VERSION=${packageJson.version}`);
    expect(runtime).toContain(`org.opencontainers.image.licenses="${packageJson.license}"`);
  });

  it("docs/operations.md names the image's ENTRYPOINT as the Dockerfile has it", () => {
    const entrypoints = [...dockerfile.matchAll(/^ENTRYPOINT (\[.*\])$/gm)].map((match) => JSON.parse(match[1]!) as string[]);
    const runtime = entrypoints.at(-1)!;
    expect(runtime).toContain('bin/bizops-sync.js');
    const operations = read('docs/operations.md');
    expect(operations).toContain(`\`ENTRYPOINT\` is \`${runtime.join(' ')}\``);
  });
});

describe('the image health check (bin/container-health.js)', () => {
  /**
   * Runs the check as the HEALTHCHECK does, PID 1's command line given as `words`; resolves to its
   * exit code (asynchronously: the /healthz server below runs in this process).
   */
  function check(words: string[], port: number): Promise<number | null> {
    dir ??= tempDir();
    writeFileSync(dir.file('cmdline'), `${words.join('\0')}\0`);
    const health = new URL('../../bin/container-health.js', import.meta.url).pathname;
    const child = spawn(process.execPath, [health, dir.file('cmdline')], { env: { ...process.env, BIZOPS_HTTP_PORT: String(port) }, stdio: 'ignore' });
    return new Promise((resolve) => child.on('close', resolve));
  }
  const entry = ['/usr/bin/tini', '--', 'node', '--max-semi-space-size=16', 'bin/bizops-sync.js'];

  async function healthz(status: number): Promise<number> {
    server = createServer((request, response) => {
      response.statusCode = request.url === '/healthz' ? status : 404;
      response.end();
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it('a one-off command has no port and is healthy; the daemon is as healthy as its /healthz', async () => {
    // Nothing listens on this port: a one-off backfill or status is healthy all the same.
    const closed = await healthz(200);
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    for (const command of ['backfill', 'status', 'sync']) expect(await check([...entry, command, '--stream', 'deals'], closed), command).toBe(0);
    expect(await check([...entry, 'daemon'], closed)).toBe(1);
    expect(await check([...entry, 'daemon'], await healthz(200))).toBe(0);
    await new Promise((resolve) => server!.close(resolve));
    server = undefined;
    expect(await check([...entry, 'daemon'], await healthz(503))).toBe(1);
    // docker run --init puts docker-init before tini; the daemon is still found.
    expect(await check(['/sbin/docker-init', '--', ...entry, 'daemon'], (server!.address() as AddressInfo).port)).toBe(1);
  });
});
