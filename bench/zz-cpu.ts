import { backfillCpuOverPlain } from './backfill.ts';
const n = Number(process.argv[2] ?? 20000);
const r = await backfillCpuOverPlain(n, Number(process.argv[3] ?? 1));
console.log(JSON.stringify(r), r.map((x) => (x.cliMs / x.plainMs).toFixed(2)).join(' '));
