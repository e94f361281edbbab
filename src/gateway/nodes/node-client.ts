/*
 * The node client (`switchyard node`, README "Node clients"): connects to a gateway with
 * role node and a name, runs the node.invoke requests it receives (concurrently if asked:
 * one node's calls are kept apart by the engine's claim, not here), stops a command on
 * node.cancel, and reconnects with backoff whenever the gateway goes away, or stops answering
 * its pings (docs/gateway-connections.md) — until its signal aborts.
 */
import WebSocket from 'ws';
import { ToolError } from '../../tools/tool.js';
import { GatewayCloseCode } from '../close-codes.js';
import { startHeartbeat } from '../heartbeat.js';
import { directSender, PeerSocket } from '../peer-socket.js';
import { errorAnswer, idOf, readShape, RpcErrorCode, type FrameShape, type RequestId } from '../protocol.js';
import { answerFrame, executeInvocation, type NodeExecutorOptions } from './node-executor.js';
import {
  NODE_NAME_HEADER,
  NODE_ROLE,
  NodeServerFrameSchema,
  ROLE_HEADER,
  type NodeInvokeParams,
  type NodeServerFrame,
} from './node-protocol.js';

export interface NodeClientLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface NodeClientOptions {
  /** The gateway, ws://HOST:PORT. */
  url: string;
  token: string;
  name: string;
  /** Where and how commands run. */
  executor: NodeExecutorOptions;
  /** Aborting it stops the client: commands in flight are killed, the connection closed. */
  signal: AbortSignal;
  /** Default: silent. */
  logger?: Partial<NodeClientLogger>;
  /** First reconnect delay; it doubles (with jitter) up to maxReconnectDelayMs. Default 250 ms. */
  reconnectDelayMs?: number;
  /** Default 10 s. */
  maxReconnectDelayMs?: number;
  /** Ping interval; a gateway that misses a pong until the next one is given up on. 0 = off. Default 30 s. */
  heartbeatMs?: number;
  /** Give up one connection attempt after this long. Default 10 s. */
  connectTimeoutMs?: number;
  /** Called each time the gateway confirms the registration. */
  onRegistered?(name: string): void;
}

/** `unauthorized`: the token is wrong (401); `refused`: the name is taken or invalid, or the gateway takes no nodes. */
export type NodeClientErrorCode = 'unauthorized' | 'refused';

/** A refusal that retrying cannot fix: the client stops with it. */
export class NodeClientError extends Error {
  override readonly name = 'NodeClientError';
  constructor(
    readonly code: NodeClientErrorCode,
    message: string,
  ) {
    super(message);
  }
}

type SessionEnd =
  | { kind: 'stopped' }
  | { kind: 'closed'; code: number; reason: string; registered: boolean }
  | { kind: 'failed'; message: string; status?: number };

const DEFAULT_FRAME_LIMIT = 1024 * 1024;
/** How long the node's close handshake may take on shutdown before its socket is destroyed. */
const CLOSE_TIMEOUT_MS = 5_000;

/** A request the node cannot run is answered (it has an id); anything else wrong is logged and dropped. */
function serverFrameShape(logger: NodeClientLogger): FrameShape<NodeServerFrame> {
  return {
    schema: NodeServerFrameSchema,
    refuse: (raw, issues) => {
      const id = idOf(raw);
      const method = (raw as { method?: unknown } | null)?.method;
      if (id !== null && typeof method === 'string' && method !== 'node.invoke') {
        return errorAnswer(
          id,
          RpcErrorCode.MethodNotFound,
          `a node only runs node.invoke, not "${method.slice(0, 100)}"`,
        );
      }
      if (id !== null) return errorAnswer(id, RpcErrorCode.InvalidParams, 'invalid node.invoke request', { issues });
      logger.warn(
        `ignored an invalid frame from the gateway: ${issues.map((i) => `${i.path || '(frame)'}: ${i.message}`).join('; ')}`,
      );
      return undefined;
    },
  };
}

/** Resolves once the signal has stopped the client; rejects with a NodeClientError on a refusal. */
export async function runNodeClient(options: NodeClientOptions): Promise<void> {
  const logger: NodeClientLogger = { info: () => {}, warn: () => {}, ...options.logger };
  const initialDelay = options.reconnectDelayMs ?? 250;
  const maxDelay = options.maxReconnectDelayMs ?? 10_000;
  let everRegistered = false;
  let attempt = 0;
  while (!options.signal.aborted) {
    const end = await runSession(options, logger);
    if (end.kind === 'stopped') return;
    if (end.kind === 'closed' && end.registered) {
      everRegistered = true;
      attempt = 0;
    }
    if (end.kind === 'failed' && end.status === 401) {
      throw new NodeClientError('unauthorized', `the gateway refused the token: ${end.message}`);
    }
    if (end.kind === 'failed' && end.status === 403) {
      throw new NodeClientError('refused', `the gateway refused node "${options.name}": ${end.message}`);
    }
    // After a reconnect the name may still be held by our own old connection until the
    // gateway notices it is gone: then it is worth waiting for, not giving up.
    if (end.kind === 'closed' && end.code === GatewayCloseCode.NodeRefused && !everRegistered) {
      throw new NodeClientError('refused', `the gateway refused node "${options.name}": ${end.reason}`);
    }
    const delay = Math.round(Math.min(maxDelay, initialDelay * 2 ** attempt) * (0.5 + Math.random() / 2));
    attempt += 1;
    const why =
      end.kind === 'closed'
        ? `disconnected (${end.code}${end.reason ? ` ${end.reason}` : ''})`
        : `could not connect: ${end.message}`;
    logger.warn(`${why}; reconnecting in ${delay} ms`);
    await abortableSleep(delay, options.signal);
  }
}

function runSession(options: NodeClientOptions, logger: NodeClientLogger): Promise<SessionEnd> {
  const url = new URL(options.url);
  url.searchParams.set('role', NODE_ROLE);
  url.searchParams.set('name', options.name);
  const ws = new WebSocket(url, {
    headers: { Authorization: `Bearer ${options.token}`, [ROLE_HEADER]: NODE_ROLE, [NODE_NAME_HEADER]: options.name },
    handshakeTimeout: options.connectTimeoutMs ?? 10_000,
  });
  const running = new Map<string, AbortController>();
  const settled = new Set<Promise<void>>();
  const shape = serverFrameShape(logger);
  const sender = directSender(ws);
  let registered = false;
  let frameLimit = DEFAULT_FRAME_LIMIT;
  let failure: SessionEnd | undefined;
  let stopHeartbeat = () => {};

  const invoke = (id: RequestId, params: NodeInvokeParams) => {
    const controller = new AbortController();
    running.set(params.invocationId, controller);
    logger.info(`invocation ${params.invocationId}: ${params.command}`);
    const done: Promise<void> = executeInvocation(params, options.executor, controller.signal)
      .then(
        (result) => void sender.send(answerFrame(id, result, frameLimit)),
        (error: unknown) => {
          const code = error instanceof ToolError ? error.code : 'node_error';
          sender.send(
            errorAnswer(id, RpcErrorCode.EngineError, error instanceof Error ? error.message : String(error), { code }),
          );
        },
      )
      .finally(() => {
        if (running.get(params.invocationId) === controller) running.delete(params.invocationId);
        settled.delete(done);
      });
    settled.add(done);
  };

  const onFrame = (raw: unknown) => {
    const shaped = readShape(shape, raw);
    if (!shaped.ok) {
      if (shaped.answer !== undefined) sender.send(shaped.answer);
      return;
    }
    const frame = shaped.frame;
    if ('error' in frame) return logger.warn(`the gateway reports: ${frame.error.message}`);
    switch (frame.method) {
      case 'node.registered':
        registered = true;
        frameLimit = frame.params.maxPayloadBytes;
        logger.info(`registered as "${frame.params.name}" on ${options.url}`);
        options.onRegistered?.(frame.params.name);
        return;
      case 'node.cancel': {
        const controller = running.get(frame.params.invocationId);
        if (controller) logger.info(`invocation ${frame.params.invocationId}: cancelled by the gateway`);
        controller?.abort();
        return;
      }
      case 'node.invoke':
        return invoke(frame.id, frame.params);
    }
  };

  return new Promise<SessionEnd>((resolve) => {
    // A gateway that never answers the close handshake does not hold the shutdown up.
    const stop = () => socket.close(1000, 'node shutting down');
    const socket = new PeerSocket(ws, {
      sender,
      closeTimeoutMs: CLOSE_TIMEOUT_MS,
      binaryMessage: 'binary frames are not supported',
      onFrame,
      onError: (error) => (failure ??= { kind: 'failed', message: error.message }),
      onClosed: (code, reason) => {
        stopHeartbeat();
        options.signal.removeEventListener('abort', stop);
        // Answers can no longer be delivered: stop what still runs (the gateway failed those calls).
        for (const controller of running.values()) controller.abort();
        void Promise.allSettled([...settled]).then(() => {
          if (options.signal.aborted) resolve({ kind: 'stopped' });
          else if (failure && !registered) resolve(failure);
          else resolve({ kind: 'closed', code, reason, registered });
        });
      },
    });
    options.signal.addEventListener('abort', stop, { once: true });
    ws.on('open', () => (stopHeartbeat = startHeartbeat(options.heartbeatMs ?? 30_000, () => [socket])));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        failure = {
          kind: 'failed',
          status: res.statusCode ?? 0,
          message: body.trim() || `HTTP ${res.statusCode ?? '?'}`,
        };
        ws.terminate();
      });
    });
  });
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
