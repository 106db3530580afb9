/**
 * Operational events in the daemon (the real `bizops-sync daemon` process against the simulator):
 * a stream whose runs fail gets one `stream.failing` event, one `stream.stale` once it went its
 * threshold without a success, one `stream.recovered` at its next success, however many runs
 * happened meanwhile; GET /changes and the webhooks carry them, /metrics shows the condition. And
 * the shipped alert rules and dashboard: `promtool check rules` and `promtool test rules` pass, and
 * every metric they name is one the daemon's /metrics exposes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { RunningSimulator } from '@bizops-sync/simulator';
import { readStatus } from '../../jobs/status.ts';
import { newWebhookSecret, parsePrometheusText, sampleValue, spawnDaemon, cliEnv, terminate, WebhookReceiver, type DaemonProcess } from './helpers.ts';
import { simulator, statusOutput, tempDir, type TempDir, waitFor } from '../helpers.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const ALERTS = `${ROOT}deploy/prometheus/alerts.yml`;
const ALERT_TESTS = `${ROOT}deploy/prometheus/alerts.test.yml`;
const DASHBOARD = `${ROOT}deploy/grafana/bizops-sync.json`;
const KEY = 'read-key-0123456789abcdef';
const CONDITION_TYPES = 'stream.failing,stream.stale,stream.recovered,stream.unsupported';

let sim: RunningSimulator | undefined;
let dir: TempDir | undefined;
const daemons: DaemonProcess[] = [];
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0)) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
  for (const receiver of receivers.splice(0)) await receiver.close();
  await sim?.close();
  dir?.remove();
  sim = dir = undefined;
});

/** promtool: Debian's package `prometheus` (.ci/run installs it). */
function promtool(): string {
  for (const candidate of ['/usr/bin/promtool', '/usr/local/bin/promtool']) if (existsSync(candidate)) return candidate;
  throw new Error('promtool is missing: install Debian\'s package `prometheus` (apt-get install --no-install-recommends prometheus), as .ci/run does');
}

/** Every `bizops_*` metric name in a PromQL expression. */
function metricNames(expression: string): string[] {
  return [...expression.matchAll(/\b(bizops_[a-z0-9_]+)/g)].map((match) => match[1]!);
}

/** The metric families /metrics declares (`# TYPE`), histograms also under their `_bucket`, `_sum`, `_count` series. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of parsePrometheusText(text).types) {
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

interface ChangesPage {
  events: { type: string; data: { stream: string; record: { condition: string; previous: string } } }[];
}

async function conditionEvents(url: string): Promise<ChangesPage['events']> {
  const response = await fetch(`${url}/changes?after=0&limit=1000&types=${CONDITION_TYPES}`, { headers: { authorization: `Bearer ${KEY}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as ChangesPage).events;
}

describe('operational events in the daemon', () => {
  it('failing, stale, recovered: once each over many runs, in GET /changes, the webhooks and /metrics; the alert rules and the dashboard name only exposed metrics', async () => {
    sim = await simulator({ size: { transactions: 4, deals: 3, onboardings: 2 } });
    dir = tempDir();
    const hooks = await new WebhookReceiver().start();
    receivers.push(hooks);
    const dbPath = dir.file('mirror.db');
    const env = cliEnv({
        BIZOPS_BASE_URL: sim.url,
        BIZOPS_TOKEN: String(sim.tokens.admin),
        BIZOPS_DB: dbPath,
        BIZOPS_HTTP_PORT: '0',
        BIZOPS_SCHEDULE: '*/1 * * * * *',
        BIZOPS_RATE_LIMIT_PER_MIN: '100000',
        BIZOPS_READ_API_KEY: KEY,
        BIZOPS_WEBHOOK_URL: hooks.url,
        BIZOPS_WEBHOOK_SECRET: newWebhookSecret(),
        BIZOPS_FAILING_AFTER_RUNS: '2',
        BIZOPS_STALE_AFTER_SCHEDULES: '6',
        BIZOPS_STALE_MINIMUM_SECONDS: '0',
        // Every tick polls (adaptive polling would add its rest to the threshold: test/sync/stream-conditions.test.ts).
        BIZOPS_MAX_POLL_FACTOR: '1',
        BIZOPS_LOG_LEVEL: 'info',
    });
    const daemon = spawnDaemon(env);
    daemons.push(daemon);
    const url = await daemon.url;
    await waitFor(async () => (await readStatus(dbPath)).streams.every((stream) => stream.lastRun.succeededAt !== null), 'every stream to succeed once');

    // The transactions list answers 404 (the others answer: a failing stream, not a wrong base URL).
    sim.faults.inject({ match: { path: '/transactions' }, kind: 'status', status: 404, body: { message: 'Not found' }, times: 100_000 });
    await waitFor(async () => (await conditionEvents(url)).some((event) => event.type === 'stream.failing'), 'stream.failing');
    await waitFor(async () => (await conditionEvents(url)).some((event) => event.type === 'stream.stale'), 'stream.stale (6 s without a success)', 30_000);
    const metrics = parsePrometheusText(await (await fetch(`${url}/metrics`)).text()).samples;
    expect(sampleValue(metrics, 'bizops_stream_condition', { stream: 'transactions', condition: 'stale' })).toBe(1);
    expect(sampleValue(metrics, 'bizops_stream_condition', { stream: 'transactions', condition: 'ok' })).toBe(0);
    expect(sampleValue(metrics, 'bizops_stream_condition', { stream: 'deals', condition: 'ok' })).toBe(1);
    expect(sampleValue(metrics, 'bizops_stream_consecutive_failures', { stream: 'transactions' })).toBeGreaterThanOrEqual(2);
    expect(sampleValue(metrics, 'bizops_stream_stale_after_seconds', { stream: 'transactions' })).toBe(6);
    expect(sampleValue(metrics, 'bizops_stream_condition_events_total', { stream: 'transactions', type: 'stream.failing' })).toBe(1);
    expect(sampleValue(metrics, 'bizops_stream_condition_events_total', { stream: 'transactions', type: 'stream.stale' })).toBe(1);
    // status says so too (its job and text, in this process).
    expect(await statusOutput(dbPath)).toMatch(/WARNING: transactions: STALE since \d{4}-\d\d-\d\dT\S+ \(\d+ failed run\(s\) in a row; last success \d{4}-/);

    sim.faults.clear();
    await waitFor(async () => (await conditionEvents(url)).some((event) => event.type === 'stream.recovered'), 'stream.recovered');
    // A few more successful runs add nothing.
    const runsBefore = (await readStatus(dbPath)).streams.find((stream) => stream.stream === 'transactions')!.lastRun.succeededAt;
    await waitFor(async () => (await readStatus(dbPath)).streams.find((stream) => stream.stream === 'transactions')!.lastRun.succeededAt !== runsBefore, 'another successful run');
    const events = await conditionEvents(url);
    expect(events.map((event) => [event.type, event.data.stream, event.data.record.previous, event.data.record.condition])).toEqual([
      ['stream.failing', 'transactions', 'ok', 'failing'],
      ['stream.stale', 'transactions', 'failing', 'stale'],
      ['stream.recovered', 'transactions', 'stale', 'ok'],
    ]);
    // The webhooks carry them like any event.
    await waitFor(() => hooks.received.filter((request) => /"type":"stream\.(failing|stale|recovered)"/.test(request.body)).length >= 3, 'the three events delivered');
    const delivered = hooks.received.map((request) => (JSON.parse(request.body) as { type: string }).type).filter((type) => type.startsWith('stream.') && type !== 'stream.mass_deletion_held');
    expect(delivered).toEqual(['stream.failing', 'stream.stale', 'stream.recovered']);

    // The shipped rules and dashboard name only metrics this daemon exposes.
    const exposed = exposedNames(await (await fetch(`${url}/metrics`)).text());
    const rules = (parseYaml(readFileSync(ALERTS, 'utf8')) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap((group) => group.rules);
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) for (const name of metricNames(rule.expr)) expect(exposed.has(name), `${rule.alert}: ${name} is not in /metrics`).toBe(true);
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const expressions = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })));
    expect(expressions.length).toBeGreaterThan(10);
    for (const { panel, expr } of expressions) {
      expect(metricNames(expr).length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of metricNames(expr)) expect(exposed.has(name), `dashboard panel "${panel}": ${name} is not in /metrics`).toBe(true);
    }
    expect((await terminate(daemon)).code).toBe(0);
  });

  it('promtool checks the alert rules and runs their unit tests', () => {
    const tool = promtool();
    expect(execFileSync(tool, ['check', 'rules', ALERTS], { encoding: 'utf8' })).toMatch(/SUCCESS: \d+ rules found/);
    expect(execFileSync(tool, ['test', 'rules', ALERT_TESTS], { encoding: 'utf8' })).toMatch(/SUCCESS/);
  });
});
