/*
 * The gateway's open connections: the clients it serves and the nodes attached to its node
 * registry. It opens each one from a freshly upgraded socket, forgets it once it has closed,
 * and answers for all of them: the heartbeat's peers, the stats, a notification to every
 * client, and the close of everything on shutdown.
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import { Connection, type ConnectionOptions } from './connection.js';
import type { HeartbeatPeer } from './heartbeat.js';
import type { NotificationName } from './methods.js';
import type { NodeConnection, NodeConnectionOptions } from './nodes/node-connection.js';
import type { NodeRegistry } from './nodes/node-registry.js';

export interface GatewayStats {
  connections: number;
  subscriptions: number;
  /** Unread bytes waiting in the server, over all connections, right now. */
  pendingBytes: number;
  /** The most unread bytes any one connection ever had waiting. */
  maxPendingBytes: number;
  /** Connections closed with 4008 (slow consumers) since the gateway started. */
  slowConsumersDropped: number;
}

export interface ConnectionRegistryOptions {
  /** Everything a client connection needs but its id. */
  client: Omit<ConnectionOptions, 'id'>;
  /** Everything a node connection needs but who it is. */
  node: Omit<NodeConnectionOptions, 'name' | 'remoteAddress' | 'answerGraceMs'>;
  nodes?: NodeRegistry;
}

export class ConnectionRegistry {
  private readonly clients = new Set<Connection>();
  private readonly nodeConnections = new Set<NodeConnection>();
  private nextClientId = 1;
  private maxPendingOfClosed = 0;
  private slowConsumersDropped = 0;

  constructor(private readonly options: ConnectionRegistryOptions) {}

  openClient(ws: WebSocket, req: IncomingMessage): void {
    const connection = new Connection(ws, { ...this.options.client, id: this.nextClientId++ });
    this.clients.add(connection);
    this.options.client.logger.info(`connection ${connection.id} from ${req.socket.remoteAddress ?? '?'}`);
    void connection.closed.then(() => {
      this.maxPendingOfClosed = Math.max(this.maxPendingOfClosed, connection.maxPendingBytes);
      if (connection.droppedAsSlowConsumer) this.slowConsumersDropped += 1;
      this.clients.delete(connection);
    });
  }

  /** Hands a node's socket to the node registry, which may refuse its name (4009). */
  attachNode(ws: WebSocket, req: IncomingMessage, name: string): void {
    const node = this.options.nodes?.attach(ws, {
      ...this.options.node,
      name,
      ...(req.socket.remoteAddress !== undefined ? { remoteAddress: req.socket.remoteAddress } : {}),
    });
    if (!node) return;
    this.nodeConnections.add(node);
    void node.closed.then(() => this.nodeConnections.delete(node));
  }

  /** Client and node connections alike. */
  peers(): HeartbeatPeer[] {
    return [...this.clients, ...this.nodeConnections];
  }

  /** Open client connections (not counting those on their way out). */
  openClients(): number {
    return [...this.clients].filter((c) => c.open).length;
  }

  stats(): GatewayStats {
    const all = [...this.clients];
    return {
      connections: all.filter((c) => c.open).length,
      subscriptions: all.reduce((n, c) => n + c.subscriptionCount, 0),
      pendingBytes: all.reduce((n, c) => n + c.pendingBytes, 0),
      maxPendingBytes: Math.max(0, ...all.map((c) => c.maxPendingBytes), this.maxPendingOfClosed),
      slowConsumersDropped: this.slowConsumersDropped,
    };
  }

  /** One notification to every open client connection. */
  notifyClients(method: NotificationName, paramsJson: string): void {
    for (const connection of this.clients) if (connection.open) connection.notify(method, paramsJson);
  }

  /** Closes every connection and resolves once all of them have closed. */
  async closeAll(code: number, reason: string): Promise<void> {
    const all = [...this.clients, ...this.nodeConnections];
    for (const connection of all) connection.close(code, reason);
    await Promise.all(all.map((c) => c.closed));
  }
}
