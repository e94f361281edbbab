/*
 * startGateway(): one HTTP server on one port that serves a few HTTP routes and upgrades
 * authenticated requests to WebSocket connections speaking JSON-RPC 2.0 (docs/protocol.md). The
 * upgrade is handled here, not by ws, so a request without the token (401) or from a
 * foreign browser origin (403) is answered before any WebSocket exists.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { RunEventOf } from '../engine/run-events.js';
import type { EventStream } from '../engine/event-stream.js';
import { ensureToken } from './auth-token.js';
import { Connection, type GatewayLogger } from './connection.js';
import { InspectFanout } from './inspect-fanout.js';
import type { GatewayEngine } from './method-handlers.js';
import { GatewayCloseCode } from './methods.js';
import { connectionRoleOf } from './nodes/node-handshake.js';
import type { NodeConnection } from './nodes/node-connection.js';
import type { NodeRegistry } from './nodes/node-registry.js';
import { toJson } from './protocol.js';
import { checkRequest, ownOriginsOf, rejectUpgrade, type GuardOptions } from './request-guard.js';

export type HttpRouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface GatewayOptions {
  engine: GatewayEngine;
  /** Interface to bind; loopback by default. */
  host?: string;
  /** TCP port; 0 picks a free one (read it from Gateway.port). Default 7420. */
  port?: number;
  /** Where the token file lives (created if missing). Default ".switchyard". */
  dataDir?: string;
  /** Largest frame a client may send; a bigger one closes that connection with 1009. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Browser origins allowed besides the gateway's own (http://host:port). Default none. */
  allowedOrigins?: string[];
  /** Unread bytes a connection may have waiting before it is closed with 4008. Default 4 MiB. */
  sendBufferLimitBytes?: number;
  /**
   * A subscription stops sending while its client has more than half of sendBufferLimitBytes
   * unread; a client that takes longer than this to read down to a quarter is closed with
   * 4008 too. Default 5 s.
   */
  drainTimeoutMs?: number;
  /** Subscriptions (events + inspect) one connection may hold. Default 256. */
  maxSubscriptionsPerConnection?: number;
  /** Ping interval; a connection that misses a pong until the next one is dropped. 0 = off. Default 30 s. */
  heartbeatMs?: number;
  /** How long a closing connection gets to finish its close handshake. Default 5 s. */
  closeTimeoutMs?: number;
  /**
   * Where node clients (role node; docs/protocol.md, "Node clients") register, and the engine's
   * node_invoke finds them; the same registry goes to createEngine({ nodes }). Without it node
   * connections are refused.
   */
  nodes?: NodeRegistry;
  /** Extra HTTP GET routes by path (e.g. "/inspect"); each requires the token. */
  httpRoutes?: Record<string, HttpRouteHandler>;
  /** Default: info is silent, warnings and errors go to the console. */
  logger?: Partial<GatewayLogger>;
}

export interface GatewayStats {
  connections: number;
  subscriptions: number;
  /** Unread bytes waiting in the server, over all connections, right now. */
  pendingBytes: number;
  /** The most unread bytes any one connection ever had waiting. */
  maxPendingBytes: number;
}

export interface Gateway {
  /** ws://host:port */
  url: string;
  /** http://host:port */
  httpUrl: string;
  host: string;
  port: number;
  token: string;
  tokenPath: string;
  /** True when this start generated the token (show it once; afterwards point to tokenPath). */
  tokenCreated: boolean;
  /** Open connections (not counting those on their way out). */
  connections(): number;
  stats(): GatewayStats;
  /** Graceful shutdown, step one: run.submit is refused with engine code "closed". */
  stopAdmitting(): void;
  /** Stops accepting, closes every connection with 1001 and releases every subscription. */
  close(): Promise<void>;
}

const DEFAULTS = {
  host: '127.0.0.1',
  port: 7420,
  dataDir: '.switchyard',
  maxPayloadBytes: 1024 * 1024,
  sendBufferLimitBytes: 4 * 1024 * 1024,
  maxSubscriptionsPerConnection: 256,
  heartbeatMs: 30_000,
  closeTimeoutMs: 5_000,
  drainTimeoutMs: 5_000,
};

const silentInfo: GatewayLogger = {
  info: () => {},
  warn: (message, error) => console.warn(`[switchyard gateway] ${message}`, ...(error !== undefined ? [error] : [])),
  error: (message, error) => console.error(`[switchyard gateway] ${message}`, ...(error !== undefined ? [error] : [])),
};

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const host = options.host ?? DEFAULTS.host;
  const logger: GatewayLogger = { ...silentInfo, ...options.logger };
  const sendBufferLimitBytes = options.sendBufferLimitBytes ?? DEFAULTS.sendBufferLimitBytes;
  const maxPayloadBytes = options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes;
  if (!(sendBufferLimitBytes > 0)) throw new RangeError('sendBufferLimitBytes must be a positive number of bytes');
  if (!(maxPayloadBytes > 0)) throw new RangeError('maxPayloadBytes must be a positive number of bytes');
  const { token, path: tokenPath, created: tokenCreated } = await ensureToken(options.dataDir ?? DEFAULTS.dataDir);
  const { engine } = options;
  const routes = new Map(Object.entries(options.httpRoutes ?? {}));
  const connections = new Set<Connection>();
  const nodeConnections = new Set<NodeConnection>();
  const inspect = new InspectFanout(engine, (error) => logger.error('could not serialize an inspection event', error));
  let admitting = true;
  let closing: Promise<void> | undefined;
  let nextConnectionId = 1;
  let maxPendingOfClosed = 0;
  // Filled in once the port is known (port 0 picks one).
  const guard: GuardOptions = { token, allowedOrigins: options.allowedOrigins ?? [], ownOrigins: [] };

  const wss = new WebSocketServer({ noServer: true, maxPayload: maxPayloadBytes, perMessageDeflate: false, clientTracking: false });

  const server = createServer((req, res) => {
    void serveHttp(req, res).catch((error: unknown) => {
      logger.error(`HTTP ${req.method} ${pathOf(req)} failed`, error);
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });

  async function serveHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    if (path === '/healthz') {
      sendJson(res, req.method === 'GET' || req.method === 'HEAD' ? 200 : 405, { ok: req.method === 'GET' || req.method === 'HEAD' });
      return;
    }
    const route = routes.get(path);
    if (!route) {
      sendJson(res, 404, { error: path === '/inspect' ? 'the inspector page is not available in this server' : `no route ${path}` });
      return;
    }
    const verdict = checkRequest(req, guard);
    if (!verdict.ok) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      sendJson(res, verdict.status, { error: verdict.reason });
      return;
    }
    await route(req, res);
  }

  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    // A client that resets mid-handshake must not bring the server down.
    const onSocketError = () => socket.destroy();
    socket.on('error', onSocketError);
    if (closing) {
      rejectUpgrade(socket, 503, 'the server is shutting down');
      return;
    }
    const verdict = checkRequest(req, guard);
    if (!verdict.ok) {
      rejectUpgrade(socket, verdict.status, verdict.reason);
      return;
    }
    const role = connectionRoleOf(req);
    if (role.kind === 'refused' || (role.kind === 'node' && !options.nodes)) {
      rejectUpgrade(socket, 403, role.kind === 'refused' ? role.reason : 'this gateway takes no node clients (it was started without a node registry)');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      socket.off('error', onSocketError);
      if (closing) {
        ws.close(GatewayCloseCode.GoingAway, 'the server is shutting down');
        return;
      }
      if (role.kind === 'node') {
        const node = options.nodes?.attach(ws, {
          name: role.name,
          ...(req.socket.remoteAddress !== undefined ? { remoteAddress: req.socket.remoteAddress } : {}),
          logger,
          sendBufferLimitBytes,
          maxPayloadBytes,
          closeTimeoutMs: options.closeTimeoutMs ?? DEFAULTS.closeTimeoutMs,
        });
        if (node) {
          nodeConnections.add(node);
          void node.closed.then(() => nodeConnections.delete(node));
        }
        return;
      }
      const connection = new Connection(ws, {
        id: nextConnectionId++,
        engine,
        inspect,
        admitting: () => admitting,
        logger,
        sendBufferLimitBytes,
        maxSubscriptions: options.maxSubscriptionsPerConnection ?? DEFAULTS.maxSubscriptionsPerConnection,
        closeTimeoutMs: options.closeTimeoutMs ?? DEFAULTS.closeTimeoutMs,
        drainTimeoutMs: options.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs,
        ...(options.nodes ? { nodes: options.nodes } : {}),
      });
      connections.add(connection);
      logger.info(`connection ${connection.id} from ${req.socket.remoteAddress ?? '?'}`);
      void connection.closed.then(() => {
        maxPendingOfClosed = Math.max(maxPendingOfClosed, connection.maxPendingBytes);
        connections.delete(connection);
      });
    });
  });
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULTS.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => logger.error('HTTP server error', error));
  const port = (server.address() as AddressInfo).port;
  guard.ownOrigins = ownOriginsOf(host, port);
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;

  const approvals = engine.events({});
  void forwardApprovals(approvals, connections, logger);

  const heartbeatMs = options.heartbeatMs ?? DEFAULTS.heartbeatMs;
  const heartbeat = heartbeatMs > 0
    ? setInterval(() => {
        for (const connection of [...connections, ...nodeConnections]) if (!connection.ping()) connection.terminate();
      }, heartbeatMs).unref()
    : undefined;

  async function shutdown(): Promise<void> {
    admitting = false;
    if (heartbeat) clearInterval(heartbeat);
    approvals.close();
    server.close();
    for (const connection of [...connections, ...nodeConnections]) connection.close(GatewayCloseCode.GoingAway, 'the server is shutting down');
    await Promise.all([...connections, ...nodeConnections].map((c) => c.closed));
    inspect.close();
    wss.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  }

  return {
    url: `ws://${authority}`,
    httpUrl: `http://${authority}`,
    host,
    port,
    token,
    tokenPath,
    tokenCreated,
    connections: () => [...connections].filter((c) => c.open).length,
    stats: () => {
      const all = [...connections];
      return {
        connections: all.filter((c) => c.open).length,
        subscriptions: all.reduce((n, c) => n + c.subscriptionCount, 0),
        pendingBytes: all.reduce((n, c) => n + c.pendingBytes, 0),
        maxPendingBytes: Math.max(0, ...all.map((c) => c.maxPendingBytes), maxPendingOfClosed),
      };
    },
    stopAdmitting: () => {
      admitting = false;
    },
    close: () => (closing ??= shutdown()),
  };
}

/** approval.requested notifications go to every connection, whatever it subscribed to. */
async function forwardApprovals(stream: EventStream, connections: Set<Connection>, logger: GatewayLogger): Promise<void> {
  try {
    for await (const event of stream) {
      if (event.type !== 'approval.requested') continue;
      const { approvalId, runId, callId, action } = event as RunEventOf<'approval.requested'>;
      const params = toJson({ approvalId, runId, callId, action });
      for (const connection of connections) if (connection.open) connection.notify('approval.requested', params);
    }
  } catch (error) {
    logger.error('approval notifications stopped', error);
  }
}

function pathOf(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? '/', 'http://gateway.invalid').pathname;
  } catch {
    return '/';
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}
