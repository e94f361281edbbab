/*
 * NodeRegistry against hand-driven nodes on a real gateway: registration and refusal, the
 * node.invoke round trip, and every way an invocation can end without an answer — unknown
 * node, disconnect, cancel, no answer at all — plus what a misbehaving node gets back.
 */
import { describe, expect, it } from 'vitest';
import { GatewayCloseCode } from '../../src/gateway/index.js';
import { NodeRegistry, type NodeCommand } from '../../src/gateway/nodes/index.js';
import { ToolError } from '../../src/tools/index.js';
import { closeOf, closeRaw, handshakeStatus } from '../gateway/fixtures.js';
import { until } from '../support/eventually.js';
import { nodeGatewayFixture, rawNode } from './fixtures.js';

const start = nodeGatewayFixture();
const COMMAND: NodeCommand = { command: 'echo hi', timeoutMs: 5_000 };
const RESULT = {
  exitCode: 0,
  signal: null,
  output: 'hi\n',
  truncated: false,
  timedOut: false,
  durationMs: 3,
  sandbox: 'none',
};

async function rejection(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

describe('registration', () => {
  it('a node that connects with role node and a name is registered and told so', async () => {
    const { nodes, gateway, client } = await start();
    const node = await rawNode(gateway.url, gateway.token, 'worker-1');
    expect(await node.next()).toEqual({
      jsonrpc: '2.0',
      method: 'node.registered',
      params: { name: 'worker-1', maxPayloadBytes: 1024 * 1024 },
    });
    expect(nodes.list()).toMatchObject([{ name: 'worker-1', inFlight: 0 }]);
    const { nodes: listed } = await (await client()).call('nodes.list', {});
    expect(listed.map((n) => n.name)).toEqual(['worker-1']);
    // A node is not counted among the clients.
    expect(gateway.connections()).toBe(1);
  });

  it('the role and name may come as headers instead of the query', async () => {
    const { nodes, gateway } = await start();
    const WebSocket = (await import('ws')).default;
    const ws = new WebSocket(gateway.url, {
      headers: {
        Authorization: `Bearer ${gateway.token}`,
        'x-switchyard-role': 'node',
        'x-switchyard-node-name': 'by-header',
      },
    });
    await new Promise((resolve) => ws.once('open', resolve));
    await until(() => nodes.list().length === 1, 'the node registers');
    expect(nodes.list()[0]?.name).toBe('by-header');
    await closeRaw(ws);
  });

  it('a second node with a name already connected is closed with 4009 and a reason; the first stays', async () => {
    const { nodes, gateway } = await start();
    const first = await rawNode(gateway.url, gateway.token, 'worker-1');
    await first.next();
    const second = await rawNode(gateway.url, gateway.token, 'worker-1');
    const { code, reason } = await closeOf(second.ws);
    expect(code).toBe(GatewayCloseCode.NodeRefused);
    expect(reason).toBe('a node named "worker-1" is already connected; pick another --name');
    expect(nodes.list().map((n) => n.name)).toEqual(['worker-1']);
    expect(first.ws.readyState).toBe(first.ws.OPEN);
  });

  it.each([
    ['/?role=node', 'no name'],
    ['/?role=node&name=has%20space', 'a bad name'],
    ['/?role=janitor&name=x', 'an unknown role'],
  ])('%s (%s) is refused with 403 before any WebSocket exists', async (path) => {
    const { gateway } = await start();
    expect(await handshakeStatus(`${gateway.url}${path}`, { Authorization: `Bearer ${gateway.token}` })).toBe(403);
  });

  it('a gateway without a registry refuses nodes with 403; a node without the token gets 401', async () => {
    const { startGateway } = await import('../../src/gateway/index.js');
    const { gateway, engine, dataDir } = await start();
    const bare = await startGateway({ engine, port: 0, dataDir, logger: { warn: () => {} } });
    try {
      expect(await handshakeStatus(`${bare.url}/?role=node&name=w`, { Authorization: `Bearer ${bare.token}` })).toBe(
        403,
      );
    } finally {
      await bare.close();
    }
    expect(await handshakeStatus(`${gateway.url}/?role=node&name=w`)).toBe(401);
  });
});

describe('invoke', () => {
  it("sends node.invoke with an invocation id and resolves with the node's answer", async () => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    const answer = nodes.invoke('worker-1', { command: 'echo hi', cwd: 'sub', timeoutMs: 5_000, maxOutputBytes: 1000 });
    const request = await worker.next();
    expect(request).toMatchObject({
      jsonrpc: '2.0',
      method: 'node.invoke',
      params: { command: 'echo hi', cwd: 'sub', timeoutMs: 5_000, maxOutputBytes: 1000 },
    });
    expect((request['params'] as { invocationId: string }).invocationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(nodes.list()[0]?.inFlight).toBe(1);
    worker.send({ jsonrpc: '2.0', id: request['id'], result: RESULT });
    expect(await answer).toEqual(RESULT);
    expect(nodes.list()[0]?.inFlight).toBe(0);
  });

  it('an unknown node is an unknown_node error that lists the connected nodes', async () => {
    const { nodes, node } = await start();
    expect((await rejection(nodes.invoke('worker-9', COMMAND))).code).toBe('unknown_node');
    await node('worker-2');
    await node('worker-1');
    const error = await rejection(nodes.invoke('worker-9', COMMAND));
    expect(error.message).toBe('no node named "worker-9" is connected; connected: worker-1, worker-2');
  });

  it('works without any gateway: nothing is connected', async () => {
    const error = await rejection(new NodeRegistry().invoke('worker-1', COMMAND));
    expect(error.code).toBe('unknown_node');
    expect(error.message).toMatch(/no node is connected \(start one with: switchyard node --gateway URL --name NAME\)/);
  });

  it('a node that disconnects fails its in-flight invocations with node_unavailable and is forgotten', async () => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    const first = nodes.invoke('worker-1', { command: 'sleep 10', timeoutMs: 20_000 });
    const second = nodes.invoke('worker-1', { command: 'sleep 11', timeoutMs: 20_000 });
    await worker.next();
    await worker.next();
    worker.ws.terminate();
    for (const pending of [first, second]) {
      const error = await rejection(pending);
      expect(error.code).toBe('node_unavailable');
      expect(error.message).toMatch(
        /^node "worker-1" is unavailable: the connection closed \(1006\) while it ran "sleep 1[01]"/,
      );
    }
    expect(nodes.list()).toEqual([]);
    expect((await rejection(nodes.invoke('worker-1', COMMAND))).code).toBe('unknown_node');
  });

  it('aborting sends node.cancel for that invocation and rejects with cancelled; a late answer is dropped', async () => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    const controller = new AbortController();
    const pending = nodes.invoke('worker-1', { command: 'sleep 10', timeoutMs: 20_000 }, controller.signal);
    const request = await worker.next();
    controller.abort();
    expect((await rejection(pending)).code).toBe('cancelled');
    const { invocationId } = request['params'] as { invocationId: string };
    expect(await worker.next()).toEqual({ jsonrpc: '2.0', method: 'node.cancel', params: { invocationId } });
    worker.send({ jsonrpc: '2.0', id: request['id'], result: { ...RESULT, cancelled: true } });
    // The connection is fine and the next invocation is answered normally.
    const next = nodes.invoke('worker-1', COMMAND);
    const again = await worker.next();
    worker.send({ jsonrpc: '2.0', id: again['id'], result: RESULT });
    expect(await next).toEqual(RESULT);
  });

  it('an already-aborted signal sends nothing', async () => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    expect((await rejection(nodes.invoke('worker-1', COMMAND, AbortSignal.abort()))).code).toBe('cancelled');
    expect(worker.frames).toHaveLength(1);
  });

  it('a node that never answers fails the call with timeout after its timeout and the grace, and is told to stop', async () => {
    const { nodes, node } = await start({ nodes: new NodeRegistry({ answerGraceMs: 50 }) });
    const worker = await node('worker-1');
    const pending = nodes.invoke('worker-1', { command: 'sleep 10', timeoutMs: 100 });
    const request = await worker.next();
    const error = await rejection(pending);
    expect(error.code).toBe('timeout');
    expect(error.message).toBe('node "worker-1" did not answer within 150 ms; it was told to stop the command');
    expect(await worker.next()).toMatchObject({
      method: 'node.cancel',
      params: { invocationId: (request['params'] as { invocationId: string }).invocationId },
    });
  });

  it("a node's error answer becomes a ToolError with the node's code", async () => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    const pending = nodes.invoke('worker-1', { ...COMMAND, cwd: '../..' });
    const request = await worker.next();
    worker.send({
      jsonrpc: '2.0',
      id: request['id'],
      error: {
        code: -32000,
        message: "cwd resolves outside the node's workspace",
        data: { code: 'outside_workspace' },
      },
    });
    const error = await rejection(pending);
    expect([error.code, error.message]).toEqual([
      'outside_workspace',
      'node "worker-1": cwd resolves outside the node\'s workspace',
    ]);
  });

  it('an answer that is not a valid result is a node_protocol_error', async () => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    const pending = nodes.invoke('worker-1', COMMAND);
    const request = await worker.next();
    worker.send({ jsonrpc: '2.0', id: request['id'], result: { exitCode: 'zero' } });
    const error = await rejection(pending);
    expect(error.code).toBe('node_protocol_error');
    expect(error.message).toMatch(/^node "worker-1" answered with an invalid result \(exitCode: /);
  });
});

describe('frames a node sends', () => {
  it.each([
    ['not JSON', 'nope', -32700],
    ['a request, not an answer', { jsonrpc: '2.0', id: 1, method: 'run.submit', params: {} }, -32600],
    ['an answer without jsonrpc', { id: 1, result: {} }, -32600],
  ])('%s gets a JSON-RPC error with id null; the connection stays open', async (_what, frame, code) => {
    const { nodes, node } = await start();
    const worker = await node('worker-1');
    worker.send(frame);
    expect(await worker.next()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code } });
    expect(nodes.list().map((n) => n.name)).toEqual(['worker-1']);
  });
});
