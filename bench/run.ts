/**
 * `npm run bench`: every benchmark under bench/, one after another, each printing its figures as
 * ratios against the limit it chases. `npm run bench -- backfill webhooks` runs only those.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BENCHMARKS = ['backfill', 'budget', 'changelog', 'pull', 'memory', 'unstable-ties', 'record-clock', 'verify', 'webhooks', 'retention', 'latency', 'writes', 'write-faults', 'companies', 'startup', 'startup-failures', 'postgres', 'replicas', 'sinks'] as const;

const wanted = process.argv.slice(2);
for (const name of BENCHMARKS) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  if (!existsSync(file)) {
    console.log(`\n## ${name}: not present`);
    continue;
  }
  const module = (await import(file)) as { run(): Promise<Record<string, number | string>> };
  const started = performance.now();
  console.log(`\n## ${name}`);
  try {
    const figures = await module.run();
    for (const [key, value] of Object.entries(figures)) console.log(`${key.padEnd(44)} ${String(value)}`);
    console.log(`${'(benchmark took, s)'.padEnd(44)} ${((performance.now() - started) / 1000).toFixed(1)}`);
  } catch (error) {
    console.log(`failed: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
