import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEndpointConfig } from '../../src/config/schema.ts';
import { WebhookDispatcher } from '../../src/notify/webhooks/dispatcher.ts';
import { loadEndpoint } from '../../src/notify/delivery/endpoint-store.ts';
import { insertChanges, newSecret, Receiver, seqOf, tempMirror, type TempMirror } from './helpers.ts';
import { fixtureEnv, waitFor } from '../helpers.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/run-dispatcher.ts', import.meta.url));

let mirror: TempMirror;
let target: Receiver;
const children: ChildProcess[] = [];

beforeEach(async () => {
  mirror = await tempMirror();
  target = await new Receiver().start();
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await target.close();
  await mirror.cleanup();
});

/** Starts the dispatcher in a child process and waits until it runs. */
async function startDispatcherProcess(endpoints: WebhookEndpointConfig[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, [FIXTURE], {
    env: fixtureEnv({ BIZOPS_TEST_DISPATCHER: JSON.stringify({ dbPath: mirror.path, endpoints, pollMs: 20, scheduleMs: [0, 20, 40] }) }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('started')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`dispatcher process exited early with ${String(code)}`)));
  });
  return child;
}

describe('WebhookDispatcher after a crash', () => {
  it('SIGKILL mid-delivery then restart: every event delivered at least once, the one in flight and those after it again with the same webhook-id', async () => {
    const config: WebhookEndpointConfig = { name: 'crm', url: target.url, secret: newSecret(), events: ['*'] };
    let hangOnSeq: number | null = 6;
    target.handler = (request) => (seqOf(request) === hangOnSeq ? 'handled' : undefined); // event 6 is left unanswered

    const first = await startDispatcherProcess([config]);
    // Written by this process, picked up by the child's poll (no notify across processes).
    const events = await insertChanges(mirror.connection, 10);
    // Ten records: all go out at once; the cursor stops before event 6, which hangs.
    await waitFor(async () => target.requests.length === 10 && (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 5, 'every event sent, the cursor at 5');
    const killed = new Promise((resolve) => first.once('exit', resolve));
    first.kill('SIGKILL');
    await killed;
    expect((await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq).toBe(5);

    hangOnSeq = null;
    await startDispatcherProcess([config]);
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 10, 'the cursor at 10 after restart');

    // After the restart everything after the cursor goes again: the hung event 6 and 7 to 10, delivered before the kill.
    const ids = target.ids;
    expect([...new Set(ids)].sort()).toEqual(events.map((e) => e.eventId).sort());
    expect(ids.filter((id) => id === events[5]!.eventId)).toHaveLength(2);
    expect(ids).toHaveLength(15);
    const seqs = target.requests.map(seqOf).sort((a, b) => a - b);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10]);
    const verifier = new Webhook(config.secret);
    for (const request of target.requests) expect(() => verifier.verify(request.body, request.headers as Record<string, string>)).not.toThrow();
  });

  it('a dispatcher whose database connection is closed without stop() is replaced by a new one that resumes at the cursor', async () => {
    const config: WebhookEndpointConfig = { name: 'crm', url: target.url, secret: newSecret(), events: ['*'] };
    let holdEventThree = true;
    let release: (() => void) | null = null;
    target.handler = (request, response) => {
      if (!holdEventThree || seqOf(request) !== 3) return;
      release = () => void response.writeHead(204).end();
      return 'handled';
    };
    const crashed = (await mirror.connect());
    const first = new WebhookDispatcher({ connection: crashed, endpoints: [config], pollMs: 20, scheduleMs: [0, 20], jitterRatio: 0 });
    await first.start();
    const events = await insertChanges(mirror.connection, 5);
    await waitFor(async () => release !== null && target.requests.length === 5 && (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 2, 'event 3 in flight, the others delivered');
    await crashed.close(); // the process "dies": the answer to event 3 can no longer be recorded
    holdEventThree = false;
    release!();

    const second = new WebhookDispatcher({ connection: (await mirror.connect()), endpoints: [config], pollMs: 20, scheduleMs: [0, 20], jitterRatio: 0 });
    await second.start();
    await waitFor(async () => (await loadEndpoint(mirror.connection, 'crm'))?.deliveredSeq === 5, 'the cursor at 5');
    await second.stop();
    await first.stop();
    // Resumed at the cursor (2): event 3 again, and 4 and 5 delivered after it.
    expect(target.requests.map(seqOf).sort((a, b) => a - b)).toEqual([1, 2, 3, 3, 4, 4, 5, 5]);
    expect([...new Set(target.ids)].sort()).toEqual(events.map((e) => e.eventId).sort());
  });
});
