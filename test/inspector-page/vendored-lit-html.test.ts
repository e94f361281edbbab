/*
 * The page's lit-html is vendored (assets/vendor/lit-html/: the page works offline, with no
 * network at run time) and pinned as a devDependency, so the copy can be checked: every
 * vendored file must be the published file of the installed version, byte for byte.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { inspectorAsset } from './inspector-modules.js';

const vendored = inspectorAsset('vendor/lit-html');
// lit-html's package exports leave out package.json: the installed copy is read where npm puts it.
const published = fileURLToPath(new URL('../../node_modules/lit-html/', import.meta.url));
const files = readdirSync(vendored, { recursive: true, encoding: 'utf8' }).filter((file) =>
  /\.(js|d\.ts)$|LICENSE$/.test(file),
);
const pinned = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  devDependencies: Record<string, string>;
};

describe('the vendored lit-html', () => {
  it('is pinned to one exact version', () => {
    expect(pinned.devDependencies['lit-html']).toMatch(/^\d+\.\d+\.\d+$/);
    const installed = JSON.parse(readFileSync(join(published, 'package.json'), 'utf8')) as { version: string };
    expect(installed.version).toBe(pinned.devDependencies['lit-html']);
  });

  it('holds the module, the directives the page uses, their types and the licence', () => {
    expect(files.map((file) => file.replaceAll('\\', '/')).sort()).toEqual([
      'LICENSE',
      'directive-helpers.d.ts',
      'directive-helpers.js',
      'directive.d.ts',
      'directive.js',
      'directives/repeat.d.ts',
      'directives/repeat.js',
      'lit-html.d.ts',
      'lit-html.js',
    ]);
  });

  it.each(files)('%s is the published file', (file) => {
    expect(readFileSync(join(vendored, file), 'utf8')).toBe(readFileSync(join(published, file), 'utf8'));
  });
});
