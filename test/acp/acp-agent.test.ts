/*
 * `switchyard acp` as an editor sees it: the SDK's client side against the real command in a
 * child process, on the file store of a temporary data dir and a scripted model (from the
 * config file) that reads two files in parallel and edits a third. One child serves the
 * session, then a second one on the same data dir loads it again.
 */
import { readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxWorkspace } from '../sandbox/sandbox-workspace.js';
import { methods, type SessionUpdate, type ToolCall, type ToolCallUpdate } from '@agentclientprotocol/sdk';
import { choose, parseFrame, spawnAcp, SPAWN_TIMEOUT, type AcpChild } from './acp-child.js';
import { tempDirs } from '../support/temp-dirs.js';

let dataDir: string;
let workspace: string;
let configFile: string;
let agent: AcpChild;
let sessionId: string;

const SCRIPT = [
  {
    toolCalls: [
      { name: 'file_read', args: { path: 'a.txt' } },
      { name: 'file_read', args: { path: 'b.txt' } },
      { name: 'file_edit', args: { path: 'c.txt', old: 'draft', new: 'final' } },
    ],
  },
  { text: 'Edited c.txt.' },
];

const tempDir = tempDirs('switchyard-acp-data-', 'afterAll');

beforeAll(async () => {
  dataDir = await tempDir();
  // realpath: the engine resolves the workspace; the temp dir may sit behind a symlink.
  workspace = await realpath(await sandboxWorkspace('switchyard-acp-project-'));
  await writeFile(join(workspace, 'a.txt'), 'alpha\n');
  await writeFile(join(workspace, 'b.txt'), 'beta\n');
  await resetC();
  const script = join(dataDir, 'script.json');
  await writeFile(script, JSON.stringify(SCRIPT));
  configFile = join(dataDir, 'switchyard.toml');
  await writeFile(configFile, `[models.scripted]\nkind = "scripted"\nscript = ${JSON.stringify(script)}\n`);
  agent = spawnAcp(['--config', configFile, '--data-dir', dataDir]);
});

afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function resetC(): Promise<void> {
  return writeFile(join(workspace, 'c.txt'), 'first draft\n');
}

/** The updates of one session from index `from` on. */
function updatesOf(child: AcpChild, session: string, from = 0): SessionUpdate[] {
  return child.updates
    .slice(from)
    .filter((n) => n.sessionId === session)
    .map((n) => n.update);
}

function toolCalls(updates: SessionUpdate[]): (ToolCall & { sessionUpdate: 'tool_call' })[] {
  return updates.filter((u): u is ToolCall & { sessionUpdate: 'tool_call' } => u.sessionUpdate === 'tool_call');
}

function statusesOf(updates: SessionUpdate[], toolCallId: string): string[] {
  return updates.flatMap((u) =>
    (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') &&
    u.toolCallId === toolCallId &&
    u.status != null
      ? [u.status]
      : [],
  );
}

function prompt(child: AcpChild, session: string, text: string) {
  return child.connection.agent.request(methods.agent.session.prompt, {
    sessionId: session,
    prompt: [{ type: 'text', text }],
  });
}

describe('switchyard acp, in process', () => {
  it(
    'initialize advertises session loading, text and resource links, and stdio MCP servers only',
    async () => {
      const answer = await agent.initialize();
      expect(answer).toMatchObject({
        protocolVersion: 1,
        agentCapabilities: {
          loadSession: true,
          promptCapabilities: { image: false, audio: false, embeddedContext: false },
          mcpCapabilities: { http: false, sse: false },
        },
        agentInfo: { name: 'switchyard' },
      });
    },
    SPAWN_TIMEOUT,
  );

  it('session/new opens a session in the editor cwd, in the configured tier as its mode', async () => {
    const created = await agent.connection.agent.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    sessionId = created.sessionId;
    expect(created.modes).toEqual({
      currentModeId: 'auto',
      availableModes: ['plan', 'ask', 'auto', 'full'].map((id) =>
        expect.objectContaining({ id, name: expect.any(String) }),
      ),
    });
  });

  it('a prompt runs: two reads in parallel and an edit, as tool calls with kinds, locations and a diff', async () => {
    const from = agent.updates.length;
    const answer = await prompt(agent, sessionId, 'edit c');
    expect(answer).toEqual({ stopReason: 'end_turn' });
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('first final\n');

    const updates = updatesOf(agent, sessionId, from);
    const calls = toolCalls(updates);
    expect(calls.map((c) => [c.title, c.kind, c.locations, c.status])).toEqual([
      ['Read a.txt', 'read', [{ path: join(workspace, 'a.txt') }], 'pending'],
      ['Read b.txt', 'read', [{ path: join(workspace, 'b.txt') }], 'pending'],
      ['Edit c.txt', 'edit', [{ path: join(workspace, 'c.txt') }], 'pending'],
    ]);
    expect(calls[2]!.content).toEqual([
      { type: 'diff', path: join(workspace, 'c.txt'), oldText: 'draft', newText: 'final' },
    ]);
    // Announced together, before any of them runs; each goes pending -> in_progress -> completed.
    const firstProgress = updates.findIndex((u) => u.sessionUpdate === 'tool_call_update');
    expect(updates.slice(0, firstProgress).filter((u) => u.sessionUpdate === 'tool_call')).toHaveLength(3);
    for (const call of calls)
      expect(statusesOf(updates, call.toolCallId)).toEqual(['pending', 'in_progress', 'completed']);
    // The batch is one group: the plan says the three run in parallel.
    const plans = updates.filter((u) => u.sessionUpdate === 'plan');
    expect(plans[0]).toEqual({
      sessionUpdate: 'plan',
      entries: [
        { content: 'in parallel, Read a.txt · Read b.txt · Edit c.txt', priority: 'medium', status: 'pending' },
      ],
    });
    expect(plans.at(-1)).toMatchObject({ entries: [{ status: 'completed' }] });
    // What the reads returned, and the edit's diff once it is done.
    const completed = (id: string) =>
      updates.find(
        (u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === id && u.status === 'completed',
      ) as ToolCallUpdate;
    expect(completed(calls[0]!.toolCallId).content).toEqual([
      { type: 'content', content: { type: 'text', text: '```\nalpha\n```' } },
    ]);
    expect(completed(calls[2]!.toolCallId).content).toEqual(calls[2]!.content);
    // The answer comes last, after every call finished.
    const lastCompleted = updates
      .map((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed')
      .lastIndexOf(true);
    const message = updates.findIndex((u) => u.sessionUpdate === 'agent_message_chunk');
    expect(message).toBeGreaterThan(lastCompleted);
    expect(updates[message]).toEqual({
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'text', text: 'Edited c.txt.' },
    });
  });

  it('in ask mode the edit asks; "allow always" runs it, and the identical call later runs without asking', async () => {
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'ask' });
    await resetC();
    agent.answerPermissions(choose('allow_always'));
    const asked = agent.permissionRequests.length;
    expect(await prompt(agent, sessionId, 'edit c again')).toEqual({ stopReason: 'end_turn' });
    // Only the edit asks: the reads are read-only.
    const requests = agent.permissionRequests.slice(asked);
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({
      sessionId,
      toolCall: {
        title: 'Edit c.txt',
        kind: 'edit',
        status: 'pending',
        content: [{ type: 'diff', oldText: 'draft', newText: 'final' }],
      },
    });
    expect(requests[0]!.options.map((o) => [o.optionId, o.kind])).toEqual([
      ['allow_once', 'allow_once'],
      ['allow_always', 'allow_always'],
      ['reject_once', 'reject_once'],
      ['reject_always', 'reject_always'],
    ]);
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('first final\n');

    await resetC();
    agent.answerPermissions(choose('reject_once'));
    expect(await prompt(agent, sessionId, 'and once more')).toEqual({ stopReason: 'end_turn' });
    expect(agent.permissionRequests).toHaveLength(asked + 1);
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('first final\n');
  });

  it('a rejection is a denial the model sees; "reject always" refuses the identical call without asking', async () => {
    const other = await agent.connection.agent.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId: other.sessionId, modeId: 'ask' });
    await resetC();
    const editOutcome = async (answer: Parameters<typeof choose>[0]) => {
      agent.answerPermissions(choose(answer));
      const from = agent.updates.length;
      expect(await prompt(agent, other.sessionId, 'edit c')).toEqual({ stopReason: 'end_turn' });
      const updates = updatesOf(agent, other.sessionId, from);
      const edit = toolCalls(updates).find((c) => c.kind === 'edit')!;
      return updates.find(
        (u) => u.sessionUpdate === 'tool_call_update' && u.toolCallId === edit.toolCallId && u.status === 'failed',
      );
    };
    const asked = agent.permissionRequests.length;
    expect(await editOutcome('reject_once')).toMatchObject({
      content: [{ content: { text: expect.stringMatching(/^approval_denied: /) } }],
    });
    expect(await editOutcome('reject_always')).toMatchObject({ status: 'failed' });
    expect(agent.permissionRequests).toHaveLength(asked + 2);
    expect(await editOutcome('allow_once')).toMatchObject({
      content: [{ content: { text: expect.stringMatching(/^approval_denied: /) } }],
    });
    expect(agent.permissionRequests).toHaveLength(asked + 2);
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('first draft\n');
  });

  it('a malformed frame gets a JSON-RPC error, and the agent keeps serving', async () => {
    agent.writeRaw('{"jsonrpc": "2.0", "id": 41, "method": "session/prompt", "params": ');
    expect(await agent.nextFrame((f) => f['id'] === null)).toMatchObject({ error: { code: -32700 } });
    agent.writeRaw(
      JSON.stringify({ jsonrpc: '2.0', id: 'bad-params', method: 'session/prompt', params: { sessionId: 42 } }),
    );
    expect(await agent.nextFrame((f) => f['id'] === 'bad-params')).toMatchObject({ error: { code: -32602 } });
    agent.writeRaw(JSON.stringify({ jsonrpc: '2.0', id: 'no-method', method: 'session/teleport', params: {} }));
    expect(await agent.nextFrame((f) => f['id'] === 'no-method')).toMatchObject({ error: { code: -32601 } });
    agent.writeRaw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'no-session',
        method: 'session/prompt',
        params: { sessionId: 'nope', prompt: [] },
      }),
    );
    expect(await agent.nextFrame((f) => f['id'] === 'no-session')).toMatchObject({ error: { code: -32002 } });
    agent.writeRaw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 'bad-mode',
        method: 'session/set_mode',
        params: { sessionId, modeId: 'yolo' },
      }),
    );
    expect(await agent.nextFrame((f) => f['id'] === 'bad-mode')).toMatchObject({ error: { code: -32602 } });

    await resetC();
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'auto' });
    expect(await prompt(agent, sessionId, 'still there?')).toEqual({ stopReason: 'end_turn' });
  });

  it(
    'exits 0 when the editor closes stdin, having written protocol frames only to stdout',
    async () => {
      const { code, stderr } = await agent.stop();
      expect(code).toBe(0);
      // The engine reported no unexpected error (they go to stderr with this prefix).
      expect(stderr).not.toContain('switchyard acp: engine:');
      expect(agent.frames.length).toBeGreaterThan(0);
      for (const line of agent.frames) expect(parseFrame(line)).toMatchObject({ jsonrpc: '2.0' });
    },
    SPAWN_TIMEOUT,
  );

  it(
    'after a restart, session/load replays the stored conversation as updates, then the session goes on',
    async () => {
      const restarted = spawnAcp(['--config', configFile, '--data-dir', dataDir]);
      await restarted.initialize();
      const loaded = await restarted.connection.agent.request(methods.agent.session.load, {
        sessionId,
        cwd: workspace,
        mcpServers: [],
      });
      // The last prompt ran in auto mode.
      expect(loaded).toMatchObject({ modes: { currentModeId: 'auto' } });
      const replayed = updatesOf(restarted, sessionId);
      const users = replayed
        .filter((u) => u.sessionUpdate === 'user_message_chunk')
        .map((u) => (u as { content: { text: string } }).content.text);
      expect(users).toEqual(['edit c', 'edit c again', 'and once more', 'still there?']);
      expect(replayed.filter((u) => u.sessionUpdate === 'agent_message_chunk')).toHaveLength(4);
      const calls = toolCalls(replayed);
      expect(calls.map((c) => c.kind)).toEqual(Array.from({ length: 4 }, () => ['read', 'read', 'edit']).flat());
      expect(calls[2]!.content).toEqual([
        { type: 'diff', path: join(workspace, 'c.txt'), oldText: 'draft', newText: 'final' },
      ]);
      // Each replayed call ends where it ended: the second run's edit was allowed, the third was not asked and ran too.
      for (const call of calls) expect(statusesOf(replayed, call.toolCallId).at(-1)).toBe('completed');
      expect(replayed[0]).toEqual({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'edit c' } });

      await resetC();
      const from = restarted.updates.length;
      expect(await prompt(restarted, sessionId, 'after the restart')).toEqual({ stopReason: 'end_turn' });
      expect(toolCalls(updatesOf(restarted, sessionId, from))).toHaveLength(3);
      expect((await restarted.stop()).code).toBe(0);
    },
    SPAWN_TIMEOUT,
  );
});
