/**
 * Benchmark: memory flat in N, both ratios in one run.
 *
 * 1. Peak RSS (the kernel's maxrss, via /usr/bin/time) of `bizops-sync backfill --stream
 *    transactions` in a child process at 1,000,000 records over that at 100,000 (bench/backfill.ts
 *    `backfillThroughCli`: the simulator in this process at 600 requests per 1 s window). A complete
 *    scan keeps its latest 20,000 ids in memory, the mirror's scan marks the rest (docs/sync.md
 *    "Scan memory"), and the command lets V8's old generation grow to 1.5 times its live size
 *    before a full collection (bin/bizops-sync.js; docs/operations.md "Memory"). Goal <= 1.2 (it was
 *    1.98 with every id held twice, then 1.18-1.26 with V8's own growth factor).
 * 2. CPU time (user + system) of `bizops-sync changes --since 0` over 1,000,000 created events, over
 *    that of a plain iterate-and-print reader (bench/plain-changes-reader.ts) on the same mirror
 *    (bench/changelog.ts `buildMirror`). Goal <= 1.3 (it was 2.26: every created record expanded
 *    into `{ old: null, new }` per field).
 *
 * Each figure is min / median / max of `BENCH_MEMORY_RUNS` runs (default 1: a 1M backfill takes 2 to
 * 5 minutes on a shared 2-CPU machine). `BENCH_MEMORY_SMALL` / `BENCH_MEMORY_LARGE` override
 * 100000 / 1000000. Run alone: `node bench/memory.ts` (prints JSON).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { backfillThroughCli } from './backfill.ts';
import { buildMirror, readBoth } from './changelog.ts';
import { machineLoad, repeat, spread } from './runs.ts';

export async function run(): Promise<Record<string, number | string>> {
  const runs = Number(process.env.BENCH_MEMORY_RUNS ?? 1);
  const small = Number(process.env.BENCH_MEMORY_SMALL ?? 100_000);
  const large = Number(process.env.BENCH_MEMORY_LARGE ?? 1_000_000);
  const loadAtStart = machineLoad();
  const figures: Record<string, number | string> = {};

  const smallRuns = await repeat(runs, () => backfillThroughCli(small));
  const largeRuns = await repeat(runs, () => backfillThroughCli(large));
  const smallMedian = [...smallRuns.map((r) => r.peakRssMb)].sort((a, b) => a - b)[Math.floor((runs - 1) / 2)]!;
  figures[`backfill peak RSS at ${large} / at ${small} (goal <= 1.2)`] = spread(largeRuns.map((r) => r.peakRssMb / smallMedian));
  figures[`backfill peak RSS, MB (${small}; ${large})`] = `${spread(smallRuns.map((r) => r.peakRssMb), 1)}; ${spread(largeRuns.map((r) => r.peakRssMb), 1)}`;
  figures[`backfill wall, s (${small}; ${large})`] = `${spread(smallRuns.map((r) => r.wallMs / 1000), 1)}; ${spread(largeRuns.map((r) => r.wallMs / 1000), 1)}`;

  const dir = mkdtempSync(join(tmpdir(), 'bizops-bench-memory-'));
  try {
    const path = join(dir, 'mirror.db');
    await buildMirror(path, large);
    const reads = await repeat(runs, (round) => readBoth(path, round));
    figures[`changes --since 0 over ${large}: CPU / plain reader (goal <= 1.3)`] = spread(reads.map((r) => r.cli.cpuMs / r.plain.cpuMs));
    figures['changes --since 0 CPU, s (changes; plain)'] = `${spread(reads.map((r) => r.cli.cpuMs / 1000), 1)}; ${spread(reads.map((r) => r.plain.cpuMs / 1000), 1)}`;
    figures['changes --since 0 peak RSS / plain reader'] = spread(reads.map((r) => r.cli.peakRssMb / r.plain.peakRssMb));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  figures.machine = `${loadAtStart} at start, ${machineLoad()} at end`;
  return figures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(await run(), null, 2));
}
