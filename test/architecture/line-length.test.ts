/*
 * No line of the sources runs long again (issue 26.7): Prettier keeps code at 120 columns, but
 * it leaves string literals, regular expressions and comments as they are, which once made
 * lines of 250–400 characters. This holds every text file of the code folders to 160.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;
const MAX_LINE = 160;
const FOLDERS = ['src', 'machines', 'bench', 'test', 'scripts', 'bin'];

/** Left as they are, and why. */
const EXEMPT: Record<string, string> = {
  // Recorded provider HTTP responses: one line is one SSE frame or body, byte for byte as the server sent it.
  'test/model/recordings/': 'recorded data',
  // Files an earlier version of the store wrote, kept byte for byte (the upgrade tests read them).
  'test/store/fixtures/': 'recorded data',
  // lit-html as published, byte for byte (a test holds the copy equal to node_modules').
  'src/gateway/inspector-page/assets/vendor/': 'vendored',
};

function textFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (Object.keys(EXEMPT).some((prefix) => `${path}/`.startsWith(prefix) || path.startsWith(prefix))) return [];
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : textFiles(path);
    const bytes = readFileSync(join(root, path));
    return bytes.includes(0) ? [] : [path];
  });
}

describe(`no line is longer than ${MAX_LINE} characters`, () => {
  const files = FOLDERS.flatMap(textFiles);

  it('finds the files it checks', () => {
    expect(files).toContain('src/engine/engine.ts');
    expect(files).toContain('machines/run.machine.ts');
    expect(files.length).toBeGreaterThan(500);
  });

  it('in src/, machines/, bench/, test/, scripts/ and bin/', () => {
    const long = files.flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, index) => (line.length > MAX_LINE ? [`${file}:${index + 1} (${line.length})`] : [])),
    );
    expect(long).toEqual([]);
  });
});
