/*
 * startGateway(): one HTTP server on one port that serves a few HTTP routes (http-routes.ts)
 * and upgrades authenticated requests (upgrade.ts) to WebSocket connections speaking
 * JSON-RPC 2.0 (docs/gateway-connections.md), kept in a connection registry. This file puts
 * the parts together and takes them apart again on close.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { describeValue } from '../config/issue-text.js';
import { forwardApprovals } from './approval-notifications.js';
import { ensureToken } from './auth-token.js';
import { GatewayCloseCode } from './close-codes.js';
import { ConnectionRegistry, type GatewayStats } from './connection-registry.js';
import { startHeartbeat } from './heartbeat.js';
import { httpRoutes, type HttpRouteHandler } from './http-routes.js';
import { InspectFanout } from './inspection/inspect-fanout.js';
import { consoleLogger, type GatewayLogger } from './logger.js';
import type { GatewayEngine } from './method-handlers.js';
import type { NodeRegistry } from './nodes/node-registry.js';
import { ownOriginsOf, type GuardOptions } from './request-guard.js';
import { upgradeHandler } from './upgrade.js';

export type { GatewayStats } from './connection-registry.js';
export type { HttpRouteHandler } from './http-routes.js';

export interface GatewayOptions {
  engine: GatewayEngine;
  /**
   * Interface to bind.
   * @default '127.0.0.1' (loopback)
   */
  host?: string;
  /**
   * TCP port; 0 picks a free one (read it from Gateway.port).
   * @default 7420
   */
  port?: number;
  /**
   * Where the token file lives (created if missing).
   * @default '.switchyard'
   */
  dataDir?: string;
  /**
   * Largest frame a client may send; a bigger one closes that connection with 1009.
   * @default 1048576 (1 MiB)
   */
  maxPayloadBytes?: number;
  /**
   * Browser origins allowed besides the gateway's own (http://host:port).
   * @default [] (none)
   */
  allowedOrigins?: string[];
  /**
   * Unread bytes a connection may have waiting before it is closed with 4008.
   * @default 4194304 (4 MiB)
   */
  sendBufferLimitBytes?: number;
  /**
   * A subscription stops sending while its client has more than half of sendBufferLimitBytes
   * unread; a client that takes longer than this to read down to a quarter is closed with
   * 4008 too.
   * @default 5000 (5 s)
   */
  drainTimeoutMs?: number;
  /**
   * Subscriptions (events + inspect) one connection may hold.
   * @default 256
   */
  maxSubscriptionsPerConnection?: number;
  /**
   * Requests (notifications included) one JSON-RPC batch may hold; each request of a longer
   * batch is answered -32600 with data.code "batch_too_large" and none of them runs.
   * @default 100
   */
  maxBatchRequests?: number;
  /**
   * Ping interval; a connection that misses a pong until the next one is dropped. 0 = off.
   * @default 30000 (30 s)
   */
  heartbeatMs?: number;
  /**
   * How long a closing connection gets to finish its close handshake.
   * @default 5000 (5 s)
   */
  closeTimeoutMs?: number;
  /**
   * Where node clients (role node, docs/gateway-connections.md) register, and the engine's
   * node_invoke finds them; the same registry goes to createEngine({ nodes }).
   * @default none: node connections are refused
   */
  nodes?: NodeRegistry;
  /**
   * Extra HTTP GET routes by path (e.g. "/inspect"); each requires the token.
   * @default {} (none)
   */
  httpRoutes?: Record<string, HttpRouteHandler>;
  /**
   * Extra HTTP GET routes anyone may call, without the token (e.g. "/metrics" for a scraper on
   * a private network).
   * @default {} (none)
   */
  publicHttpRoutes?: Record<string, HttpRouteHandler>;
  /**
   * What GET /readyz asks besides "not shutting down": whether the server can take runs
   * (store reachable, config valid). Must not throw.
   * @default none: ready while admitting
   */
  readiness?: () => Promise<boolean | { ready: boolean; details: string[] }>;
  /**
   * Where the gateway's log lines go; the parts given replace those of the default.
   * @default info is silent, warnings and errors go to the console
   */
  logger?: Partial<GatewayLogger>;
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
  /** Graceful shutdown, step one: run.submit is refused with engine code "closed", and /readyz answers 503. */
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
  maxBatchRequests: 100,
  heartbeatMs: 30_000,
  closeTimeoutMs: 5_000,
  drainTimeoutMs: 5_000,
};

const SHUTTING_DOWN = 'the server is shutting down';

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const host = options.host ?? DEFAULTS.host;
  const logger: GatewayLogger = { ...consoleLogger, ...options.logger };
  const { maxPayloadBytes, ...clientLimits } = connectionLimitsOf(options);
  const { token, path: tokenPath, created: tokenCreated } = await ensureToken(options.dataDir ?? DEFAULTS.dataDir);
  const { engine } = options;
  const inspect = new InspectFanout(engine, (error) => logger.error('could not serialize an inspection event', error));
  let admitting = true;
  let closing: Promise<void> | undefined;
  const registry = new ConnectionRegistry({
    client: {
      engine,
      inspect,
      admitting: () => admitting,
      logger,
      ...clientLimits,
      ...(options.nodes ? { nodes: options.nodes } : {}),
    },
    node: {
      logger,
      maxPayloadBytes,
      sendBufferLimitBytes: clientLimits.sendBufferLimitBytes,
      closeTimeoutMs: clientLimits.closeTimeoutMs,
    },
    ...(options.nodes ? { nodes: options.nodes } : {}),
  });
  // Filled in once the port is known (port 0 picks one).
  const guard: GuardOptions = { token, allowedOrigins: options.allowedOrigins ?? [], ownOrigins: [] };
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: maxPayloadBytes,
    perMessageDeflate: false,
    clientTracking: false,
  });

  const ready = async (): Promise<{ ready: boolean; details?: string[] }> => {
    if (!admitting || closing !== undefined) return { ready: false };
    const answer = options.readiness ? await options.readiness() : true;
    return typeof answer === 'boolean' ? { ready: answer } : answer;
  };
  const server = createServer(
    httpRoutes({
      routes: options.httpRoutes ?? {},
      publicRoutes: options.publicHttpRoutes ?? {},
      ready,
      guard,
      logger,
    }),
  );
  server.on(
    'upgrade',
    upgradeHandler({
      wss,
      guard,
      closing: () => closing !== undefined,
      takesNodes: options.nodes !== undefined,
      onClient: (ws, req) => registry.openClient(ws, req),
      onNode: (ws, req, name) => registry.attachNode(ws, req, name),
    }),
  );
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  const port = await listen(server, options.port ?? DEFAULTS.port, host);
  server.on('error', (error) => logger.error('HTTP server error', error));
  guard.ownOrigins = ownOriginsOf(host, port);
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;

  const stopApprovals = forwardApprovals(engine, registry);
  const stopHeartbeat = startHeartbeat(options.heartbeatMs ?? DEFAULTS.heartbeatMs, () => registry.peers());

  async function shutdown(): Promise<void> {
    admitting = false;
    stopHeartbeat();
    stopApprovals();
    server.close();
    await registry.closeAll(GatewayCloseCode.GoingAway, SHUTTING_DOWN);
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
    connections: () => registry.openClients(),
    stats: () => registry.stats(),
    stopAdmitting: () => {
      admitting = false;
    },
    close: () => (closing ??= shutdown()),
  };
}

/** The limits of every connection, defaults filled in and checked. */
function connectionLimitsOf(options: GatewayOptions) {
  const limits = {
    maxPayloadBytes: options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes,
    sendBufferLimitBytes: options.sendBufferLimitBytes ?? DEFAULTS.sendBufferLimitBytes,
    maxSubscriptions: options.maxSubscriptionsPerConnection ?? DEFAULTS.maxSubscriptionsPerConnection,
    maxBatchRequests: options.maxBatchRequests ?? DEFAULTS.maxBatchRequests,
    closeTimeoutMs: options.closeTimeoutMs ?? DEFAULTS.closeTimeoutMs,
    drainTimeoutMs: options.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs,
  };
  const got = (value: unknown) => `got ${describeValue(value)}`;
  if (!(limits.sendBufferLimitBytes > 0))
    throw new RangeError(
      `sendBufferLimitBytes must be a positive number of bytes, ${got(limits.sendBufferLimitBytes)}`,
    );
  if (!(limits.maxPayloadBytes > 0))
    throw new RangeError(`maxPayloadBytes must be a positive number of bytes, ${got(limits.maxPayloadBytes)}`);
  if (!(limits.maxBatchRequests >= 1))
    throw new RangeError(`maxBatchRequests must be at least 1, ${got(limits.maxBatchRequests)}`);
  return limits;
}

/** Resolves with the bound port once the server listens; rejects if it cannot (port taken). */
function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
