/*
 * The probes of file_write, file_edit and apply_patch (docs/durable-runs.md), against real
 * files: before the call ran they answer not_done, after it ran done with the result the call
 * gave, and where the files cannot tell (both texts there, a patch half applied) unknown —
 * never not_done for an effect that is there, which would make the resume apply it twice.
 */
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { applyPatchTool, fileEditTool, fileWriteTool } from '../../src/tools/builtins/index.js';
import { reconcileCall, replayRuleOf, type ReconcileAnswer } from '../../src/tools/replay.js';
import type { AnyTool, ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-replay-');
let workspace: string;

const context = (): ToolContext => ({
  signal: new AbortController().signal,
  workspace,
  callId: 'c1',
  runId: 'r1',
  sessionId: 's1',
});

/** What the resume would learn of this call now. */
async function probe(tool: AnyTool, args: unknown): Promise<ReconcileAnswer> {
  const rule = replayRuleOf(tool, args, { workspace, sessionId: 's1' });
  if (typeof rule !== 'object') throw new Error(`${tool.name} has no probe`);
  return reconcileCall(tool, rule, args, context());
}

const file = (name: string) => join(workspace, name);

beforeEach(async () => {
  workspace = await realpath(await tempDir());
});

describe('file_write probe', () => {
  const args = { path: 'dir/a.txt', content: 'new content\n' };

  it('not done before the write, done with its result after it, not done once the content differs', async () => {
    await expect(probe(fileWriteTool, args)).resolves.toEqual({ state: 'not_done' });
    await mkdir(file('dir'));
    await writeFile(file('dir/a.txt'), 'old content\n');
    await expect(probe(fileWriteTool, args)).resolves.toEqual({ state: 'not_done' });
    const result = await fileWriteTool.execute(args, context());
    await expect(probe(fileWriteTool, args)).resolves.toEqual({ state: 'done', result });
    await writeFile(file('dir/a.txt'), 'new content\nand more\n');
    await expect(probe(fileWriteTool, args)).resolves.toEqual({ state: 'not_done' });
  });

  it('an empty file written empty is done', async () => {
    const empty = { path: 'e.txt', content: '' };
    await expect(probe(fileWriteTool, empty)).resolves.toEqual({ state: 'not_done' });
    const result = await fileWriteTool.execute(empty, context());
    await expect(probe(fileWriteTool, empty)).resolves.toEqual({ state: 'done', result });
  });

  it('a path outside the workspace is unknown (the probe fails), never done', async () => {
    await expect(probe(fileWriteTool, { path: '../outside.txt', content: 'x' })).resolves.toMatchObject({
      state: 'unknown',
    });
  });
});

describe('file_edit probe', () => {
  beforeEach(async () => {
    await writeFile(file('a.ts'), 'const a = 1;\nconst b = 1;\nlet c = 2;\n');
  });

  it('not done before, done with the edit result after, and a second run is not needed', async () => {
    const args = { path: 'a.ts', old: 'let c = 2;', new: 'let c = 3;' };
    await expect(probe(fileEditTool, args)).resolves.toEqual({ state: 'not_done' });
    const result = await fileEditTool.execute(args, context());
    await expect(probe(fileEditTool, args)).resolves.toEqual({ state: 'done', result });
  });

  it('replaceAll: done with the number of replacements the file shows', async () => {
    const args = { path: 'a.ts', old: '= 1;', new: '= 9;', replaceAll: true };
    await expect(probe(fileEditTool, args)).resolves.toEqual({ state: 'not_done' });
    const result = await fileEditTool.execute(args, context());
    expect(result).toEqual({ path: 'a.ts', replacements: 2 });
    await expect(probe(fileEditTool, args)).resolves.toEqual({ state: 'done', result });
  });

  it('a deletion (empty new) is decided by the old text alone', async () => {
    const args = { path: 'a.ts', old: 'const b = 1;\n', new: '' };
    await expect(probe(fileEditTool, args)).resolves.toEqual({ state: 'not_done' });
    await fileEditTool.execute(args, context());
    await expect(probe(fileEditTool, args)).resolves.toMatchObject({ state: 'done' });
  });

  it('a new text that contains the old one is unknown after the edit: running it again would apply it twice', async () => {
    const args = { path: 'a.ts', old: 'let c = 2;', new: 'let c = 2; // checked' };
    await expect(probe(fileEditTool, args)).resolves.toEqual({ state: 'not_done' });
    await fileEditTool.execute(args, context());
    await expect(probe(fileEditTool, args)).resolves.toMatchObject({ state: 'unknown' });
  });

  it('a missing file is not done (the edit needs it; running it again fails as the first run would)', async () => {
    await expect(probe(fileEditTool, { path: 'gone.ts', old: 'a', new: 'b' })).resolves.toEqual({
      state: 'not_done',
    });
  });
});

describe('apply_patch probe', () => {
  const patch = [
    '*** Begin Patch',
    '*** Add File: added.txt',
    '+fresh',
    '*** Update File: src/a.ts',
    '@@',
    ' line 1',
    '-line 2',
    '+line two',
    ' line 3',
    '*** Update File: old.ts',
    '*** Move to: moved/new.ts',
    '@@',
    '-x = 1',
    '+x = 2',
    '*** Delete File: gone.txt',
    '*** End Patch',
  ].join('\n');

  beforeEach(async () => {
    await mkdir(file('src'));
    await writeFile(file('src/a.ts'), 'line 1\nline 2\nline 3\n');
    await writeFile(file('old.ts'), 'x = 1\n');
    await writeFile(file('gone.txt'), 'bye\n');
  });

  it('not done before, done with the files result after', async () => {
    await expect(probe(applyPatchTool, { patch })).resolves.toEqual({ state: 'not_done' });
    const result = await applyPatchTool.execute({ patch }, context());
    await expect(probe(applyPatchTool, { patch })).resolves.toEqual({ state: 'done', result });
    // The probe only looked: the files are as the one run left them.
    expect(await readFile(file('src/a.ts'), 'utf8')).toBe('line 1\nline two\nline 3\n');
  });

  it('a patch half applied (its writes landed, its deletes not) is unknown', async () => {
    await writeFile(file('added.txt'), 'fresh\n');
    await writeFile(file('src/a.ts'), 'line 1\nline two\nline 3\n');
    await mkdir(file('moved'));
    await writeFile(file('moved/new.ts'), 'x = 2\n');
    // old.ts and gone.txt are still there, as after a crash between apply_patch's writes and deletes.
    const answer = await probe(applyPatchTool, { patch });
    expect(answer.state).toBe('unknown');
  });

  it('one file changed by someone else since: unknown, not not_done', async () => {
    await writeFile(file('src/a.ts'), 'something else entirely\n');
    await expect(probe(applyPatchTool, { patch })).resolves.toMatchObject({ state: 'unknown' });
  });

  it('a patch that does not parse is not done (it never changed anything)', async () => {
    await expect(probe(applyPatchTool, { patch: 'not a patch' })).resolves.toEqual({ state: 'not_done' });
  });

  it('an added file with other content is unknown', async () => {
    const add = '*** Begin Patch\n*** Add File: n.txt\n+mine\n*** End Patch';
    await writeFile(file('n.txt'), 'theirs\n');
    await expect(probe(applyPatchTool, { patch: add })).resolves.toMatchObject({ state: 'unknown' });
  });
});
