import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { fileEditTool } from '../../src/tools/builtins/index.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

let base: string;
let workspace: string;
let file: string;

function context(): ToolContext {
  return { signal: new AbortController().signal, workspace, callId: 'c1', runId: 'r1', sessionId: 's1' };
}

const tempDir = tempDirs('switchyard-edit-', 'afterEach');

beforeEach(async () => {
  base = await realpath(await tempDir());
  workspace = join(base, 'w');
  await mkdir(workspace);
  file = join(workspace, 'a.ts');
  await writeFile(file, 'const a = 1;\nconst b = 1;\nlet c = 2;\n');
});

describe('file_edit', () => {
  it('claims the resolved path exclusively', () => {
    expect(
      fileEditTool.concurrencyClaim?.({ path: 'a.ts', old: 'x', new: 'y' }, { workspace: '/w', sessionId: 's1' }),
    ).toStrictEqual({
      kind: 'exclusive',
      scope: { kind: 'paths', paths: ['/w/a.ts'] },
    });
  });

  it('replaces a unique occurrence', async () => {
    await expect(
      fileEditTool.execute({ path: 'a.ts', old: 'let c = 2;', new: 'let c = 3;' }, context()),
    ).resolves.toStrictEqual({
      path: 'a.ts',
      replacements: 1,
    });
    await expect(readFile(file, 'utf8')).resolves.toBe('const a = 1;\nconst b = 1;\nlet c = 3;\n');
  });

  it('inserts the new text literally, `$&` patterns included', async () => {
    await fileEditTool.execute({ path: 'a.ts', old: 'let c = 2;', new: "let c = '$&$1';" }, context());
    await expect(readFile(file, 'utf8')).resolves.toContain("let c = '$&$1';");
  });

  it('replaces every occurrence with replaceAll', async () => {
    await expect(
      fileEditTool.execute({ path: 'a.ts', old: '= 1;', new: '= 9;', replaceAll: true }, context()),
    ).resolves.toMatchObject({
      replacements: 2,
    });
    await expect(readFile(file, 'utf8')).resolves.toBe('const a = 9;\nconst b = 9;\nlet c = 2;\n');
  });

  it.each([
    ['old text not found', { old: 'missing', new: 'x' }, /not found in a\.ts/],
    ['ambiguous old text', { old: '= 1;', new: '= 9;' }, /occurs 2 times in a\.ts.*replaceAll/],
    ['old equal to new', { old: 'let', new: 'let' }, /identical/],
  ])('%s fails with edit_failed and leaves the file alone', async (_case, edit, message) => {
    await expect(fileEditTool.execute({ path: 'a.ts', ...edit }, context())).rejects.toMatchObject({
      code: 'edit_failed',
      message: expect.stringMatching(message),
    });
    await expect(readFile(file, 'utf8')).resolves.toBe('const a = 1;\nconst b = 1;\nlet c = 2;\n');
  });

  it.each([
    ['missing.ts', 'not_found'],
    ['../a.ts', 'outside_workspace'],
  ])('%s fails with %s', async (path, code) => {
    await expect(fileEditTool.execute({ path, old: 'a', new: 'b' }, context())).rejects.toMatchObject({ code });
  });

  it('rejects an empty old text at validation', () => {
    expect(fileEditTool.input.safeParse({ path: 'a.ts', old: '', new: 'x' }).success).toBe(false);
  });
});
