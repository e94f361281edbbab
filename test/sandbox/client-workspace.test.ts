/*
 * A workspace a request names is used as it is, never handed over (docs/sandbox.md, "Whose
 * workspace"): a server running as root used to chown a client-named workspace to the sandbox
 * user at the first tool call, after which a sandboxed bash replaced root's file in it. These
 * tests attack exactly that, through the engine, with real directories and real bubblewrap.
 */
import { chown, mkdir, readFile, realpath, stat, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PartialConfig } from '../../src/config/index.js';
import { createEngine, type Engine, type RunEvent } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { makeWorkspace } from '../../src/sandbox/command-user.js';
import { commandUser, hasBwrap, isRoot } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';

const NOBODY = 65534;
const OTHER_USER = 4242;
const root = isRoot('the client workspace tests');
const bwrap = root && (await hasBwrap('the client workspace tests', commandUser()));

let base: string;
let workspaceRoot: string;
const engines: Engine[] = [];

const tempDir = tempDirs('switchyard-client-ws-', 'afterAll');

beforeAll(async () => {
  base = await realpath(await tempDir());
  await chmod(base, 0o755);
  workspaceRoot = join(base, 'workspaces');
});
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

type ToolFinished = Extract<RunEvent, { type: 'tool.finished' }>;

/** A model that reads the secret (read-only), then tries to replace it with a command. */
const readThenReplace = () =>
  scriptedModel([
    { toolCalls: [{ name: 'file_read', args: { path: 'secret' } }] },
    { toolCalls: [{ name: 'bash', args: { command: 'id -u; rm -f secret; echo replaced > secret' } }] },
    { text: 'done' },
  ]);

async function runIn(workspace: string, sandbox: PartialConfig['sandbox'] = {}): Promise<ToolFinished[]> {
  const engine = await createEngine({
    config: {
      store: { kind: 'memory', dir: join(base, 'data') },
      sandbox: { workspace_root: workspaceRoot, ...sandbox },
    },
    models: { scripted: readThenReplace() },
  });
  engines.push(engine);
  const { runId } = await engine.submit({ sessionId: `s-${engines.length}`, input: 'go', workspace });
  await engine.wait(runId);
  return (await engine.history(runId)).filter((event): event is ToolFinished => event.type === 'tool.finished');
}

/** A directory of `uid` holding root's file `secret`. */
async function victim(name: string, uid: number): Promise<string> {
  const dir = join(base, name);
  await mkdir(dir, { mode: 0o755 });
  await writeFile(join(dir, 'secret'), 'root only\n', { mode: 0o644 });
  await chown(dir, uid, uid);
  return dir;
}

describe.skipIf(!bwrap)('a server running as root never hands a client-named directory to the sandbox user', () => {
  it.each([['sandbox_user' as const], ['run_as_owner' as const]])(
    'client_workspaces = %s: a root-owned directory is refused at the first tool call; the file and the owner are unchanged',
    async (policy) => {
      const dir = await victim(`root-${policy}`, 0);
      const finished = await runIn(dir, { client_workspaces: policy });
      expect(finished).toHaveLength(2);
      for (const result of finished) {
        expect(result).toMatchObject({
          ok: false,
          error: { code: 'workspace_refused', message: expect.stringMatching(/belongs to root/) },
        });
      }
      expect(await readFile(join(dir, 'secret'), 'utf8')).toBe('root only\n');
      for (const path of [dir, join(dir, 'secret')]) expect((await stat(path)).uid, path).toBe(0);
    },
  );

  it("another user's directory is refused by default, and changes no owner", async () => {
    const dir = await victim('other-default', OTHER_USER);
    const finished = await runIn(dir);
    expect(finished.map((result) => result.error?.code)).toEqual(['workspace_refused', 'workspace_refused']);
    expect(finished[0]?.error?.message).toMatch(/client_workspaces = "run_as_owner"/);
    expect(await readFile(join(dir, 'secret'), 'utf8')).toBe('root only\n');
    expect((await stat(dir)).uid).toBe(OTHER_USER);
  });

  it("run_as_owner: commands in another user's directory run as that user, never as the sandbox user or root", async () => {
    const dir = await victim('other-allowed', OTHER_USER);
    const finished = await runIn(dir, { client_workspaces: 'run_as_owner' });
    expect(finished[0]).toMatchObject({ ok: true });
    // The owner may replace what lies in its own directory; that is what the operator allowed.
    expect(finished[1]).toMatchObject({
      ok: true,
      output: { exitCode: 0, output: expect.stringMatching(new RegExp(`^${OTHER_USER}\\n`)) },
    });
    expect((await stat(dir)).uid).toBe(OTHER_USER);
  });

  it("the sandbox user's own directory is a workspace like any other", async () => {
    const dir = await victim('sandbox-users', NOBODY);
    const finished = await runIn(dir);
    expect(finished[1]).toMatchObject({
      ok: true,
      output: { exitCode: 0, output: expect.stringMatching(new RegExp(`^${NOBODY}\\n`)) },
    });
    expect(await readFile(join(dir, 'secret'), 'utf8')).toBe('replaced\n');
  });

  it('a missing client-named directory outside the workspace root is not created (no planted directory of the sandbox user)', async () => {
    const dir = join(base, 'etc-like', 'profile.d');
    const finished = await runIn(dir);
    expect(finished[0]).toMatchObject({
      ok: false,
      error: {
        code: 'workspace_refused',
        message: expect.stringMatching(/creates workspaces only under \[sandbox\] workspace_root/),
      },
    });
    await expect(stat(join(base, 'etc-like'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe.skipIf(!root)(
  'makeWorkspace: the only directory a server running as root hands over is one it just created',
  () => {
    it("under the workspace root the new directory goes to the sandbox user and its new parents stay root's", async () => {
      const path = join(workspaceRoot, 'made', 'ws');
      await makeWorkspace(path, { workspaceRoot });
      expect((await stat(path)).uid).toBe(NOBODY);
      expect((await stat(join(workspaceRoot, 'made'))).uid).toBe(0);
    });

    it('an existing root-owned directory under the workspace root keeps its owner', async () => {
      const path = join(workspaceRoot, 'existing');
      await mkdir(path, { recursive: true });
      await makeWorkspace(path, { workspaceRoot });
      expect((await stat(path)).uid).toBe(0);
    });
  },
);
