/*
 * The docs name files that exist (issue 26.7): every `src/…`, `machines/…`, `test/…`, `bench/…`,
 * `scripts/…` or `docs/…` path mentioned in README.md and docs/*.md is a file or folder of the
 * repository, so a rename that forgets a page fails here. `X` in a path is a placeholder (`src/engine/X.host.ts`), `*` a wildcard;
 * both must match at least one file.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;

/** Paths inside a workspace in the examples (claims, path overlap), not files of this repository. */
const EXAMPLE_PATHS = new Set(['src/a', 'src/ab', 'src/a/b.rs', 'src/a.ts', 'src/b.ts', 'src/c.ts', 'src/user.ts']);

/** A path that starts a word: not `dist/src/cli.js`, `/ws/src/a.ts` or `packages/*\/src/…`. */
const MENTION = /(?<![\w./\\*-])((?:src|machines|test|bench|scripts|docs)\/[\w./*-]*)/g;

const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs')).flatMap((n) => (n.endsWith('.md') ? [`docs/${n}`] : [])),
];

function mentions(page: string): string[] {
  const text = readFileSync(join(root, page), 'utf8');
  return [...text.matchAll(MENTION)].map((m) => m[1]!.replace(/[.]+$/, '')).filter((p) => !EXAMPLE_PATHS.has(p));
}

/** `X` (a placeholder) and `*` (a wildcard) as a pattern for one file name; undefined for a plain name. */
function patternOf(segment: string): RegExp | undefined {
  const parts = segment.split(/(\*+|\bX\b)/);
  if (parts.length === 1) return undefined;
  const source = parts
    .map((part, i) => (i % 2 === 0 ? part.replace(/[.+?^${}()|[\]\\]/g, '\\$&') : part === 'X' ? '[\\w-]+' : '.*'))
    .join('');
  return new RegExp(`^${source}$`);
}

/** Whether a path (with `X` placeholders and `*` wildcards) names something in the repository. */
function exists(path: string): boolean {
  let found = [''];
  for (const segment of path.split('/').filter((s) => s !== '')) {
    const pattern = patternOf(segment);
    found = found.flatMap((dir) => {
      if (pattern === undefined) return existsSync(join(root, dir, segment)) ? [join(dir, segment)] : [];
      const full = join(root, dir);
      if (!statSync(full).isDirectory()) return [];
      return readdirSync(full)
        .filter((name) => pattern.test(name))
        .map((name) => join(dir, name));
    });
  }
  return found.length > 0;
}

describe('paths the docs mention exist', () => {
  const all = pages.flatMap((page) => [...new Set(mentions(page))].map((path) => ({ page, path })));

  it('finds the mentions it checks', () => {
    expect(pages).toContain('docs/architecture.md');
    expect(all.map((m) => m.path)).toEqual(
      expect.arrayContaining(['src/core/run-request.ts', 'machines/run.machine.ts']),
    );
    expect(all.length).toBeGreaterThan(50);
  });

  it('every src/…, machines/…, test/…, bench/…, scripts/… and docs/… path in README.md and docs/*.md', () => {
    expect(all.filter(({ path }) => !exists(path)).map(({ page, path }) => `${page}: ${path}`)).toEqual([]);
  });

  it('tells a missing path from a present one', () => {
    expect(exists('src/engine/X.host.ts')).toBe(true);
    expect(exists('machines/*.machine.ts')).toBe(true);
    expect(exists('src/inspect/')).toBe(false);
    expect(exists('src/engine/no-such-file.ts')).toBe(false);
  });
});
