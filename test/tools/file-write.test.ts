import { mkdir, readFile, realpath, symlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { fileWriteTool } from '../../src/tools/builtins/index.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

let base: string;
let workspace: string;

function context(): ToolContext {
  return { signal: new AbortController().signal, workspace, callId: 'c1', runId: 'r1', sessionId: 's1' };
}

const tempDir = tempDirs('switchyard-write-', 'afterEach');

beforeEach(async () => {
  base = await realpath(await tempDir());
  workspace = join(base, 'w');
  await mkdir(workspace);
});

describe('file_write', () => {
  it('claims the resolved path exclusively', () => {
    expect(
      fileWriteTool.concurrencyClaim?.({ path: './src/a.ts', content: '' }, { workspace: '/w', sessionId: 's1' }),
    ).toStrictEqual({
      kind: 'exclusive',
      scope: { kind: 'paths', paths: ['/w/src/a.ts'] },
    });
  });

  it('creates a file and its parent directories, reporting UTF-8 bytes', async () => {
    await expect(fileWriteTool.execute({ path: 'a/b/c.txt', content: 'héllo\n' }, context())).resolves.toStrictEqual({
      path: 'a/b/c.txt',
      bytes: 7,
    });
    await expect(readFile(join(workspace, 'a', 'b', 'c.txt'), 'utf8')).resolves.toBe('héllo\n');
  });

  it('replaces an existing file', async () => {
    await fileWriteTool.execute({ path: 'x.txt', content: 'first' }, context());
    await fileWriteTool.execute({ path: 'x.txt', content: 'second' }, context());
    await expect(readFile(join(workspace, 'x.txt'), 'utf8')).resolves.toBe('second');
  });

  it.each(['../escape.txt', '/tmp/switchyard-escape.txt'])(
    'refuses %s as outside_workspace and writes nothing',
    async (path) => {
      await expect(fileWriteTool.execute({ path, content: 'x' }, context())).rejects.toMatchObject({
        code: 'outside_workspace',
      });
      await expect(readFile(resolve(workspace, path))).rejects.toMatchObject({ code: 'ENOENT' });
    },
  );

  it('refuses to write through a symlinked directory that points outside', async () => {
    await mkdir(join(base, 'outside'));
    await symlink(join(base, 'outside'), join(workspace, 'link'));
    await expect(fileWriteTool.execute({ path: 'link/new.txt', content: 'x' }, context())).rejects.toMatchObject({
      code: 'outside_workspace',
    });
    await expect(readFile(join(base, 'outside', 'new.txt'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('fails with is_directory when the path is a directory', async () => {
    await mkdir(join(workspace, 'dir'));
    await expect(fileWriteTool.execute({ path: 'dir', content: 'x' }, context())).rejects.toMatchObject({
      code: 'is_directory',
    });
  });
});
