/** `bizops-sync simulate`: runs the local API simulator (@bizops-sync/simulator) until Ctrl-C (exit 130; SIGTERM: 0). */
import type { Command } from 'commander';
import type { SimulatorOptions } from '@bizops-sync/simulator';
import { exitCodeForSignal, integerOption, requireSimulatorInstalled, shutdownOnSignals } from '../shared.ts';

export function registerSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description('run the local simulator of the Business Operations Public API (every endpoint of the spec, plus GET /deals and GET /customers)')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', integerOption('--port'), 4010)
    .option('--seed <n>', 'seed of the generated data (same seed, same data)', integerOption('--seed'), 1)
    .option('--transactions <n>', 'transactions to generate', integerOption('--transactions'), 2000)
    .option('--deals <n>', 'deals to generate', integerOption('--deals'), 300)
    .option('--onboardings <n>', 'onboardings to generate', integerOption('--onboardings'), 40)
    .option('--rate-limit <n>', 'requests per window per company (spec §8 default 60 per minute); 0 turns the limit off', integerOption('--rate-limit'), 60)
    .option('--window-ms <ms>', 'rate-limit window length in ms', integerOption('--window-ms', 1), 60_000)
    .option('--churn-ms <ms>', 'change some records every this many ms (0: no churn)', integerOption('--churn-ms'), 0)
    .option('--churn-per-tick <n>', 'records changed per churn tick', integerOption('--churn-per-tick', 1), 3)
    .option('--companies <n>', 'extra companies C1..CN beyond A and B, each with its own data, admin token sim-company-<k>-token and rate budget', integerOption('--companies'), 0)
    .option('--company-transactions <n>', 'transactions per extra company (default: a tenth of --transactions)', integerOption('--company-transactions'))
    .option('--company-deals <n>', 'deals per extra company (default: a tenth of --deals)', integerOption('--company-deals'))
    .option('--company-onboardings <n>', 'onboardings per extra company (default: a tenth of --onboardings)', integerOption('--company-onboardings'))
    .action(async (options: {
      host: string;
      port: number;
      seed: number;
      transactions: number;
      deals: number;
      onboardings: number;
      rateLimit: number;
      windowMs: number;
      churnMs: number;
      churnPerTick: number;
      companies: number;
      companyTransactions?: number;
      companyDeals?: number;
      companyOnboardings?: number;
    }) => {
      // Imported when run: the production image has no simulator, and every other command works without it.
      requireSimulatorInstalled('simulate');
      const { startSimulator } = await import('@bizops-sync/simulator');
      const simulatorOptions: SimulatorOptions = {
        host: options.host,
        port: options.port,
        seed: options.seed,
        size: { transactions: options.transactions, deals: options.deals, onboardings: options.onboardings },
        rateLimit: options.rateLimit === 0 ? false : { limit: options.rateLimit, windowMs: options.windowMs },
        churn: options.churnMs === 0 ? false : { intervalMs: options.churnMs, perTick: options.churnPerTick },
        companies: options.companies,
        extraCompanySizes: { transactions: options.companyTransactions, deals: options.companyDeals, onboardings: options.companyOnboardings },
      };
      const simulator = await startSimulator(simulatorOptions);
      // Listening for signals before the first line: a Ctrl-C sent as soon as it is read still ends with 130.
      const shutdown = shutdownOnSignals();
      process.stdout.write(
        [
          `simulator listening on ${simulator.url} (API at ${simulator.url}/api/public/v1, admin at ${simulator.url}/__admin/state)`,
          'tokens:',
          ...Object.entries(simulator.tokens).map(([name, token]) => `  ${name.padEnd(14)} ${String(token)}`),
          ...(simulator.companies.length === 0
            ? []
            : [`  companies C1..C${simulator.companies.length}: company k's admin token is sim-company-<k>-token (the admin surface takes ?company=C<k>; per-company counts: ${simulator.url}/__admin/request-counts)`]),
          `try: BIZOPS_BASE_URL=${simulator.url} BIZOPS_TOKEN=${String(simulator.tokens.admin)} npx bizops-sync backfill`,
          '',
        ].join('\n'),
      );
      if (!shutdown.signal.aborted) await new Promise<void>((resolve) => shutdown.signal.addEventListener('abort', () => resolve(), { once: true }));
      shutdown.dispose();
      await simulator.close();
      // Like every command: 130 after Ctrl-C, 0 after SIGTERM.
      process.exitCode = exitCodeForSignal(shutdown.received()) ?? 0;
    });
}
