/*
 * `switchyard acp` with an editor's own MCP server (a real stdio server, connected for one
 * session only) whose `hold` tool waits until the test releases it: the tool runs in that
 * session and is unknown in another, and session/cancel stops a prompt in the middle of it.
 */
import { existsSync } from 'node:fs';
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execPath } from 'node:process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { methods, type SessionUpdate } from '@agentclientprotocol/sdk';
import { parseFrame, spawnAcp, SPAWN_TIMEOUT, type AcpChild } from './acp-child.js';
import { tempDirs } from '../support/temp-dirs.js';

const HOLD_SERVER = fileURLToPath(new URL('./fixtures/hold-mcp-server.mjs', import.meta.url));

let dir: string;
let workspace: string;
let holdDir: string;
let agent: AcpChild;
let sessionId: string;

const tempDir = tempDirs('switchyard-acp-mcp-', 'afterAll');

beforeAll(async () => {
  dir = await tempDir();
  workspace = await realpath(await tempDir());
  holdDir = join(dir, 'hold');
  await writeFile(
    join(dir, 'script.json'),
    JSON.stringify([{ toolCalls: [{ name: 'hold__hold', args: {} }] }, { text: 'released' }]),
  );
  await mkdir(holdDir);
  const config = join(dir, 'switchyard.toml');
  await writeFile(
    config,
    `[store]\nkind = "memory"\n\n[models.scripted]\nkind = "scripted"\nscript = ${JSON.stringify(join(dir, 'script.json'))}\n`,
  );
  agent = spawnAcp(['--config', config]);
});

function prompt(session: string, text: string) {
  return agent.connection.agent.request(methods.agent.session.prompt, {
    sessionId: session,
    prompt: [{ type: 'text', text }],
  });
}

const isHoldRunning = (update: SessionUpdate) =>
  update.sessionUpdate === 'tool_call_update' && update.status === 'in_progress';

describe("switchyard acp with the editor's MCP server", () => {
  it(
    "connects the editor's MCP server for its session: the model's call to its tool runs there",
    async () => {
      await agent.initialize();
      const created = await agent.connection.agent.request(methods.agent.session.new, {
        cwd: workspace,
        mcpServers: [
          { name: 'hold', command: execPath, args: [HOLD_SERVER], env: [{ name: 'HOLD_DIR', value: holdDir }] },
        ],
      });
      sessionId = created.sessionId;
      const from = agent.updates.length;
      const answer = prompt(sessionId, 'hold on');
      await agent.nextUpdate((update, session) => session === sessionId && isHoldRunning(update), from);
      await writeFile(join(holdDir, 'release'), '');
      expect(await answer).toEqual({ stopReason: 'end_turn' });
      const updates = agent.updates.slice(from).map((n) => n.update);
      expect(updates.find((u) => u.sessionUpdate === 'tool_call')).toMatchObject({
        title: 'hold__hold',
        status: 'pending',
      });
      expect(updates.find((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'completed')).toMatchObject({
        content: [{ type: 'content', content: { type: 'text', text: 'released' } }],
      });
      expect(existsSync(join(holdDir, 'release'))).toBe(false);
    },
    SPAWN_TIMEOUT,
  );

  it('another session does not have that server: the same call is an unknown tool there', async () => {
    const other = await agent.connection.agent.request(methods.agent.session.new, { cwd: workspace, mcpServers: [] });
    const from = agent.updates.length;
    expect(await prompt(other.sessionId, 'hold on')).toEqual({ stopReason: 'end_turn' });
    const failed = agent.updates
      .slice(from)
      .find((n) => n.update.sessionUpdate === 'tool_call_update' && n.update.status === 'failed');
    expect(failed?.update).toMatchObject({
      content: [{ content: { text: expect.stringMatching(/^unknown_tool: /) } }],
    });
  });

  it('session/cancel in the middle of a tool call ends the prompt cancelled, and the call failed', async () => {
    const from = agent.updates.length;
    const answer = prompt(sessionId, 'hold until cancelled');
    const running = await agent.nextUpdate((update, session) => session === sessionId && isHoldRunning(update), from);
    await agent.connection.agent.notify(methods.agent.session.cancel, { sessionId });
    expect(await answer).toEqual({ stopReason: 'cancelled' });
    const toolCallId = (running as { toolCallId: string }).toolCallId;
    const last = agent.updates
      .slice(from)
      .filter((n) => n.update.sessionUpdate === 'tool_call_update' && n.update.toolCallId === toolCallId)
      .at(-1);
    expect(last?.update).toMatchObject({ status: 'failed' });
    // The session takes the next prompt.
    const again = agent.updates.length;
    const next = prompt(sessionId, 'hold once more');
    await agent.nextUpdate((update, session) => session === sessionId && isHoldRunning(update), again);
    await writeFile(join(holdDir, 'release'), '');
    expect(await next).toEqual({ stopReason: 'end_turn' });
  });

  it(
    'exits 0 when stdin closes, with protocol frames only on stdout',
    async () => {
      const { code, stderr } = await agent.stop();
      expect(code).toBe(0);
      expect(stderr).not.toContain('switchyard acp: engine:');
      for (const line of agent.frames) expect(parseFrame(line)).toMatchObject({ jsonrpc: '2.0' });
    },
    SPAWN_TIMEOUT,
  );
});
