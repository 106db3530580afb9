/**
 * Entry point of the `bizops-sync` command (bin/bizops-sync.js imports this file). See program.ts.
 */
import { buildProgram, reportError } from './program.ts';

// `bizops-sync changes | head` closes our stdout early: that is the reader being done, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

try {
  await buildProgram().parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error);
}
