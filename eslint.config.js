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

/**
 * jobs/ and cli/ see a folder of src/ only through its face, the folder's index.ts (a nested folder
 * such as src/writes/queue/ has its own): `../src/writes/index.ts`, never `../src/writes/write-store.ts`.
 * Type-only imports count too.
 */
const PAST_A_FACE = '^(\\.\\./)+src/(?!(.+/)?index\\.ts$)';
const pastAFace = {
  regex: PAST_A_FACE,
  message: "import src/ through the folder's face, its index.ts (docs/architecture.md \"Folder faces\"); add the name to the face if it is missing",
};

/**
 * `no-restricted-imports` reads static imports and re-exports only; the same rules for `import(...)`
 * (jobs/ and cli/ load some faces on demand). esquery's regex literals cannot hold a `/`, hence `[\\x2F]`.
 */
const dynamicImportRule = (pattern, message) => ({
  selector: `ImportExpression[source.value=/${pattern.replaceAll('/', '[\\x2F]')}/]`,
  message,
});

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'packages/*/dist/', 'data/', 'coverage/'] },
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
    rules: {
      'no-restricted-imports': ['error', { patterns: [importsOf(['cli', 'jobs', 'test', 'bench'])] }],
      'no-restricted-syntax': ['error', dynamicImportRule(importsOf(['cli', 'jobs', 'test', 'bench']).regex, importsOf([]).message)],
    },
  },
  {
    files: ['jobs/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [importsOf(['cli', 'test', 'bench']), pastAFace] }],
      'no-restricted-syntax': ['error', dynamicImportRule(importsOf(['cli', 'test', 'bench']).regex, importsOf([]).message), dynamicImportRule(PAST_A_FACE, pastAFace.message)],
    },
  },
  {
    files: ['cli/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [pastAFace] }],
      'no-restricted-syntax': ['error', dynamicImportRule(PAST_A_FACE, pastAFace.message)],
    },
  },
);
