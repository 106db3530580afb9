/**
 * Entry point of the `bizops-sync` command (bin/bizops-sync.js imports this file). See program.ts.
 */
import { buildProgram, reportError } from './program.ts';

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error);
}
