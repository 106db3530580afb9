/**
 * `npm run soak`: the seeded, randomized fault soak with an oracle (soak/README.md).
 *
 *   npm run soak                              schedules for about 2 minutes, both back ends, a new seed (printed)
 *   npm run soak -- --minutes 60              the long soak
 *   npm run soak -- --seed 123 [--backend postgres]   replays schedule 123 (one schedule per back end)
 *   npm run soak -- --seed 123 --seconds 300  a run whose first schedule is 123
 *   npm run soak -- --schedule failing.json   replays a printed (shrunk) schedule
 *   npm run soak -- --plant skip-field        with a planted bug (soak/README.md "Proof it can fail")
 *
 * Exit 0 when every schedule held, 1 when one failed (its seed and shrunk schedule printed), 2 for
 * bad usage.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runSchedule, type ScheduleResult } from './harness.ts';
import { freshSeed } from './random.ts';
import { describeSchedule, generateSchedule, type Backend, type Schedule } from './schedule.ts';
import { killAllChildren } from './processes.ts';
import { startServices, type SoakServices } from './services.ts';
import { shrinkSchedule } from './shrink.ts';

const usage = (message: string): never => {
  console.error(`soak: ${message}`);
  process.exit(2);
};

const HELP = `Usage: npm run soak -- [options]

The seeded, randomized fault soak: schedules of churn and faults run against the real processes,
judged by an oracle (docs/soak.md). Exit 0 when every schedule held, 1 when one failed (its seed
and shrunk schedule printed), 2 for bad usage.

Options:
  --seconds N, --minutes N  the budget (default 2 minutes)
  --seed S                  alone: replay schedule S on each back end; with a budget: the run's first seed
  --backend B               sqlite, postgres or both (default both, in turn)
  --schedule FILE           replay a printed (shrunk) schedule
  --steps N                 steps drawn per schedule (default 12 to 24)
  --plant NAME              run with a planted bug (soak/README.md "Proof it can fail")
  --shrink-seconds N        time for shrinking a failing schedule (default 240)
  --no-shrink               print a failing schedule as it is
  --keep-going              go on after a failure
  -h, --help                this text
`;

let parsed;
try {
  parsed = parseArgs({
    options: {
      seed: { type: 'string' },
      minutes: { type: 'string' },
      seconds: { type: 'string' },
      backend: { type: 'string', default: 'both' },
      schedule: { type: 'string' },
      plant: { type: 'string' },
      steps: { type: 'string' },
      'shrink-seconds': { type: 'string' },
      'no-shrink': { type: 'boolean', default: false },
      'keep-going': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: false,
  });
} catch (error) {
  usage(`${(error as Error).message} (npm run soak -- --help)`);
}
const { values } = parsed!;
if (values.help) {
  console.log(HELP);
  process.exit(0);
}

const number = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) usage(`--${name} must be a non-negative number, got "${text}"`);
  return value;
};
if (!['sqlite', 'postgres', 'both'].includes(values.backend!)) usage(`--backend must be sqlite, postgres or both, got "${values.backend}"`);
const budgetSeconds = number('seconds', values.seconds) ?? (number('minutes', values.minutes) ?? 2) * 60;
const steps = number('steps', values.steps);
const shrinkSeconds = number('shrink-seconds', values['shrink-seconds']) ?? 240;
const backends: Backend[] = values.backend === 'both' ? ['sqlite', 'postgres'] : [values.backend as Backend];
// --seed alone replays that schedule; with --seconds or --minutes it is the first seed of a run.
const replay = values.schedule !== undefined || (values.seed !== undefined && values.seconds === undefined && values.minutes === undefined);
const baseSeed = values.seed !== undefined ? (number('seed', values.seed) as number) : freshSeed();
const plant = values.plant;

const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

// A run's back ends take turns from one its seed chooses, so over many CI runs each goes first as often.
const firstBackend = replay ? 0 : baseSeed % backends.length;

/** The schedules of this run, in order: one replayed, or a new seed per schedule, back ends in turn. */
function nextSchedule(index: number): Schedule | undefined {
  if (values.schedule) return index === 0 ? (JSON.parse(readFileSync(values.schedule, 'utf8')) as Schedule) : undefined;
  if (replay && index >= backends.length) return undefined;
  const seed = replay ? baseSeed : (baseSeed + index * 7919) % 2 ** 31;
  return generateSchedule(seed, backends[(index + firstBackend) % backends.length]!, steps);
}

const started = Date.now();
const deadline = started + budgetSeconds * 1000;
log(`soak: seed ${baseSeed}${replay ? ' (replay)' : ''}, budget ${budgetSeconds} s, back ends ${backends.join(', ')}${plant ? `, planted bug ${plant}` : ''}`);
// Stopped from outside (Ctrl-C, a CI timeout): no daemon, worker, Redis or PostgreSQL of ours is left behind.
const running: { services?: SoakServices } = {};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllChildren();
    const exit = () => process.exit(signal === 'SIGINT' ? 130 : 143);
    setTimeout(exit, 10_000).unref();
    void (running.services?.close() ?? Promise.resolve()).catch(() => undefined).finally(exit);
  });
}
const services = await startServices();
running.services = services;
const totals = { schedules: 0, faults: {} as Record<string, number>, changes: {} as Record<string, number>, records: 0, events: 0, writes: 0, failed: 0 };
let exitCode = 0;
let firstFailureSeconds: number | undefined;
const add = (into: Record<string, number>, from: Record<string, number>) => {
  for (const [key, value] of Object.entries(from)) into[key] = (into[key] ?? 0) + value;
};

try {
  for (let index = 0; ; index += 1) {
    const schedule = nextSchedule(index);
    if (!schedule) break;
    // A schedule takes 20 to 60 s: start one only when the budget leaves room for it (replays always
    // run), except that every back end of the run gets one schedule however long the first took.
    if (!replay && index >= backends.length && Date.now() + 25_000 > deadline) break;
    log(`schedule ${index + 1}: seed ${schedule.seed} on ${schedule.backend}, ${schedule.steps.length} steps`);
    const result: ScheduleResult = await runSchedule(schedule, { services, log, ...(plant ? { plant } : {}), shouldStop: () => !replay && Date.now() > deadline + 60_000 });
    totals.schedules += 1;
    add(totals.faults, result.faults);
    add(totals.changes, result.changes);
    totals.records += result.recordsChecked;
    totals.events += result.eventsChecked;
    totals.writes += result.writes;
    log(`schedule ${index + 1}: ${result.failures.length === 0 ? 'held' : `FAILED (${result.failures.length})`} in ${result.seconds.toFixed(1)} s; ${result.recordsChecked} records and ${result.eventsChecked} events checked, ${result.writes} writes, ${Object.values(result.faults).reduce((sum, value) => sum + value, 0)} faults`);
    if (result.failures.length === 0) continue;
    exitCode = 1;
    totals.failed += 1;
    firstFailureSeconds ??= (Date.now() - started) / 1000;
    console.log(`\nFAILED: schedule seed ${schedule.seed} on ${schedule.backend}${plant ? ` (planted bug ${plant})` : ''}`);
    for (const failure of result.failures.slice(0, 12)) console.log(`  [${failure.check}]${failure.step ? ` after step ${failure.step}` : ''} ${failure.message}`);
    console.log(describeSchedule(schedule));
    if (result.logs.length > 0) console.log(result.logs.join('\n'));
    let shrunk = schedule;
    if (!values['no-shrink'] && schedule.steps.length > 1) {
      const check = result.failures[0]!.check;
      log(`shrinking (at most ${shrinkSeconds} s): keeping schedules that still fail ${check}`);
      const outcome = await shrinkSchedule(schedule, check, (candidate) => runSchedule(candidate, { services, log, ...(plant ? { plant } : {}) }), Date.now() + shrinkSeconds * 1000, log);
      shrunk = outcome.schedule;
      console.log(`\nshrunk in ${outcome.runs} runs to ${shrunk.steps.length} of ${schedule.steps.length} steps:`);
      console.log(describeSchedule(shrunk));
    }
    mkdirSync('soak-failures', { recursive: true });
    const file = join('soak-failures', `seed-${schedule.seed}-${schedule.backend}.json`);
    writeFileSync(file, `${JSON.stringify(shrunk, null, 2)}\n`);
    console.log(`\nreplay: npm run soak -- --seed ${schedule.seed} --backend ${schedule.backend}${plant ? ` --plant ${plant}` : ''}   (the shrunk schedule: npm run soak -- --schedule ${file})`);
    if (!values['keep-going']) break;
  }
} finally {
  await services.close().catch(() => undefined);
}

const minutes = (Date.now() - started) / 60_000;
const faultTotal = Object.values(totals.faults).reduce((sum, value) => sum + value, 0);
console.log(`\nsoak summary (seed ${baseSeed}): ${totals.schedules} schedules in ${minutes.toFixed(1)} min (${(totals.schedules / minutes).toFixed(2)} per minute), ${totals.failed} failed`);
console.log(`  faults injected: ${faultTotal} (${(faultTotal / minutes).toFixed(1)} per minute)`);
for (const [kind, count] of Object.entries(totals.faults).sort(([a], [b]) => a.localeCompare(b))) console.log(`    ${kind.padEnd(36)} ${String(count).padStart(5)}  ${(count / minutes).toFixed(2)}/min`);
console.log(`  truth changes: ${Object.values(totals.changes).reduce((sum, value) => sum + value, 0)}; writes acknowledged: ${totals.writes}`);
console.log(`  records checked: ${totals.records}; events checked: ${totals.events}`);
if (firstFailureSeconds !== undefined) console.log(`  first failure after ${firstFailureSeconds.toFixed(0)} s`);
process.exit(exitCode);
