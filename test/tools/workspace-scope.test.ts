import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ensureEntryInsideWorkspace,
  ensureInsideWorkspace,
  resolveInWorkspace,
  workspaceClaimPath,
  workspaceRelative,
} from '../../src/sandbox/workspace-scope.js';
import { ToolError } from '../../src/tools/tool.js';

describe('resolveInWorkspace (lexical)', () => {
  const cases: [path: string, expected: string][] = [
    ['a.txt', '/w/a.txt'],
    ['./src/../b.txt', '/w/b.txt'],
    ['src/', '/w/src'],
    ['.', '/w'],
    ['../x', '/x'],
    ['/etc/passwd', '/etc/passwd'],
    ['/w/deep/../a', '/w/a'],
  ];
  it.each(cases)('%s -> %s', (path, expected) => {
    expect(resolveInWorkspace('/w', path)).toBe(expected);
  });

  it('workspaceClaimPath is the same resolution, from a claim context', () => {
    expect(workspaceClaimPath({ workspace: '/w', sessionId: 's1' }, 'src/../a.ts')).toBe('/w/a.ts');
  });

  it('workspaceRelative names paths for outputs', () => {
    expect(workspaceRelative('/w', '/w/src/a.ts')).toBe('src/a.ts');
    expect(workspaceRelative('/w', '.')).toBe('.');
  });
});

describe('ensureInsideWorkspace', () => {
  let base: string;
  let workspace: string;
  let outside: string;

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'switchyard-scope-')));
    workspace = join(base, 'w');
    outside = join(base, 'outside');
    await mkdir(join(workspace, 'src'), { recursive: true });
    await mkdir(outside);
    await writeFile(join(workspace, 'src', 'a.ts'), 'a');
    await writeFile(join(outside, 'secret.txt'), 'secret');
  });

  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  async function refusal(path: string, ws = workspace): Promise<ToolError> {
    const error = await ensureInsideWorkspace(ws, path).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('outside_workspace');
    return error as ToolError;
  }

  it('resolves a relative path to its real absolute path', async () => {
    await expect(ensureInsideWorkspace(workspace, 'src/a.ts')).resolves.toBe(join(workspace, 'src', 'a.ts'));
  });

  it('accepts the workspace itself', async () => {
    await expect(ensureInsideWorkspace(workspace, '.')).resolves.toBe(workspace);
  });

  it('accepts an absolute path inside the workspace', async () => {
    await expect(ensureInsideWorkspace(workspace, join(workspace, 'src'))).resolves.toBe(join(workspace, 'src'));
  });

  it('accepts a non-existing nested path inside', async () => {
    await expect(ensureInsideWorkspace(workspace, 'new/deeper/file.ts')).resolves.toBe(join(workspace, 'new', 'deeper', 'file.ts'));
  });

  it('accepts `..` that stays inside', async () => {
    await expect(ensureInsideWorkspace(workspace, 'src/../src/a.ts')).resolves.toBe(join(workspace, 'src', 'a.ts'));
  });

  it('refuses `..` escapes, naming the path, where it resolves and the workspace', async () => {
    const error = await refusal('../outside/secret.txt');
    expect(error.message).toBe(`../outside/secret.txt resolves to ${join(outside, 'secret.txt')}, outside the workspace ${workspace}`);
  });

  it('refuses an absolute path outside', async () => {
    await refusal('/etc/passwd');
  });

  it('refuses a symlink inside the workspace that points outside', async () => {
    await symlink(outside, join(workspace, 'link'));
    await refusal('link/secret.txt');
    await refusal('link/not-yet.txt');
    await refusal('link');
  });

  it('refuses a dangling symlink whose target would be created outside', async () => {
    await symlink(join(outside, 'created-by-write.txt'), join(workspace, 'dangling'));
    await refusal('dangling');
  });

  it('accepts a symlink that points inside the workspace, returning its target', async () => {
    await symlink(join(workspace, 'src'), join(workspace, 'alias'));
    await expect(ensureInsideWorkspace(workspace, 'alias/a.ts')).resolves.toBe(join(workspace, 'src', 'a.ts'));
  });

  it('works when the workspace itself is reached through a symlink', async () => {
    const linked = join(base, 'linked-workspace');
    await symlink(workspace, linked);
    await expect(ensureInsideWorkspace(linked, 'src/a.ts')).resolves.toBe(join(workspace, 'src', 'a.ts'));
    await expect(ensureInsideWorkspace(linked, join(linked, 'new.ts'))).resolves.toBe(join(workspace, 'new.ts'));
    await refusal('../outside/secret.txt', linked);
  });

  it('compares component-wise: a sibling sharing a name prefix is outside', async () => {
    await mkdir(join(base, 'wx'));
    await refusal('../wx/file.txt');
    await refusal(join(base, 'wx'));
  });

  it('works for a workspace that does not exist yet', async () => {
    const fresh = join(base, 'fresh');
    await expect(ensureInsideWorkspace(fresh, 'a/b.txt')).resolves.toBe(join(fresh, 'a', 'b.txt'));
    await refusal('../w/src/a.ts', fresh);
  });

  it('a path below a regular file is placed lexically under it (the I/O then fails, not the scope)', async () => {
    await expect(ensureInsideWorkspace(workspace, 'src/a.ts/child')).resolves.toBe(join(workspace, 'src', 'a.ts', 'child'));
  });
});

describe('ensureEntryInsideWorkspace', () => {
  let base: string;

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'switchyard-entry-')));
    await mkdir(join(base, 'w'));
    await mkdir(join(base, 'outside'));
  });

  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('names a symlink itself, not its target, so deleting it stays inside', async () => {
    await symlink(join(base, 'outside'), join(base, 'w', 'link'));
    await expect(ensureEntryInsideWorkspace(join(base, 'w'), 'link')).resolves.toBe(join(base, 'w', 'link'));
  });

  it('still refuses entries whose parent lies outside', async () => {
    await expect(ensureEntryInsideWorkspace(join(base, 'w'), '../outside/x')).rejects.toMatchObject({ code: 'outside_workspace' });
  });
});
