import { lstat, mkdir, readFile, readlink, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Claim } from '../../src/concurrency/index.js';
import type { FileOpsInput } from '../../src/tools/builtins/index.js';
import { fileOpsTool, isDestructiveFileOp, LIST_MAX_ENTRIES } from '../../src/tools/builtins/index.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

let base: string;
let workspace: string;

function context(): ToolContext {
  return { signal: new AbortController().signal, workspace, callId: 'c1', runId: 'r1', sessionId: 's1' };
}

function run(input: FileOpsInput): Promise<unknown> {
  return fileOpsTool.execute(input, context());
}

async function present(path: string): Promise<boolean> {
  return lstat(join(workspace, path)).then(
    () => true,
    () => false,
  );
}

const tempDir = tempDirs('switchyard-ops-', 'afterEach');

beforeEach(async () => {
  base = await realpath(await tempDir());
  workspace = join(base, 'w');
  await mkdir(join(workspace, 'src', 'lib'), { recursive: true });
  await mkdir(join(workspace, 'node_modules', 'dep'), { recursive: true });
  await writeFile(join(workspace, 'README.md'), '# Title\nTODO: write docs\n');
  await writeFile(join(workspace, 'src', 'a.ts'), 'export const a = 1; // TODO\n');
  await writeFile(join(workspace, 'src', 'lib', 'b.ts'), 'export const b = 2;\nconst todo = 3;\n');
  await writeFile(join(workspace, 'node_modules', 'dep', 'index.js'), 'TODO in a dependency\n');
  await mkdir(join(base, 'outside'));
  await writeFile(join(base, 'outside', 'secret.txt'), 'TODO secret\n');
});

describe('file_ops claims', () => {
  const claimContext = { workspace: '/w', sessionId: 's1' };
  const shared = (...reads: string[]): Claim => ({ kind: 'shared', reads });
  const paths = (...written: string[]): Claim => ({ kind: 'exclusive', scope: { kind: 'paths', paths: written } });
  const cases: [input: FileOpsInput, claim: Claim][] = [
    [{ operation: 'list', path: '.' }, shared('/w')],
    [{ operation: 'search', path: 'src', pattern: 'x' }, shared('/w/src')],
    [{ operation: 'stats', path: 'src/a.ts' }, shared('/w/src/a.ts')],
    [{ operation: 'move', path: 'b', destination: 'a' }, paths('/w/a', '/w/b')],
    [{ operation: 'copy', path: 'src/a.ts', destination: '../elsewhere' }, paths('/elsewhere', '/w/src/a.ts')],
    [{ operation: 'delete', path: 'src', recursive: true }, paths('/w/src')],
    [{ operation: 'delete', path: 'src', destination: 'ignored' }, paths('/w/src')],
    [{ operation: 'mkdir', path: 'new/dir' }, paths('/w/new/dir')],
  ];
  it.each(cases)('%j -> %j', (input, claim) => {
    expect(fileOpsTool.concurrencyClaim?.(input, claimContext)).toStrictEqual(claim);
  });

  it.each([
    ['list', false],
    ['search', false],
    ['stats', false],
    ['copy', false],
    ['mkdir', false],
    ['move', true],
    ['delete', true],
  ] as const)('isDestructiveFileOp(%s) is %s', (operation, destructive) => {
    expect(isDestructiveFileOp({ operation })).toBe(destructive);
  });

  it('the tool itself is not marked destructive; the approval gate asks per operation', () => {
    expect(fileOpsTool.destructive).toBe(false);
  });
});

describe('file_ops input', () => {
  it.each([
    [{ operation: 'move', path: 'a' }, 'destination'],
    [{ operation: 'copy', path: 'a' }, 'destination'],
    [{ operation: 'search', path: '.' }, 'pattern'],
    [{ operation: 'search', path: '.', pattern: '/(unclosed/' }, 'pattern'],
    [{ operation: 'chmod', path: 'a' }, 'operation'],
    [{ operation: 'list', path: 'a', extra: true }, ''],
  ])('rejects %j', (input, field) => {
    const parsed = fileOpsTool.input.safeParse(input);
    expect(parsed.success).toBe(false);
    if (field !== '') expect(parsed.error?.issues.map((issue) => issue.path.join('.'))).toContain(field);
  });
});

describe('file_ops list', () => {
  it('lists a directory in name order, with types and sizes', async () => {
    await expect(run({ operation: 'list', path: 'src' })).resolves.toStrictEqual({
      path: 'src',
      entries: [
        { name: 'a.ts', type: 'file', size: 28 },
        { name: 'lib', type: 'directory', size: 0 },
      ],
    });
  });

  it('lists recursively with relative names, listing symlinks without following them', async () => {
    await symlink(join(base, 'outside'), join(workspace, 'src', 'out'));
    const output = (await run({ operation: 'list', path: 'src', recursive: true })) as {
      entries: { name: string; type: string }[];
    };
    expect(output.entries.map((entry) => `${entry.name}:${entry.type}`)).toStrictEqual([
      'a.ts:file',
      'lib:directory',
      'out:symlink',
      'lib/b.ts:file',
    ]);
  });

  it(`caps the listing at ${LIST_MAX_ENTRIES} entries`, async () => {
    await mkdir(join(workspace, 'many'));
    await Promise.all(
      Array.from({ length: LIST_MAX_ENTRIES + 5 }, (_, i) => writeFile(join(workspace, 'many', `f${i}`), '')),
    );
    const output = (await run({ operation: 'list', path: 'many' })) as { entries: unknown[]; truncated?: boolean };
    expect(output.entries).toHaveLength(LIST_MAX_ENTRIES);
    expect(output.truncated).toBe(true);
  });

  it.each([
    ['missing', 'not_found'],
    ['README.md', 'not_a_directory'],
    ['..', 'outside_workspace'],
  ])('list %s fails with %s', async (path, code) => {
    await expect(run({ operation: 'list', path })).rejects.toMatchObject({ code });
  });
});

describe('file_ops search', () => {
  it('finds a substring line by line, skipping node_modules', async () => {
    await expect(run({ operation: 'search', path: '.', pattern: 'TODO' })).resolves.toStrictEqual({
      path: '.',
      pattern: 'TODO',
      matches: [
        { path: 'README.md', line: 2, text: 'TODO: write docs' },
        { path: 'src/a.ts', line: 1, text: 'export const a = 1; // TODO' },
      ],
      filesSearched: 3,
    });
  });

  it('takes /regex/flags as a regular expression', async () => {
    const output = (await run({ operation: 'search', path: 'src', pattern: '/^const \\w+ = \\d/i' })) as {
      matches: unknown[];
    };
    expect(output.matches).toStrictEqual([{ path: 'src/lib/b.ts', line: 2, text: 'const todo = 3;' }]);
  });

  it('stays in the top directory when recursive is false', async () => {
    const output = (await run({ operation: 'search', path: '.', pattern: 'TODO', recursive: false })) as {
      matches: { path: string }[];
    };
    expect(output.matches.map((match) => match.path)).toStrictEqual(['README.md']);
  });

  it('does not follow symlinks out of the workspace', async () => {
    await symlink(join(base, 'outside'), join(workspace, 'out'));
    await symlink(join(base, 'outside', 'secret.txt'), join(workspace, 'secret-link.txt'));
    const output = (await run({ operation: 'search', path: '.', pattern: 'secret' })) as { matches: unknown[] };
    expect(output.matches).toStrictEqual([]);
  });

  it('searches one file when path is a file', async () => {
    const output = (await run({ operation: 'search', path: 'src/lib/b.ts', pattern: 'export' })) as {
      matches: unknown[];
    };
    expect(output.matches).toStrictEqual([{ path: 'src/lib/b.ts', line: 1, text: 'export const b = 2;' }]);
  });

  it('caps the matches', async () => {
    await writeFile(join(workspace, 'many.txt'), 'hit\n'.repeat(500));
    const output = (await run({ operation: 'search', path: 'many.txt', pattern: 'hit' })) as {
      matches: unknown[];
      truncated?: boolean;
    };
    expect(output.matches).toHaveLength(200);
    expect(output.truncated).toBe(true);
  });
});

describe('file_ops stats, mkdir, move, copy, delete', () => {
  it('stats a file', async () => {
    const output = await run({ operation: 'stats', path: 'README.md' });
    expect(output).toMatchObject({
      path: 'README.md',
      type: 'file',
      size: 25,
      modified: expect.any(String),
      mode: expect.stringMatching(/^[0-7]+$/),
    });
  });

  it('mkdir creates missing parents and reports whether it created anything', async () => {
    await expect(run({ operation: 'mkdir', path: 'x/y/z' })).resolves.toStrictEqual({ path: 'x/y/z', created: true });
    await expect(run({ operation: 'mkdir', path: 'x/y/z' })).resolves.toStrictEqual({ path: 'x/y/z', created: false });
    await expect(present('x/y/z')).resolves.toBe(true);
  });

  it('moves a file, creating the destination directory', async () => {
    await expect(run({ operation: 'move', path: 'src/a.ts', destination: 'dst/a.ts' })).resolves.toStrictEqual({
      path: 'src/a.ts',
      destination: 'dst/a.ts',
    });
    await expect(present('src/a.ts')).resolves.toBe(false);
    await expect(readFile(join(workspace, 'dst', 'a.ts'), 'utf8')).resolves.toBe('export const a = 1; // TODO\n');
  });

  it('moves a symlink itself, not its target', async () => {
    await symlink(join(base, 'outside'), join(workspace, 'out'));
    await run({ operation: 'move', path: 'out', destination: 'renamed' });
    await expect(readlink(join(workspace, 'renamed'))).resolves.toBe(join(base, 'outside'));
    await expect(readFile(join(base, 'outside', 'secret.txt'), 'utf8')).resolves.toBe('TODO secret\n');
  });

  it('copies a directory with its contents', async () => {
    await run({ operation: 'copy', path: 'src', destination: 'copy' });
    await expect(readFile(join(workspace, 'copy', 'lib', 'b.ts'), 'utf8')).resolves.toContain('export const b');
    await expect(present('src/lib/b.ts')).resolves.toBe(true);
  });

  it.each(['move', 'copy'] as const)('%s refuses an existing destination', async (operation) => {
    await expect(run({ operation, path: 'src/a.ts', destination: 'README.md' })).rejects.toMatchObject({
      code: 'already_exists',
    });
    await expect(readFile(join(workspace, 'README.md'), 'utf8')).resolves.toBe('# Title\nTODO: write docs\n');
  });

  it.each(['move', 'copy'] as const)('%s refuses a destination outside the workspace', async (operation) => {
    await expect(run({ operation, path: 'src/a.ts', destination: '../stolen.ts' })).rejects.toMatchObject({
      code: 'outside_workspace',
    });
    await expect(present('src/a.ts')).resolves.toBe(true);
  });

  it('copy refuses a source outside the workspace', async () => {
    await expect(
      run({ operation: 'copy', path: '../outside/secret.txt', destination: 'got.txt' }),
    ).rejects.toMatchObject({ code: 'outside_workspace' });
  });

  it('move of a missing source fails with not_found', async () => {
    await expect(run({ operation: 'move', path: 'nope', destination: 'x' })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('deletes a file', async () => {
    await expect(run({ operation: 'delete', path: 'README.md' })).resolves.toStrictEqual({
      path: 'README.md',
      deleted: 'file',
    });
    await expect(present('README.md')).resolves.toBe(false);
  });

  it('deletes a non-empty directory only with recursive', async () => {
    await expect(run({ operation: 'delete', path: 'src' })).rejects.toMatchObject({ code: 'not_empty' });
    await expect(present('src/a.ts')).resolves.toBe(true);
    await expect(run({ operation: 'delete', path: 'src', recursive: true })).resolves.toStrictEqual({
      path: 'src',
      deleted: 'directory',
    });
    await expect(present('src')).resolves.toBe(false);
  });

  it('deletes a symlink that points outside without touching its target', async () => {
    await symlink(join(base, 'outside'), join(workspace, 'out'));
    await expect(run({ operation: 'delete', path: 'out', recursive: true })).resolves.toStrictEqual({
      path: 'out',
      deleted: 'symlink',
    });
    await expect(readFile(join(base, 'outside', 'secret.txt'), 'utf8')).resolves.toBe('TODO secret\n');
  });

  it.each(['.', 'src/..'])('refuses to delete the workspace itself (%s)', async (path) => {
    await expect(run({ operation: 'delete', path, recursive: true })).rejects.toMatchObject({
      code: 'invalid_operation',
    });
    await expect(present('README.md')).resolves.toBe(true);
  });

  it.each([
    ['a relative escape', () => '../outside/secret.txt'],
    ['an absolute path', () => join(base, 'outside')],
  ])('refuses to delete %s outside the workspace', async (_case, path) => {
    await expect(run({ operation: 'delete', path: path(), recursive: true })).rejects.toMatchObject({
      code: 'outside_workspace',
    });
    await expect(readFile(join(base, 'outside', 'secret.txt'), 'utf8')).resolves.toBe('TODO secret\n');
  });
});
