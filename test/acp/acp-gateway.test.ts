/*
 * `switchyard acp --gateway`: the same ACP front as a child process, in front of a real
 * gateway started here, whose engine (scripted model, a `hold` tool the test releases) this
 * test can watch. Tool calls and a permission request cross the gateway; an unanswered request
 * times out as a denial and is withdrawn; a prompt sent while the session is busy steers into
 * the running run (both turns end together and the model saw the second message), unless the
 * mode changed; session/cancel stops a held call; sessions cannot be loaded.
 */
import { readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxWorkspace } from '../sandbox/sandbox-workspace.js';
import { methods, type SessionUpdate } from '@agentclientprotocol/sdk';
import { createEngine, type Engine, type SubmitResult } from '../../src/engine/index.js';
import { startGateway, type Gateway, type GatewayEngine } from '../../src/gateway/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { z } from 'zod';
import { choose, parseFrame, spawnAcp, SPAWN_TIMEOUT, type AcpChild } from './acp-child.js';
import { tempDirs } from '../support/temp-dirs.js';

let dataDir: string;
let workspace: string;
let engine: Engine;
let gateway: Gateway;
let agent: AcpChild;
let sessionId: string;
const hold = heldCalls();
const engineErrors: unknown[] = [];
/** Every submit the gateway's engine answered, and who waits for the next one. */
const submitted: SubmitResult[] = [];
const onSubmitted = new Set<() => void>();

/** Edits for an "edit…" prompt; a held call for a "hold…" prompt, then what the model last heard. */
const model = scriptedModel(({ turn, input, messages }) => {
  if (input.startsWith('edit')) {
    return turn === 0
      ? {
          toolCalls: [
            { name: 'file_read', args: { path: 'a.txt' } },
            { name: 'file_edit', args: { path: 'c.txt', old: 'draft', new: 'final' } },
          ],
        }
      : { text: 'edited' };
  }
  if (turn === 0) return { toolCalls: [{ name: 'hold', args: {} }] };
  const last = messages.at(-1);
  return { text: last?.role === 'user' ? `took: ${last.content}` : 'held' };
});

const tempDir = tempDirs('switchyard-acp-gateway-', 'afterAll');

beforeAll(async () => {
  dataDir = await tempDir();
  workspace = await realpath(await sandboxWorkspace('switchyard-acp-project-'));
  await writeFile(join(workspace, 'a.txt'), 'alpha\n');
  await writeFile(join(workspace, 'c.txt'), 'first draft\n');
  engine = await createEngine({
    models: { scripted: model },
    tools: [hold.tool],
    onError: (error) => engineErrors.push(error),
  });
  gateway = await startGateway({
    engine: watched(engine),
    port: 0,
    dataDir,
    logger: { info: () => {}, warn: () => {}, error: (m) => engineErrors.push(m) },
  });
  agent = spawnAcp(['--gateway', gateway.url, '--token-file', gateway.tokenPath]);
});

afterAll(async () => {
  await gateway?.close();
  await engine?.close();
  await rm(workspace, { recursive: true, force: true });
  expect(engineErrors).toEqual([]);
});

/** A tool "hold" whose calls wait until the test releases them (or their run is cancelled). */
function heldCalls() {
  const holding = new Map<string, () => void>();
  const onHold = new Set<() => void>();
  const tool = defineTool({
    name: 'hold',
    description: 'Waits until released or cancelled.',
    input: z.object({}).strict(),
    execute: (_input, ctx) =>
      new Promise<string>((resolve, reject) => {
        holding.set(ctx.runId, () => resolve('released'));
        ctx.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
        for (const wake of [...onHold]) wake();
      }),
  });
  return {
    tool,
    /** Resolves once a call of the run is holding. */
    holding: (runId: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (!holding.has(runId)) return;
          onHold.delete(check);
          resolve();
        };
        onHold.add(check);
        check();
      }),
    release(runId: string): void {
      holding.get(runId)?.();
      holding.delete(runId);
    },
  };
}

/** The engine as the gateway sees it, reporting each submit's outcome to the test. */
function watched(inner: Engine): GatewayEngine {
  return {
    submit: async (request) => {
      const result = await inner.submit(request);
      submitted.push(result);
      for (const wake of [...onSubmitted]) wake();
      return result;
    },
    wait: (runId) => inner.wait(runId),
    events: (filter) => inner.events(filter),
    history: (runId) => inner.history(runId),
    cancel: (runId, reason) => inner.cancel(runId, reason),
    stopSession: (id) => inner.stopSession(id),
    status: (runId) => inner.status(runId),
    getRun: (runId) => inner.getRun(runId),
    reconfigure: (partial) => inner.reconfigure(partial),
    snapshot: () => inner.snapshot(),
    inspect: (listener) => inner.inspect(listener),
    inspectionSnapshot: () => inner.inspectionSnapshot(),
    queryRuns: (query) => inner.queryRuns(query),
    respondApproval: (approvalId, decision) => inner.respondApproval(approvalId, decision),
    onApprovalRequested: (listener) => inner.onApprovalRequested(listener),
    lane: (sessionId) => inner.lane(sessionId),
    withdraw: (runId) => inner.withdraw(runId),
    moveInLane: (runId, position) => inner.moveInLane(runId, position),
    promoteToSteer: (runId) => inner.promoteToSteer(runId),
    editWaiting: (runId, patch) => inner.editWaiting(runId, patch),
  };
}

/** The first submit (from index `from` on) that matches. */
function nextSubmit(from: number, match: (result: SubmitResult) => boolean): Promise<SubmitResult> {
  return new Promise((resolve) => {
    const check = () => {
      const found = submitted.slice(from).find(match);
      if (found) {
        onSubmitted.delete(check);
        resolve(found);
      }
    };
    onSubmitted.add(check);
    check();
  });
}

function prompt(text: string) {
  return agent.connection.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
}

function updatesFrom(from: number): SessionUpdate[] {
  return agent.updates.slice(from).map((n) => n.update);
}

const holdRunning = (update: SessionUpdate) =>
  update.sessionUpdate === 'tool_call_update' && update.status === 'in_progress';

describe('switchyard acp --gateway', () => {
  it(
    'initialize does not offer session/load; session/new opens a session on the gateway',
    async () => {
      expect(await agent.initialize()).toMatchObject({ agentCapabilities: { loadSession: false } });
      const created = await agent.connection.agent.request(methods.agent.session.new, {
        cwd: workspace,
        mcpServers: [],
      });
      sessionId = created.sessionId;
      expect(created.modes?.currentModeId).toBe('auto');
    },
    SPAWN_TIMEOUT,
  );

  it('a prompt runs on the gateway: tool calls with kinds, locations and a diff', async () => {
    const from = agent.updates.length;
    expect(await prompt('edit c')).toEqual({ stopReason: 'end_turn' });
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('first final\n');
    const calls = updatesFrom(from).filter((u) => u.sessionUpdate === 'tool_call');
    expect(calls).toMatchObject([
      { kind: 'read', locations: [{ path: join(workspace, 'a.txt') }], status: 'pending' },
      {
        kind: 'edit',
        locations: [{ path: join(workspace, 'c.txt') }],
        content: [{ type: 'diff', path: join(workspace, 'c.txt'), oldText: 'draft', newText: 'final' }],
      },
    ]);
    expect(updatesFrom(from).at(-1)).toEqual({
      sessionUpdate: 'agent_message_chunk',
      content: { type: 'text', text: 'edited' },
    });
  });

  it('in ask mode the permission request crosses the gateway; allow once runs the edit', async () => {
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'ask' });
    await writeFile(join(workspace, 'c.txt'), 'second draft\n');
    agent.answerPermissions(choose('allow_once'));
    const asked = agent.permissionRequests.length;
    expect(await prompt('edit c again')).toEqual({ stopReason: 'end_turn' });
    expect(agent.permissionRequests.slice(asked)).toMatchObject([
      { sessionId, toolCall: { kind: 'edit', title: 'Edit c.txt' } },
    ]);
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('second final\n');
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'auto' });
  });

  it('a permission request nobody answers is a denial once [approval] timeout_seconds pass, and is withdrawn', async () => {
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'ask' });
    engine.reconfigure({ approval: { timeout_seconds: 1 } });
    await writeFile(join(workspace, 'c.txt'), 'third draft\n');
    let withdrawn = false;
    agent.answerPermissions(
      (_request, signal) =>
        new Promise((resolve) =>
          signal.addEventListener('abort', () => {
            withdrawn = true;
            resolve({ outcome: { outcome: 'cancelled' } });
          }),
        ),
    );
    const from = agent.updates.length;
    expect(await prompt('edit c once more')).toEqual({ stopReason: 'end_turn' });
    expect(withdrawn).toBe(true);
    expect(
      updatesFrom(from).find((u) => u.sessionUpdate === 'tool_call_update' && u.status === 'failed'),
    ).toMatchObject({
      content: [{ content: { text: expect.stringMatching(/^approval_denied: .*timed out/) } }],
    });
    expect(await readFile(join(workspace, 'c.txt'), 'utf8')).toBe('third draft\n');
    engine.reconfigure({ approval: { timeout_seconds: 120 } });
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'auto' });
  });

  it('a prompt while the session is busy steers into the running run: both turns end when it does', async () => {
    const from = agent.updates.length;
    const submits = submitted.length;
    const first = prompt('hold the line');
    const started = await nextSubmit(submits, (s) => s.outcome === 'started');
    await hold.holding(started.runId);
    const second = prompt('then say this');
    await nextSubmit(submits, (s) => s.outcome === 'steered' && s.intoRunId === started.runId);
    hold.release(started.runId);
    expect(await first).toEqual({ stopReason: 'end_turn' });
    expect(await second).toEqual({ stopReason: 'end_turn' });
    // One run, one held call; the model's next turn heard the second message.
    const updates = updatesFrom(from);
    expect(updates.filter((u) => u.sessionUpdate === 'tool_call')).toHaveLength(1);
    expect(updates.filter((u) => u.sessionUpdate === 'agent_message_chunk')).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'took: then say this' } },
    ]);
  });

  it('a prompt sent while busy after a mode change waits for a run of its own, in the new mode', async () => {
    const submits = submitted.length;
    const first = prompt('hold in auto');
    const started = await nextSubmit(submits, (s) => s.outcome === 'started');
    await hold.holding(started.runId);
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'ask' });
    agent.answerPermissions(choose('allow_once'));
    const asked = agent.permissionRequests.length;
    const second = prompt('hold in ask');
    const queued = await nextSubmit(submits, (s) => s.outcome === 'queued');
    hold.release(started.runId);
    expect(await first).toEqual({ stopReason: 'end_turn' });
    // Its own run, in ask mode: the hold tool (not read-only) asks first.
    await hold.holding(queued.runId);
    expect(agent.permissionRequests.slice(asked)).toMatchObject([{ toolCall: { title: 'hold' } }]);
    hold.release(queued.runId);
    expect(await second).toEqual({ stopReason: 'end_turn' });
    await agent.connection.agent.request(methods.agent.session.setMode, { sessionId, modeId: 'auto' });
  });

  it('session/cancel stops a held call: the prompt ends cancelled', async () => {
    const from = agent.updates.length;
    const answer = prompt('hold until cancelled');
    await agent.nextUpdate((update, session) => session === sessionId && holdRunning(update), from);
    await agent.connection.agent.notify(methods.agent.session.cancel, { sessionId });
    expect(await answer).toEqual({ stopReason: 'cancelled' });
    expect(
      updatesFrom(from)
        .filter((u) => u.sessionUpdate === 'tool_call_update')
        .at(-1),
    ).toMatchObject({ status: 'failed' });
  });

  it('session/load is not offered: the method is unknown', async () => {
    await expect(
      agent.connection.agent.request(methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] }),
    ).rejects.toMatchObject({
      code: -32601,
    });
  });

  it(
    'exits 0 when stdin closes, with protocol frames only on stdout',
    async () => {
      const { code } = await agent.stop();
      expect(code).toBe(0);
      for (const line of agent.frames) expect(parseFrame(line)).toMatchObject({ jsonrpc: '2.0' });
    },
    SPAWN_TIMEOUT,
  );
});
