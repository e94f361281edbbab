/*
 * The node_invoke builtin as a specification: its claim (tables), the timeout it sends (a
 * table), what becomes of the node's answer, and — through a real engine — that it is
 * unavailable without a registry and that the command policy stops a command before any
 * node hears of it.
 */
import { describe, expect, it } from 'vitest';
import { Claims, partitionParallelGroups, type Claim } from '../../src/concurrency/index.js';
import { scriptedModel } from '../../src/model/index.js';
import type { NodeCommand, NodeInvokeResult, NodeInvoker } from '../../src/gateway/nodes/index.js';
import { nodeInvokeTool, ToolError, type ToolContext } from '../../src/tools/index.js';
import { engineFixture } from '../engine/fixtures.js';
import { nodeGatewayFixture } from './fixtures.js';

const OK: NodeInvokeResult = {
  exitCode: 0,
  signal: null,
  output: 'ok\n',
  truncated: false,
  timedOut: false,
  cancelled: false,
  durationMs: 5,
  sandbox: 'none',
};

function contextWith(nodes: NodeInvoker | undefined, extra: Partial<ToolContext> = {}): ToolContext {
  return {
    signal: new AbortController().signal,
    workspace: '/tmp',
    callId: 'c1',
    runId: 'r1',
    sessionId: 's1',
    ...(nodes ? { nodes } : {}),
    ...extra,
  };
}

/** A NodeInvoker that records what it is asked and answers `result`. */
function recordingInvoker(
  result: NodeInvokeResult = OK,
): NodeInvoker & { calls: { node: string; command: NodeCommand; signal?: AbortSignal }[] } {
  const calls: { node: string; command: NodeCommand; signal?: AbortSignal }[] = [];
  return {
    calls,
    invoke: async (node, command, signal) => {
      calls.push({ node, command, ...(signal ? { signal } : {}) });
      return result;
    },
  };
}

const claimOf = (node: string): Claim =>
  nodeInvokeTool.concurrencyClaim!(nodeInvokeTool.input.parse({ node, command: 'true' }), {
    workspace: '/w',
    sessionId: 's',
  });

describe('claims', () => {
  it.each([
    ['worker-1', Claims.nodes(['worker-1'])],
    ['  worker-1 ', Claims.nodes(['worker-1'])],
  ])('node %j claims %j', (node, claim) => {
    expect(claimOf(node)).toEqual(claim);
  });

  it.each([
    ['distinct nodes run together', ['w1', 'w2', 'w3'], [[0, 3]]],
    [
      'the same node runs one call at a time',
      ['w1', 'w1'],
      [
        [0, 1],
        [1, 2],
      ],
    ],
    [
      'model order w1 w2 w1 w2 gives two pairs',
      ['w1', 'w2', 'w1', 'w2'],
      [
        [0, 2],
        [2, 4],
      ],
    ],
  ])('%s', (_rule, nodes, groups) => {
    expect(partitionParallelGroups(nodes.map(claimOf))).toEqual(groups);
  });

  it('its command is the command the policy and approval judge', () => {
    expect(nodeInvokeTool.commandOf!({ node: 'w1', command: 'make test' })).toBe('make test');
  });
});

describe('execute', () => {
  it.each<[string, { timeoutMs?: number }, { timeoutMs?: number; sandbox?: number }, number]>([
    ['nothing set: 60 s', {}, {}, 60_000],
    ["the call's own", { timeoutMs: 1_000 }, { timeoutMs: 3_000, sandbox: 60_000 }, 1_000],
    [
      'the tool-call timeout (clipped to the deadline)',
      { timeoutMs: 5_000 },
      { timeoutMs: 3_000, sandbox: 60_000 },
      3_000,
    ],
    ['[sandbox] default_timeout_seconds', {}, { timeoutMs: 90_000, sandbox: 30_000 }, 30_000],
  ])('the timeout sent to the node is the smallest: %s', async (_case, input, ctx, expected) => {
    const nodes = recordingInvoker();
    const sandbox =
      ctx.sandbox !== undefined
        ? { backend: 'none' as const, network: false, maxOutputBytes: 4096, commandTimeoutMs: ctx.sandbox }
        : undefined;
    await nodeInvokeTool.execute(
      { node: 'w1', command: 'true', ...input },
      contextWith(nodes, {
        ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
        ...(sandbox ? { sandbox } : {}),
      }),
    );
    expect(nodes.calls[0]?.command.timeoutMs).toBe(expected);
  });

  it("sends command, cwd and the output budget to the named node with the call's signal, and returns the answer", async () => {
    const nodes = recordingInvoker();
    const ctx = contextWith(nodes, {
      sandbox: { backend: 'bwrap', network: false, maxOutputBytes: 4096, commandTimeoutMs: 60_000 },
    });
    const output = await nodeInvokeTool.execute({ node: 'w1', command: 'ls', cwd: 'src' }, ctx);
    expect(nodes.calls).toEqual([
      {
        node: 'w1',
        command: { command: 'ls', cwd: 'src', timeoutMs: 60_000, maxOutputBytes: 4096 },
        signal: ctx.signal,
      },
    ]);
    expect(output).toEqual({
      node: 'w1',
      exitCode: 0,
      signal: null,
      output: 'ok\n',
      truncated: false,
      timedOut: false,
      durationMs: 5,
      sandbox: 'none',
    });
  });

  it.each([
    [
      'timed out',
      { timedOut: true, output: 'partial\n' },
      'timeout',
      'the command on node "w1" timed out after 5 ms and was killed; output so far:\npartial',
    ],
    ['cancelled on the node', { cancelled: true }, 'cancelled', 'the command on node "w1" was cancelled'],
  ])('an answer that %s is an error result', async (_case, answer, code, message) => {
    const error = await nodeInvokeTool
      .execute({ node: 'w1', command: 'sleep 9' }, contextWith(recordingInvoker({ ...OK, ...answer })))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect([(error as ToolError).code, (error as ToolError).message]).toEqual([code, message]);
  });

  it('without a node registry it is unavailable', async () => {
    const error = await nodeInvokeTool
      .execute({ node: 'w1', command: 'true' }, contextWith(undefined))
      .catch((e: unknown) => e);
    expect([(error as ToolError).code, (error as ToolError).message]).toEqual([
      'unavailable',
      'node_invoke needs a gateway with connected nodes',
    ]);
  });
});

describe('in the engine', () => {
  const engineOf = engineFixture();
  const gatewayOf = nodeGatewayFixture();

  it('an engine without nodes answers node_invoke with unavailable; the run goes on', async () => {
    const engine = await engineOf({
      models: {
        scripted: scriptedModel([
          { toolCalls: [{ name: 'node_invoke', args: { node: 'w1', command: 'true' } }] },
          { text: 'done' },
        ]),
      },
    });
    const { runId } = await engine.submit({ sessionId: 's', input: 'go' });
    expect((await engine.wait(runId)).state).toBe('completed');
    const finished = (await engine.history(runId)).find((e) => e.type === 'tool.finished');
    expect(finished).toMatchObject({ ok: false, error: { code: 'unavailable' } });
  });

  it('a command the policy blocks is refused before any node hears of it', async () => {
    const harness = await gatewayOf({
      engine: {
        models: {
          scripted: scriptedModel([
            { toolCalls: [{ name: 'node_invoke', args: { node: 'w1', command: 'rm -rf /' } }] },
            { text: 'done' },
          ]),
        },
      },
    });
    const node = await harness.node('w1');
    const { runId } = await harness.engine.submit({ sessionId: 's', input: 'go' });
    await harness.engine.wait(runId);
    const finished = (await harness.engine.history(runId)).find((e) => e.type === 'tool.finished');
    expect(finished).toMatchObject({ ok: false, error: { code: 'command_blocked' } });
    expect(node.frames.map((f) => f['method'])).toEqual(['node.registered']);
  });
});
