import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { normalizePath, pathsOverlap } from '../../src/concurrency/index.js';

const normalization: [description: string, raw: string, expected: string | undefined][] = [
  ['plain absolute', '/w/a.ts', '/w/a.ts'],
  ['plain relative', 'src/a.ts', 'src/a.ts'],
  ['surrounding whitespace is trimmed', '  /w/a.ts \n', '/w/a.ts'],
  ['empty', '', undefined],
  ['blank', ' \t\n ', undefined],
  ['single dot', '.', '.'],
  ['dot slash', './', '.'],
  ['leading dot component', './src/a', 'src/a'],
  ['inner dot components', '/w/./a/./b', '/w/a/b'],
  ['doubled separators', '/w//a///b', '/w/a/b'],
  ['trailing separator', '/w/a/', '/w/a'],
  ['trailing dot', 'src/.', 'src'],
  ['root', '/', '/'],
  ['root with dots and slashes', '//./', '/'],
  ['parent pops a component', '/w/a/../b', '/w/b'],
  ['parent pops back to the root', '/w/..', '/'],
  ['parent above an absolute root is dropped', '/..', '/'],
  ['parents above an absolute root are dropped', '/../../w/a', '/w/a'],
  ['parent pops back to the relative base', 'src/..', '.'],
  ['parent above a relative base is kept', '..', '..'],
  ['parents above a relative base are kept', '../../a', '../../a'],
  ['a kept parent is not popped by the next one', 'a/../../..', '../..'],
  ['dots inside names are names', '/w/.../a..b/.c', '/w/.../a..b/.c'],
  ['backslashes separate', 'src\\a\\b.rs', 'src/a/b.rs'],
  ['leading backslash is absolute', '\\w\\a', '/w/a'],
  ['drive letter with backslashes', 'C:\\proj\\a.rs', 'C:/proj/a.rs'],
  ['drive letter with slashes', 'C:/proj/a.rs', 'C:/proj/a.rs'],
  ['mixed separators', '/w\\a/b\\\\c', '/w/a/b/c'],
  ['no case folding', '/W/A', '/W/A'],
  ['no tilde expansion', '~/a', '~/a'],
  ['inner spaces are kept', '/w/my file.txt', '/w/my file.txt'],
  ['components are trimmed so normalizing twice is stable', 'a /', 'a'],
  ['a blank component is dropped', 'a/  /b', 'a/b'],
];

describe('normalizePath', () => {
  it.each(normalization)('%s: %j -> %j', (_description, raw, expected) => {
    expect(normalizePath(raw)).toBe(expected);
  });

  it('gives one form for the same file written with either separator', () => {
    expect(normalizePath('C:\\proj\\a.rs')).toBe(normalizePath('C:/proj/a.rs'));
  });
});

const overlap: [description: string, a: string, b: string, expected: boolean][] = [
  ['equal absolute', '/w/a', '/w/a', true],
  ['equal relative', 'src/a', 'src/a', true],
  ['ancestor and descendant', 'src/a', 'src/a/b.rs', true],
  ['a name prefix is not an ancestor', 'src/a', 'src/ab', false],
  ['siblings', '/w/a', '/w/b', false],
  ['root is the ancestor of every absolute path', '/', '/w/a/b', true],
  ['dot is the ancestor of every relative path', '.', 'src/a', true],
  ['dot and a climbing path', '.', '../x', true],
  ['dot and the root (mixed)', '.', '/', true],
  ['absolute and relative are assumed to overlap', '/w/a', 'src/b', true],
  ['climbing path and a path below the base', '../x', 'src', true],
  ['climbing higher overlaps climbing less', '../..', '..', true],
  ['climbing higher with names', '../../a', '../b', true],
  ['same climb, different names', '../a', '../b', false],
  ['same climb, ancestor', '../a', '../a/b', true],
  ['same climb, bare parent is their ancestor', '..', '../a', true],
  ['raw inputs are normalized first', './src/a', 'src\\a\\b', true],
];

describe('pathsOverlap', () => {
  it.each(overlap)('%s: %j vs %j -> %j', (_description, a, b, expected) => {
    expect(pathsOverlap(a, b)).toBe(expected);
    expect(pathsOverlap(b, a)).toBe(expected);
  });

  it('treats a blank path as overlapping everything', () => {
    expect(pathsOverlap('', '/w/a')).toBe(true);
  });
});

const pathLike = fc
  .array(fc.constantFrom('/', '\\', '.', '..', 'a', 'b', 'src', ' ', '\t', 'C:'), { maxLength: 12 })
  .map((parts) => parts.join(''));

describe('normalizePath properties', () => {
  it('is idempotent wherever it is defined', () => {
    fc.assert(
      fc.property(fc.oneof(pathLike, fc.string(), fc.string({ unit: 'binary' })), (raw) => {
        const once = normalizePath(raw);
        fc.pre(once !== undefined);
        expect(normalizePath(once!)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it('never misses an overlap that exists for some base directory', () => {
    const bases = ['/r', '/r/a', '/r/a/b', '/r/x/src', '/x', '/'];
    fc.assert(
      fc.property(pathLike, pathLike, fc.constantFrom(...bases), (rawA, rawB, base) => {
        const a = normalizePath(rawA);
        const b = normalizePath(rawB);
        fc.pre(a !== undefined && b !== undefined);
        const resolvedA = a!.startsWith('/') ? a! : normalizePath(`${base}/${a}`)!;
        const resolvedB = b!.startsWith('/') ? b! : normalizePath(`${base}/${b}`)!;
        if (pathsOverlap(resolvedA, resolvedB)) expect(pathsOverlap(a!, b!)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});
