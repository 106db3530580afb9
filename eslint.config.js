import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * Dependencies point one way: cli/ -> jobs/ -> src/ (docs/architecture.md). `src/` is the library
 * (client, streams, mirror, sync, notify, writes) and knows nothing of how it is wired or run;
 * `jobs/` wires it (the one composition root and one file per job); `cli/` parses arguments and prints.
 * Type-only imports count too: a type from jobs/ in src/ is a dependency all the same.
 */
const importsOf = (folders) => ({
  regex: `^(\\.\\./)+(${folders.join('|')})/`,
  message: 'dependencies go cli/ -> jobs/ -> src/ only (docs/architecture.md "Dependency direction")',
});

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['src/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [importsOf(['cli', 'jobs', 'test', 'bench'])] }] },
  },
  {
    files: ['jobs/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [importsOf(['cli', 'test', 'bench'])] }] },
  },
);
