/*
 * No test that needs a real system part passes CI by skipping. The parts (bubblewrap,
 * redis-server, Chromium, strace) are checked in one place, test/support/real-parts.ts, which
 * fails instead of skipping when SWITCHYARD_REQUIRE_REAL_PARTS=1 (.ci/run sets it). This file
 * checks, on the source text, that the rule has no way around it:
 * - every test file that runs a real part (itself or through a helper it imports) is guarded
 *   by real-parts.ts;
 * - no test file asks on its own whether a part is there;
 * - every conditional skip is on a real-parts guard, and nothing is skipped for good.
 * Plain node:fs: a reader can see every rule here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'));
const GUARD = 'test/support/real-parts.ts';

function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return filesUnder(path);
    return /\.ts$/.test(name) ? [path] : [];
  });
}

const files = filesUnder('test');
const testFiles = files.filter(
  (file) => file.endsWith('.test.ts') && file !== relative(root, fileURLToPath(import.meta.url)),
);
const text = new Map(files.map((file) => [file, readFileSync(join(root, file), 'utf8')]));

/**
 * What running each part looks like in a test's source. Commands run under bubblewrap unless
 * every sandbox of the file is backend "none" (a [sandbox] backend in a config test runs nothing).
 */
const RUNS: Record<string, (source: string) => boolean> = {
  bubblewrap: (source) =>
    /\b(?:runCommand|sandboxedProcess|probeBwrap)\(|\bbashTool\b|escape-runner/.test(source) &&
    !/backend: 'none'|backend = "none"/.test(source),
  'redis-server': (source) => /startRedisServer\(|redisFixture\(/.test(source),
  Chromium: (source) => /chromium\.launch\w*\(/.test(source),
  strace: (source) => /['"]strace['"]/.test(source),
};

/** The test/ files a file imports (relative imports only), transitively, itself included. */
function reach(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const [, spec] of (text.get(file) ?? '').matchAll(/from\s+'(\.[^']+)'/g)) {
    const target = normalize(join(dirname(file), spec!)).replace(/\.js$/, '.ts');
    if (text.has(target)) reach(target, seen);
  }
  return seen;
}

describe('tests that need a real part cannot pass CI by skipping', () => {
  it('recognises the parts where they are run (the rule is not empty)', () => {
    const running = testFiles.filter((file) =>
      [...reach(file)].some((f) => Object.values(RUNS).some((runs) => runs(text.get(f)!))),
    );
    expect(running.length).toBeGreaterThan(10);
  });

  it('every test file that runs bubblewrap, redis-server, Chromium or strace is guarded by real-parts.ts', () => {
    const unguarded = testFiles.flatMap((file) => {
      const reached = reach(file);
      const parts = Object.entries(RUNS)
        .filter(([, runs]) => [...reached].some((f) => f !== GUARD && runs(text.get(f)!)))
        .map(([part]) => part);
      return parts.length > 0 && !reached.has(GUARD) ? [`${file} runs ${parts.join(', ')}`] : [];
    });
    expect(unguarded).toEqual([]);
  });

  it('no test file asks on its own whether a part is there', () => {
    // probeBwrap / bwrapAvailable with a made-up path test the probe itself and stay allowed.
    const asks =
      /probeBwrap\((?:\)|undefined)|bwrapAvailable\(\)|redisUnavailable\(|existsSync\([^)]*(?:chromium|CHROMIUM|strace|python)/;
    expect(testFiles.filter((file) => asks.test(text.get(file)!))).toEqual([]);
  });

  it('every conditional skip is on a real-parts guard, and no test is skipped for good', () => {
    const problems = testFiles.flatMap((file) => {
      const source = text.get(file)!;
      /** Names bound to a guard's answer: `const bwrap = await hasBwrap(…)`, `const redis = redisFixture(…)`. */
      const guards = new Set(
        [...source.matchAll(/const (\w+) =[^;]*?\b(?:has[A-Z]\w*|isRoot|redisFixture)\(/g)].map(([, name]) => name),
      );
      const skips = [...source.matchAll(/\.(?:skipIf|runIf)\(([^)]*)\)/g)].flatMap(([call, condition]) => {
        const names = condition!.match(/[A-Za-z_$][\w$]*/g) ?? [];
        const unguarded = names.filter((name) => name !== 'available' && !guards.has(name));
        return unguarded.length > 0 ? [`${file}: ${call} is not on a real-parts guard`] : [];
      });
      const forGood = [...source.matchAll(/\b(?:describe|it|test)\.(?:skip|todo)\b(?!If)/g)].map(
        ([call]) => `${file}: ${call}`,
      );
      return [...skips, ...forGood];
    });
    expect(problems).toEqual([]);
  });
});
