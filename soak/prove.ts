/**
 * `npm run soak:prove`: the soak's proof that it can fail. For each planted bug (src/logging/planted-bugs.ts)
 * it runs `npm run soak` with that bug planted, on SQLite, within the CI budget (120 s by default,
 * `--seconds N`), from `--seed S` (default 1), and prints whether the soak failed and after how many
 * seconds. Exit 0 when every planted bug was caught, 1 otherwise.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const PLANTS = ['skip-field', 'one-scan-tombstone', 'unfenced-claim', 'webhook-out-of-order', 'nats-drop-seq-7', 'invent-change', 'changes-cut-brace'] as const;
const RUN = fileURLToPath(new URL('./run.ts', import.meta.url));

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '120' }, seed: { type: 'string', default: '1' }, only: { type: 'string' } } });
const rows: string[] = [];
let missed = 0;
for (const plant of PLANTS) {
  if (values.only && !values.only.split(',').includes(plant)) continue;
  const started = Date.now();
  const child = spawn(process.execPath, [RUN, '--plant', plant, '--seconds', values.seconds!, '--seed', values.seed!, '--backend', 'sqlite', '--no-shrink'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += String(chunk);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exit) => resolve(exit)));
  const after = /first failure after (\d+) s/.exec(output)?.[1];
  const check = /\n {2}\[([a-z-]+)\]/.exec(output)?.[1] ?? '';
  const caught = code === 1 && after !== undefined;
  if (!caught) missed += 1;
  rows.push(`${plant.padEnd(22)} ${caught ? `caught by ${check} after ${after} s` : `NOT caught (exit ${code}) in ${((Date.now() - started) / 1000).toFixed(0)} s`}`);
  console.log(rows[rows.length - 1]);
}
console.log(`\nplanted bugs caught: ${rows.length - missed} of ${rows.length} (budget ${values.seconds} s each, first seed ${values.seed})`);
process.exit(missed === 0 ? 0 : 1);
