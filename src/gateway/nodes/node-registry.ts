/*
 * NodeRegistry: the node clients connected to a gateway, by name (docs/protocol.md, "Node
 * clients"). It is created before the engine and the gateway and handed to both: the engine's
 * node_invoke calls go through invoke(), the gateway attaches each node connection as it arrives.
 * It does no scheduling of its own: the engine's claim on `nodes [name]` keeps one node's calls
 * apart.
 */
import type { WebSocket } from 'ws';
import { ToolError } from '../../tools/tool.js';
import { closeReason, GatewayCloseCode } from '../close-codes.js';
import { NodeConnection, type NodeConnectionOptions } from './node-connection.js';
import type { NodeCommand, NodeInvokeResult, NodeInvoker } from './node-protocol.js';

export interface NodeInfo {
  name: string;
  /** ISO time the node registered. */
  connectedAt: string;
  /** Invocations sent to it and not answered yet. */
  inFlight: number;
  remoteAddress?: string;
}

export interface NodeRegistryOptions {
  /** How long past its timeout an invocation may go unanswered before it fails. Default 10 s. */
  answerGraceMs?: number;
}

export class NodeRegistry implements NodeInvoker {
  private readonly nodes = new Map<string, NodeConnection>();

  constructor(private readonly options: NodeRegistryOptions = {}) {}

  /** The connected nodes, by name. */
  list(): NodeInfo[] {
    return [...this.nodes.values()]
      .map((node) => ({
        name: node.name,
        connectedAt: node.connectedAt,
        inFlight: node.inFlightCount,
        ...(node.remoteAddress !== undefined ? { remoteAddress: node.remoteAddress } : {}),
      }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * Runs a command on the named node. Rejects with ToolError `unknown_node` (no such node is
   * connected), `node_unavailable` (it disconnected before answering), `cancelled` (the
   * signal aborted: the node is sent node.cancel), `timeout` (no answer long after its
   * timeout), or the node's own error code (`invalid_cwd`, `sandbox_unavailable`, ...).
   */
  invoke(name: string, command: NodeCommand, signal?: AbortSignal): Promise<NodeInvokeResult> {
    const node = this.nodes.get(name);
    if (!node?.open) {
      const connected = this.list().map((n) => n.name);
      return Promise.reject(
        new ToolError(
          'unknown_node',
          `no node named "${name}" is connected; ` +
            (connected.length > 0
              ? `connected: ${connected.join(', ')}`
              : 'no node is connected (start one with: switchyard node --gateway URL --name NAME)'),
        ),
      );
    }
    return node.invoke(command, signal);
  }

  /**
   * Takes over a node's freshly upgraded socket (the gateway calls this). A name already in
   * use is refused: the socket is closed with 4009 and a reason saying so.
   */
  attach(ws: WebSocket, options: Omit<NodeConnectionOptions, 'answerGraceMs'>): NodeConnection | undefined {
    const existing = this.nodes.get(options.name);
    if (existing?.open) {
      options.logger.warn(
        `refused a second node named "${options.name}"${options.remoteAddress ? ` from ${options.remoteAddress}` : ''}`,
      );
      ws.close(
        GatewayCloseCode.NodeRefused,
        closeReason(`a node named "${options.name}" is already connected; pick another --name`),
      );
      return undefined;
    }
    // One on its way out does not hold its name against its own reconnect.
    existing?.terminate();
    const node = new NodeConnection(ws, {
      ...options,
      ...(this.options.answerGraceMs !== undefined ? { answerGraceMs: this.options.answerGraceMs } : {}),
    });
    this.nodes.set(node.name, node);
    options.logger.info(`node "${node.name}" registered${node.remoteAddress ? ` from ${node.remoteAddress}` : ''}`);
    void node.closed.then(() => {
      if (this.nodes.get(node.name) === node) this.nodes.delete(node.name);
      options.logger.info(`node "${node.name}" disconnected`);
    });
    return node;
  }
}
