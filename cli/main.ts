/**
 * Entry point of the `bizops-sync` command (bin/bizops-sync.js imports this file). See program.ts.
 */

// `bizops-sync changes | head` closes our stdout early: that is the reader being done, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

try {
  // `changes` is what downstream tails run, often for a long time: it loads only what it needs.
  const program = process.argv[2] === 'changes' ? (await import('./changes-program.ts')).buildChangesProgram() : (await import('./program.ts')).buildProgram();
  await program.parseAsync(process.argv);
} catch (error) {
  // The full program's error reporting, loaded when needed (one line, secrets masked, exit code).
  const { reportError } = await import('./program.ts');
  process.exitCode = reportError(error);
}
