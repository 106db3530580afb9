/**
 * Entry point of the `bizops-sync` command (bin/bizops-sync.js imports this file). See program.ts:
 * only the command being run is registered, and it loads its job when it runs.
 */
import { logSettingsFromEnvironment } from '../src/logging/index.ts';
import { startTelemetry } from '../src/telemetry/index.ts';
import { buildProgram } from './program.ts';

// `bizops-sync changes | head` closes our stdout early: that is the reader being done, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

try {
  // BIZOPS_LOG_LEVEL / BIZOPS_LOG_FORMAT: one line and exit 2 for a bad value, whichever command runs (help still shows).
  const asksForHelp = process.argv.length <= 2 || process.argv.slice(2).some((argument) => ['--help', '-h', '--version', '-V', 'help'].includes(argument));
  if (!asksForHelp) logSettingsFromEnvironment();
  const program = await buildProgram(process.argv[2]);
  // Traces over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set (src/telemetry); flushed when the command returns.
  const telemetry = asksForHelp ? null : await startTelemetry();
  try {
    await program.parseAsync(process.argv);
  } finally {
    await telemetry?.shutdown();
  }
} catch (error) {
  // One line, secrets masked, the exit code (also for --help and --version, which commander ends with an error).
  const { reportError } = await import('./report-error.ts');
  process.exitCode = await reportError(error);
}
