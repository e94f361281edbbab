/*
 * What the node suites share: a real gateway (127.0.0.1, port 0) with a NodeRegistry in front
 * of an engine that has the same registry, and a hand-driven node — a raw WebSocket with role
 * node whose frames the test reads and answers itself.
 */
import WebSocket from 'ws';
import { NodeRegistry } from '../../src/gateway/nodes/index.js';
import { gatewayFixture, type GatewayHarness, type HarnessOptions } from '../gateway/fixtures.js';

export interface RawNode {
  ws: WebSocket;
  /** The next frame from the gateway, parsed. */
  next(): Promise<Record<string, unknown>>;
  /** Every frame received so far, parsed. */
  frames: Record<string, unknown>[];
  send(frame: unknown): void;
}

/** Opens a raw node connection; resolves once it is open (not necessarily registered). */
export async function rawNode(gatewayUrl: string, token: string, name: string): Promise<RawNode> {
  const ws = new WebSocket(`${gatewayUrl}/?role=node&name=${encodeURIComponent(name)}`, {
    headers: { Authorization: `Bearer ${token}` },
  });
  const frames: Record<string, unknown>[] = [];
  const waiting: ((frame: Record<string, unknown>) => void)[] = [];
  let read = 0;
  ws.on('message', (data) => {
    frames.push(JSON.parse(String(data)) as Record<string, unknown>);
    const waiter = waiting.shift();
    if (waiter) waiter(frames[read++]!);
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    frames,
    next: () =>
      read < frames.length ? Promise.resolve(frames[read++]!) : new Promise((resolve) => waiting.push(resolve)),
    send: (frame) => ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame)),
  };
}

export interface NodeHarness extends GatewayHarness {
  nodes: NodeRegistry;
  /** A raw node on this gateway, registered (its node.registered frame already read); closed after the test. */
  node(name: string): Promise<RawNode>;
}

/** One engine + gateway sharing a NodeRegistry per call, closed after the test. */
export function nodeGatewayFixture(): (options?: HarnessOptions & { nodes?: NodeRegistry }) => Promise<NodeHarness> {
  const harness = gatewayFixture();
  return async (options = {}) => {
    const nodes = options.nodes ?? new NodeRegistry();
    const base = await harness({
      ...options,
      engine: { ...options.engine, nodes },
      gateway: { ...options.gateway, nodes },
    });
    // Raw nodes need no cleanup of their own: closing the gateway closes them.
    return {
      ...base,
      nodes,
      node: async (name) => {
        const node = await rawNode(base.gateway.url, base.gateway.token, name);
        const registered = await node.next();
        if (registered['method'] !== 'node.registered')
          throw new Error(`expected node.registered, got ${JSON.stringify(registered)}`);
        return node;
      },
    };
  };
}
