import { existsSync } from 'node:fs';
import { mkdir, readFile, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { WorkspaceDir } from '../../src/sandbox/workspace-dir.js';
import { readWorkspaceFile, writeWorkspaceFile } from '../../src/sandbox/workspace-files.js';
import { resolveInWorkspace, workspaceClaimPath, workspaceRelative } from '../../src/sandbox/workspace-scope.js';
import { ToolError } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

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

describe('WorkspaceDir: where a path leads, resolved without the kernel following links', () => {
  let base: string;
  let workspace: string;
  let outside: string;

  const tempDir = tempDirs('switchyard-scope-', 'afterEach');

  beforeEach(async () => {
    base = await realpath(await tempDir());
    workspace = join(base, 'w');
    outside = join(base, 'outside');
    await mkdir(join(workspace, 'src'), { recursive: true });
    await mkdir(outside);
    await writeFile(join(workspace, 'src', 'a.ts'), 'a');
    await writeFile(join(outside, 'secret.txt'), 'secret');
  });

  const canonical = (path: string, ws = workspace) => WorkspaceDir.with(ws, undefined, (dir) => dir.canonical(path));
  const read = (path: string, ws = workspace) =>
    WorkspaceDir.with(ws, undefined, async (dir) => (await readWorkspaceFile(dir, path)).toString('utf8'));
  const write = (path: string, text: string, ws = workspace) =>
    WorkspaceDir.with(ws, undefined, (dir) => writeWorkspaceFile(dir, path, text));

  async function refusal(attempt: Promise<unknown>): Promise<ToolError> {
    const error = await attempt.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe('outside_workspace');
    return error as ToolError;
  }

  it('names a relative path by its place in the workspace', async () => {
    await expect(canonical('src/a.ts')).resolves.toBe('src/a.ts');
    await expect(read('src/a.ts')).resolves.toBe('a');
  });

  it('accepts the workspace itself', async () => {
    await expect(canonical('.')).resolves.toBe('');
  });

  it('accepts an absolute path inside the workspace', async () => {
    await expect(canonical(join(workspace, 'src'))).resolves.toBe('src');
  });

  it('accepts a non-existing nested path inside, and writing it creates the parents', async () => {
    await expect(canonical('new/deeper/file.ts')).resolves.toBe('new/deeper/file.ts');
    await write('new/deeper/file.ts', 'x');
    expect(await readFile(join(workspace, 'new', 'deeper', 'file.ts'), 'utf8')).toBe('x');
  });

  it('accepts `..` that stays inside', async () => {
    await expect(canonical('src/../src/a.ts')).resolves.toBe('src/a.ts');
  });

  it('refuses `..` escapes, naming the path, where it resolves and the workspace', async () => {
    const error = await refusal(read('../outside/secret.txt'));
    expect(error.message).toBe(
      `../outside/secret.txt resolves to ${join(outside, 'secret.txt')}, outside the workspace ${workspace}`,
    );
  });

  it('refuses an absolute path outside', async () => {
    await refusal(read('/etc/passwd'));
  });

  it('refuses a symlink inside the workspace that points outside, for reads, writes and creation below it', async () => {
    await symlink(outside, join(workspace, 'link'));
    await refusal(read('link/secret.txt'));
    await refusal(write('link/secret.txt', 'overwritten'));
    await refusal(write('link/not-yet.txt', 'created'));
    await refusal(canonical('link'));
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('secret');
    expect(existsSync(join(outside, 'not-yet.txt'))).toBe(false);
  });

  it('refuses a dangling symlink whose target would be created outside', async () => {
    await symlink(join(outside, 'created-by-write.txt'), join(workspace, 'dangling'));
    await refusal(write('dangling', 'x'));
    expect(existsSync(join(outside, 'created-by-write.txt'))).toBe(false);
  });

  it('refuses a relative symlink that climbs out', async () => {
    await symlink('../../outside', join(workspace, 'src', 'up'));
    await refusal(read('src/up/secret.txt'));
  });

  it('follows a symlink that points inside the workspace, absolute or relative', async () => {
    await symlink(join(workspace, 'src'), join(workspace, 'alias'));
    await symlink('src/a.ts', join(workspace, 'relative-alias'));
    await expect(canonical('alias/a.ts')).resolves.toBe('src/a.ts');
    await expect(read('alias/a.ts')).resolves.toBe('a');
    await expect(read('relative-alias')).resolves.toBe('a');
  });

  it('a dangling symlink inside that points inside creates its target', async () => {
    await symlink('src/made.ts', join(workspace, 'to-be'));
    await write('to-be', 'made');
    expect(await readFile(join(workspace, 'src', 'made.ts'), 'utf8')).toBe('made');
  });

  it('reports a loop of links instead of spinning', async () => {
    await symlink('b', join(workspace, 'a'));
    await symlink('a', join(workspace, 'b'));
    await expect(read('a')).rejects.toMatchObject({ code: 'symlink_loop' });
  });

  it('works when the workspace itself is reached through a symlink', async () => {
    const linked = join(base, 'linked-workspace');
    await symlink(workspace, linked);
    await expect(canonical('src/a.ts', linked)).resolves.toBe('src/a.ts');
    await expect(canonical(join(linked, 'new.ts'), linked)).resolves.toBe('new.ts');
    await expect(canonical(join(workspace, 'new.ts'), linked)).resolves.toBe('new.ts');
    await refusal(read('../outside/secret.txt', linked));
  });

  it('compares component-wise: a sibling sharing a name prefix is outside', async () => {
    await mkdir(join(base, 'wx'));
    await writeFile(join(base, 'wx', 'file.txt'), 'x');
    await refusal(read('../wx/file.txt'));
    await refusal(read(join(base, 'wx', 'file.txt')));
  });

  it('creates a workspace that does not exist yet', async () => {
    const fresh = join(base, 'fresh');
    await write('a/b.txt', 'b', fresh);
    expect(await readFile(join(fresh, 'a', 'b.txt'), 'utf8')).toBe('b');
    await refusal(read('../w/src/a.ts', fresh));
  });

  it('a path below a regular file fails as the I/O would (not a directory), not as an escape', async () => {
    await expect(read('src/a.ts/child')).rejects.toMatchObject({ code: 'ENOTDIR' });
  });

  it('opening a FIFO does not hang: it is refused as not a regular file', async () => {
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [join(workspace, 'pipe')]);
    await expect(read('pipe')).rejects.toMatchObject({ code: 'not_a_file' });
    await expect(write('pipe', 'x')).rejects.toMatchObject({ code: 'not_a_file' });
  });
});
