import { mkdir, readdir, readFile, realpath, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { applyPatchTool } from '../../src/tools/builtins/index.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

let base: string;
let workspace: string;

const envelope = (...body: string[]): string => ['*** Begin Patch', ...body, '*** End Patch'].join('\n');

function context(): ToolContext {
  return { signal: new AbortController().signal, workspace, callId: 'c1', runId: 'r1', sessionId: 's1' };
}

function apply(patch: string): Promise<unknown> {
  return applyPatchTool.execute({ patch }, context());
}

/** Every file under the workspace with its content, to show that a failed patch changed nothing. */
async function snapshot(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(workspace, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files[relative(workspace, path)] = await readFile(path, 'utf8');
  }
  return files;
}

const tempDir = tempDirs('switchyard-patch-', 'afterEach');

beforeEach(async () => {
  base = await realpath(await tempDir());
  workspace = join(base, 'w');
  await mkdir(join(workspace, 'src'), { recursive: true });
  await writeFile(
    join(workspace, 'src', 'a.ts'),
    'export function one() {\n  return 1;\n}\n\nexport function two() {\n  return 2;\n}\n',
  );
  await writeFile(join(workspace, 'src', 'b.ts'), 'const b = 1;\n');
  await writeFile(join(workspace, 'old.txt'), 'obsolete\n');
});

describe('apply_patch claims', () => {
  const claimContext = { workspace: '/w', sessionId: 's1' };

  it('claims every path in the envelope, move targets included', () => {
    const patch = envelope(
      '*** Add File: n.ts',
      '+x',
      '*** Update File: src/a.ts',
      '*** Move to: lib/a.ts',
      '@@',
      '-x',
      '*** Delete File: ./old.txt',
    );
    expect(applyPatchTool.concurrencyClaim?.({ patch }, claimContext)).toStrictEqual({
      kind: 'exclusive',
      scope: { kind: 'paths', paths: ['/w/lib/a.ts', '/w/n.ts', '/w/old.txt', '/w/src/a.ts'] },
    });
  });

  it('claims an escaping path as it resolves, so the scheduler sees the real footprint', () => {
    expect(applyPatchTool.concurrencyClaim?.({ patch: envelope('*** Delete File: ../x') }, claimContext)).toStrictEqual(
      {
        kind: 'exclusive',
        scope: { kind: 'paths', paths: ['/x'] },
      },
    );
  });

  it('claims global for an unparseable patch', () => {
    expect(applyPatchTool.concurrencyClaim?.({ patch: 'not a patch' }, claimContext)).toStrictEqual({
      kind: 'exclusive',
      scope: { kind: 'global' },
    });
  });
});

describe('apply_patch', () => {
  it('applies a multi-file patch: add, update with anchored hunks, delete', async () => {
    const patch = envelope(
      '*** Add File: src/c/new.ts',
      '+export const c = 3;',
      '*** Update File: src/a.ts',
      '@@ export function one() {',
      '-  return 1;',
      '+  return 10;',
      '@@ export function two() {',
      '-  return 2;',
      '+  return 20;',
      ' }',
      '*** Delete File: old.txt',
    );
    await expect(apply(patch)).resolves.toStrictEqual({
      files: [
        { action: 'add', path: 'src/c/new.ts' },
        { action: 'update', path: 'src/a.ts' },
        { action: 'delete', path: 'old.txt' },
      ],
    });
    await expect(snapshot()).resolves.toStrictEqual({
      'src/a.ts': 'export function one() {\n  return 10;\n}\n\nexport function two() {\n  return 20;\n}\n',
      'src/b.ts': 'const b = 1;\n',
      'src/c/new.ts': 'export const c = 3;\n',
    });
  });

  it('moves a file while updating it', async () => {
    const patch = envelope(
      '*** Update File: src/b.ts',
      '*** Move to: lib/b.ts',
      '@@',
      '-const b = 1;',
      '+const b = 2;',
    );
    await expect(apply(patch)).resolves.toStrictEqual({
      files: [{ action: 'move', path: 'src/b.ts', to: 'lib/b.ts' }],
    });
    const files = await snapshot();
    expect(files['src/b.ts']).toBeUndefined();
    expect(files['lib/b.ts']).toBe('const b = 2;\n');
  });

  it('renames without hunks', async () => {
    await apply(envelope('*** Update File: old.txt', '*** Move to: new.txt'));
    await expect(snapshot()).resolves.toMatchObject({ 'new.txt': 'obsolete\n' });
    expect((await snapshot())['old.txt']).toBeUndefined();
  });

  it('sees its own earlier operations: add then update the same file', async () => {
    await apply(envelope('*** Add File: n.txt', '+one', '*** Update File: n.txt', '@@', '-one', '+two'));
    await expect(readFile(join(workspace, 'n.txt'), 'utf8')).resolves.toBe('two\n');
  });

  it('a hunk that does not match leaves every file unchanged', async () => {
    const before = await snapshot();
    const patch = envelope(
      '*** Add File: added.ts',
      '+x',
      '*** Update File: src/b.ts',
      '@@',
      '-const b = 1;',
      '+const b = 2;',
      '*** Delete File: old.txt',
      '*** Update File: src/a.ts',
      '@@',
      '-  return 3;',
      '+  return 30;',
    );
    await expect(apply(patch)).rejects.toMatchObject({
      code: 'patch_failed',
      message: expect.stringMatching(
        /^Update File src\/a\.ts: the hunk at patch line 10 does not match[\s\S]*no file was changed$/,
      ),
    });
    await expect(snapshot()).resolves.toStrictEqual(before);
  });

  it.each([
    ['a relative escape', envelope('*** Add File: inside.txt', '+x', '*** Add File: ../escaped.txt', '+x')],
    [
      'an absolute path outside',
      () => envelope('*** Add File: inside.txt', '+x', `*** Add File: ${join(base, 'escaped.txt')}`, '+x'),
    ],
    ['a move target outside', envelope('*** Update File: src/b.ts', '*** Move to: ../escaped.txt')],
    [
      'a symlink inside pointing outside',
      envelope('*** Add File: inside.txt', '+x', '*** Add File: link/escaped.txt', '+x'),
    ],
  ])('%s is refused with outside_workspace and nothing is written', async (_case, patch) => {
    await mkdir(join(base, 'outside'));
    await symlink(join(base, 'outside'), join(workspace, 'link'));
    const before = await snapshot();
    await expect(apply(typeof patch === 'function' ? patch() : patch)).rejects.toMatchObject({
      code: 'outside_workspace',
    });
    await expect(snapshot()).resolves.toStrictEqual(before);
    expect((await readdir(base)).sort()).toStrictEqual(['outside', 'w']);
    await expect(readdir(join(base, 'outside'))).resolves.toStrictEqual([]);
  });

  it.each([
    [
      'adding an existing file',
      envelope('*** Add File: src/b.ts', '+x'),
      /Add File src\/b\.ts: the file already exists/,
    ],
    [
      'updating a missing file',
      envelope('*** Update File: nope.ts', '@@', '+x'),
      /Update File nope\.ts: the file does not exist/,
    ],
    ['deleting a missing file', envelope('*** Delete File: nope.ts'), /Delete File nope\.ts: the file does not exist/],
    [
      'moving onto an existing file',
      envelope('*** Update File: src/b.ts', '*** Move to: old.txt'),
      /Move to old\.txt: the destination already exists/,
    ],
  ])('%s fails with patch_failed and changes nothing', async (_case, patch, message) => {
    const before = await snapshot();
    await expect(apply(patch)).rejects.toMatchObject({ code: 'patch_failed', message: expect.stringMatching(message) });
    await expect(snapshot()).resolves.toStrictEqual(before);
  });

  it('an unparseable patch fails with invalid_patch and the parser error', async () => {
    await expect(apply('*** Begin Patch\n*** Frobnicate: x\n*** End Patch')).rejects.toMatchObject({
      code: 'invalid_patch',
      message: 'line 2: unknown directive "*** Frobnicate: x"; expected Add File, Update File or Delete File',
    });
  });
});
