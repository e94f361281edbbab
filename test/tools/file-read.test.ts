import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { FILE_READ_MAX_BYTES, fileReadTool } from '../../src/tools/builtins/index.js';
import type { ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

let base: string;
let workspace: string;

function context(): ToolContext {
  return { signal: new AbortController().signal, workspace, callId: 'c1', runId: 'r1', sessionId: 's1' };
}

const tempDir = tempDirs('switchyard-read-', 'afterEach');

beforeEach(async () => {
  base = await realpath(await tempDir());
  workspace = join(base, 'w');
  await mkdir(join(workspace, 'src'), { recursive: true });
  await writeFile(join(workspace, 'src', 'a.ts'), 'one\ntwo\nthree\nfour\n');
});

describe('file_read', () => {
  it('is read-only and claims a shared read of the resolved path', () => {
    expect(fileReadTool.readOnly).toBe(true);
    expect(
      fileReadTool.concurrencyClaim?.({ path: 'src/../src/a.ts' }, { workspace: '/w', sessionId: 's1' }),
    ).toStrictEqual({
      kind: 'shared',
      reads: ['/w/src/a.ts'],
    });
  });

  it('reads a whole file', async () => {
    await expect(fileReadTool.execute({ path: 'src/a.ts' }, context())).resolves.toStrictEqual({
      path: 'src/a.ts',
      content: 'one\ntwo\nthree\nfour\n',
      totalLines: 4,
    });
  });

  it.each([
    [{ offset: 2 }, 'two\nthree\nfour\n'],
    [{ offset: 2, limit: 2 }, 'two\nthree\n'],
    [{ limit: 1 }, 'one\n'],
    [{ offset: 9 }, ''],
  ])('reads a range of lines %j', async (range, content) => {
    const output = await fileReadTool.execute({ path: 'src/a.ts', ...range }, context());
    expect(output).toMatchObject({ content, totalLines: 4 });
  });

  it('keeps a missing final newline missing', async () => {
    await writeFile(join(workspace, 'b.txt'), 'x\ny');
    await expect(fileReadTool.execute({ path: 'b.txt', offset: 2 }, context())).resolves.toMatchObject({
      content: 'y',
      totalLines: 2,
    });
  });

  it('caps large content on a character boundary with a marker that says where to continue', async () => {
    const line = 'é'.repeat(99) + '\n';
    await writeFile(join(workspace, 'big.txt'), line.repeat(2000));
    const output = (await fileReadTool.execute({ path: 'big.txt' }, context())) as {
      content: string;
      truncated?: boolean;
    };
    expect(output.truncated).toBe(true);
    const [kept, marker] = output.content.split('\n[… truncated');
    expect(Buffer.byteLength(kept ?? '')).toBeLessThanOrEqual(FILE_READ_MAX_BYTES);
    expect(kept).not.toContain('\uFFFD');
    const fullLines = Math.floor(FILE_READ_MAX_BYTES / Buffer.byteLength(line));
    expect(marker).toContain(`continue with offset=${fullLines + 1}`);
  });

  it.each([
    ['missing.txt', 'not_found'],
    ['src', 'is_directory'],
    ['../outside.txt', 'outside_workspace'],
    ['/etc/hostname', 'outside_workspace'],
  ])('%s fails with %s', async (path, code) => {
    await expect(fileReadTool.execute({ path }, context())).rejects.toMatchObject({ name: 'ToolError', code });
  });

  it('refuses to read through a symlink that points outside', async () => {
    await writeFile(join(base, 'secret.txt'), 'secret');
    await symlink(join(base, 'secret.txt'), join(workspace, 'link.txt'));
    await expect(fileReadTool.execute({ path: 'link.txt' }, context())).rejects.toMatchObject({
      code: 'outside_workspace',
    });
  });

  it('refuses binary files', async () => {
    await writeFile(join(workspace, 'blob.bin'), Buffer.from([1, 2, 0, 3]));
    await expect(fileReadTool.execute({ path: 'blob.bin' }, context())).rejects.toMatchObject({ code: 'binary_file' });
  });

  it('has a strict input schema', () => {
    expect(fileReadTool.input.safeParse({ path: 'a', extra: 1 }).success).toBe(false);
    expect(fileReadTool.input.safeParse({ path: 'a', offset: 0 }).success).toBe(false);
    expect(fileReadTool.input.safeParse({ path: 'a', offset: 1, limit: 5 }).success).toBe(true);
  });
});
