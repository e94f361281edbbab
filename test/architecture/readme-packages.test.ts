/*
 * The README's package list is package.json's: every dependency, optional dependency and dev
 * dependency, with its version range and kind, and nothing else.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);

describe('the README package list', () => {
  it('names exactly the packages of package.json, with their versions and kinds', async () => {
    const readme = await readFile(new URL('README.md', root), 'utf8');
    const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    const section = readme.slice(readme.indexOf('<!-- packages:start'), readme.indexOf('<!-- packages:end -->'));
    const listed = [...section.matchAll(/^\| `([^`]+)` \| `([^`]+)` \| (\w+) \|/gm)].map(
      ([, name, version, kind]) => `${kind} ${name}@${version}`,
    );
    const kinds = { runtime: 'dependencies', optional: 'optionalDependencies', dev: 'devDependencies' } as const;
    const expected = Object.entries(kinds).flatMap(([kind, key]) =>
      Object.entries(pkg[key] ?? {}).map(([name, version]) => `${kind} ${name}@${version}`),
    );
    expect(listed.sort()).toEqual(expected.sort());
  });
});
