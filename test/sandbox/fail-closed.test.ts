/*
 * The sandbox fails closed, through the engine: requests that ask for less sandbox than the
 * operator allowed, or for a workspace that could reach the data directory or every session's
 * workspace, are refused at admission; without a working bubblewrap, commands are refused
 * unless the operator chose unsandboxed execution; and restart-only [sandbox] keys changed by
 * a reload do not apply before a restart.
 */
import { chmod, mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PartialConfig } from '../../src/config/index.js';
import { createEngine, type Engine, type RunEvent } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { commandUser, hasBwrap } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';

const bwrap = await hasBwrap('the fail-closed tests of restart-only [sandbox] keys', commandUser());

let base: string;
let dataDir: string;
let workspaceRoot: string;
const engines: Engine[] = [];

const tempDir = tempDirs('switchyard-fail-closed-', 'afterAll');

beforeAll(async () => {
  base = await realpath(await tempDir());
  // A server running as root runs commands as an unprivileged user, who must reach the workspaces.
  await chmod(base, 0o755);
  dataDir = join(base, 'data');
  workspaceRoot = join(base, 'workspaces');
  await mkdir(dataDir);
});
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
});

async function engineWith(
  sandbox: PartialConfig['sandbox'],
  script = scriptedModel([{ text: 'done' }]),
): Promise<Engine> {
  const engine = await createEngine({
    config: { store: { kind: 'memory', dir: dataDir }, sandbox: { workspace_root: workspaceRoot, ...sandbox } },
    models: { scripted: script },
  });
  engines.push(engine);
  return engine;
}

/** A model that runs one bash command, then answers. */
const oneCommand = (command: string) =>
  scriptedModel([{ toolCalls: [{ name: 'bash', args: { command } }] }, { text: 'done' }]);

type ToolFinished = Extract<RunEvent, { type: 'tool.finished' }>;

async function toolResult(engine: Engine, sessionId: string): Promise<{ finished: ToolFinished; events: RunEvent[] }> {
  const { runId } = await engine.submit({ sessionId, input: 'go' });
  await engine.wait(runId);
  const events = await engine.history(runId);
  const finished = events.find((event): event is ToolFinished => event.type === 'tool.finished');
  if (finished === undefined) throw new Error(`no tool.finished in ${events.map((e) => e.type).join(', ')}`);
  return { finished, events };
}

describe('admission refuses what the sandbox must not do', () => {
  it.each([
    ['the file-system root', () => '/', /file-system root cannot be a workspace/],
    ['the data directory', () => dataDir, /overlaps the data directory/],
    ['a directory inside the data directory', () => join(dataDir, 'inside'), /overlaps the data directory/],
    ['a directory that contains the data directory', () => base, /overlaps the data directory/],
    ["the workspace root (every session's workspace)", () => workspaceRoot, /contains the workspace root/],
  ])('a workspace that is %s: invalid_request', async (_what, workspace, message) => {
    const engine = await engineWith({});
    const attempt = engine.submit({ sessionId: 's', input: 'x', workspace: workspace() });
    await expect(attempt).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(attempt).rejects.toThrow(message);
  });

  it("a project directory elsewhere is fine, and so is a directory inside one session's workspace", async () => {
    const engine = await engineWith({});
    for (const workspace of [join(base, 'project'), join(workspaceRoot, 'abc', 'sub')]) {
      const { runId } = await engine.submit({ sessionId: `s-${workspace.length}`, input: 'x', workspace });
      expect(await engine.wait(runId)).toMatchObject({ state: 'completed' });
    }
  });

  it('asking for no sandbox is refused unless the operator allowed unsandboxed execution', async () => {
    const strict = await engineWith({});
    const attempt = strict.submit({ sessionId: 's', input: 'x', sandbox: { backend: 'none' } });
    await expect(attempt).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(attempt).rejects.toThrow(/allow_unsandboxed = true/);
    const lenient = await engineWith({ allow_unsandboxed: true });
    const { runId } = await lenient.submit({ sessionId: 's', input: 'x', sandbox: { backend: 'none' } });
    expect(await lenient.wait(runId)).toMatchObject({ state: 'completed' });
  });

  it('a config that picks no sandbox without the explicit opt-in does not start', async () => {
    await expect(engineWith({ backend: 'none' })).rejects.toMatchObject({ code: 'invalid_config' });
  });
});

describe('without a working bubblewrap, commands are refused unless the operator chose otherwise', () => {
  const missing = '/nonexistent/bin/bwrap';

  it('backend "auto": the command is a sandbox_unavailable error saying how to install bubblewrap, and does not run', async () => {
    const engine = await engineWith({ bwrap_path: missing }, oneCommand('touch ran'));
    const { finished, events } = await toolResult(engine, 'no-bwrap');
    expect(finished).toMatchObject({ ok: false, error: { code: 'sandbox_unavailable' } });
    expect(JSON.stringify(finished)).toMatch(/apt-get install bubblewrap/);
    expect(events.some((event) => event.type === 'sandbox.warning')).toBe(false);
  });

  it('allow_unsandboxed = true: it runs, with a sandbox.warning, and still without the server environment', async () => {
    process.env.SWITCHYARD_FAKE_API_KEY = 'sk-fail-closed-secret';
    try {
      const engine = await engineWith({ bwrap_path: missing, allow_unsandboxed: true }, oneCommand('env'));
      const { finished, events } = await toolResult(engine, 'allowed');
      expect(finished).toMatchObject({ ok: true, output: { sandbox: 'none', exitCode: 0 } });
      expect(JSON.stringify(finished)).not.toContain('sk-fail-closed-secret');
      expect(events.find((event) => event.type === 'sandbox.warning')).toMatchObject({
        message: expect.stringMatching(/running unsandboxed/),
      });
    } finally {
      delete process.env.SWITCHYARD_FAKE_API_KEY;
    }
  });
});

describe.skipIf(!bwrap)('restart-only [sandbox] keys stay as they were until a restart', () => {
  it('a reload that changes the workspace root, the bubblewrap path and the backend reports them not applied, and runs keep the old values', async () => {
    const engine = await engineWith({}, oneCommand('pwd'));
    const reload = engine.reconfigure({
      sandbox: {
        workspace_root: join(base, 'elsewhere'),
        bwrap_path: '/nonexistent/bin/bwrap',
        backend: 'none',
        allow_unsandboxed: true,
      },
    });
    expect(reload.applied).toEqual([]);
    expect(reload.restartRequired.sort()).toEqual([
      'sandbox.allow_unsandboxed',
      'sandbox.backend',
      'sandbox.bwrap_path',
      'sandbox.workspace_root',
    ]);
    const { finished } = await toolResult(engine, 'after-reload');
    expect(finished).toMatchObject({
      ok: true,
      output: {
        sandbox: 'bwrap',
        exitCode: 0,
        output: expect.stringMatching(new RegExp(`^${workspaceRoot}/[0-9a-f]{16}\\n$`)),
      },
    });
    // What is in effect is what a later reload starts from.
    expect(engine.reconfigure({ execution: { max_iterations: 7 } })).toEqual({
      applied: ['execution.max_iterations'],
      restartRequired: [],
    });
  });
});
