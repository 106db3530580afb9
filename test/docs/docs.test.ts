/**
 * What the documentation promises about itself: docs/mirror.md lists every migration the code has,
 * the docs' stream tables are the stream registry's (test/docs/stream-tables.ts), and no document,
 * comment or test points at a tracker the reader cannot see (an issue number): the rule is stated
 * where it applies instead.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/mirror/index.ts';
import { STREAM_LIST } from '../../src/streams/definitions.ts';
import { GENERATED_FILES, GENERATED_TABLES, generatedPart, readDoc } from './stream-tables.ts';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

/** Every file under `folder` (relative to the checkout), node_modules left out. */
function filesUnder(folder: string): string[] {
  const path = join(CHECKOUT, folder);
  if (statSync(path).isFile()) return [path];
  return readdirSync(path, { withFileTypes: true }).flatMap((entry) =>
    entry.name === 'node_modules' ? [] : entry.isDirectory() ? filesUnder(relative(CHECKOUT, join(path, entry.name))) : [join(path, entry.name)],
  );
}

describe('the documentation', () => {
  it('docs/mirror.md lists every migration, in order', () => {
    const mirror = readFileSync(join(CHECKOUT, 'docs/mirror.md'), 'utf8');
    const table = mirror.slice(mirror.indexOf('| migration | adds |')).split('\n\n')[0]!;
    const listed = [...table.matchAll(/^\| (\d+) \|/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual(MIGRATIONS.map((migration) => migration.version));
  });

  it.each(GENERATED_TABLES.map((table) => [table.file, table.name, table] as const))('%s: the %s table is the stream registry\'s (npm run docs:streams writes it)', (_file, _name, table) => {
    const rendered = table.render(STREAM_LIST);
    expect(generatedPart(readDoc(table.file), table)).toBe(rendered);
    // One row per registered stream.
    for (const stream of STREAM_LIST) expect(rendered).toContain(`| \`${stream.name}\` |`);
  });

  it.each(GENERATED_FILES.map((generated) => [generated.file, generated] as const))('%s is what the registries render (npm run docs writes it)', async (_file, generated) => {
    expect(readDoc(generated.file)).toBe(await generated.render(STREAM_LIST));
  });

  it('names no issue of a tracker the reader cannot see, in the README, docs, sources, tests or benchmarks', () => {
    // Built from parts, so that this file does not match itself.
    // Singular or plural, with or without a `#` before the number.
    const trackerReference = new RegExp(['\\b[Ii]ssues?', ' #?[0-9]+'].join(''));
    const found: string[] = [];
    for (const folder of ['README.md', 'docs', 'src', 'jobs', 'cli', 'test', 'bench', 'soak', 'bin', 'packages/simulator/src', 'packages/simulator/README.md', 'packages/client']) {
      for (const file of filesUnder(folder)) {
        if (!/\.(ts|js|mjs|md|json|sql)$/.test(file)) continue;
        readFileSync(file, 'utf8')
          .split('\n')
          .forEach((line, index) => {
            if (trackerReference.test(line)) found.push(`${relative(CHECKOUT, file)}:${index + 1}: ${line.trim()}`);
          });
      }
    }
    expect(found).toEqual([]);
  });
});
