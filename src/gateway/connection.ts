/*
 * One authenticated WebSocket connection: validates every frame, dispatches calls to the
 * method handlers, owns the connection's subscriptions (each one an engine event stream or
 * an inspect subscriber), and releases all of them when the connection closes — however it
 * closes.
 */
import type { RawData, WebSocket } from 'ws';
import type { EventStream, EventStreamFilter } from '../engine/index.js';
import { BoundedSender } from './bounded-sender.js';
import type { InspectFanout } from './inspect-fanout.js';
import { methodHandlers, rpcErrorOf, type CallScope, type GatewayEngine } from './method-handlers.js';
import { GatewayCloseCode, isMethodName, MethodParamsSchemas, type MethodName, type NotificationName } from './methods.js';
import {
  errorFrame,
  idOf,
  issuesOf,
  notificationFrame,
  RequestFrameSchema,
  resultFrame,
  RpcError,
  RpcErrorCode,
  toJson,
  type RequestFrame,
  readJsonFrame,
} from './protocol.js';

export interface GatewayLogger {
  info(message: string): void;
  warn(message: string, error?: unknown): void;
  error(message: string, error?: unknown): void;
}

export interface ConnectionOptions {
  id: number;
  engine: GatewayEngine;
  inspect: InspectFanout;
  admitting: () => boolean;
  logger: GatewayLogger;
  sendBufferLimitBytes: number;
  maxSubscriptions: number;
  /** How long a closing connection may take to say goodbye before its socket is destroyed. */
  closeTimeoutMs: number;
  /** How long a subscription waits for a client with half the limit unread to read down to a quarter. */
  drainTimeoutMs: number;
  /** The node clients, for nodes.list. */
  nodes?: CallScope['nodes'];
}

const KNOWN_METHODS = Object.keys(MethodParamsSchemas).join(', ');
const SLOW_CONSUMER_REASON = 'slow consumer: resubscribe with fromSeq';

export class Connection {
  private readonly sender: BoundedSender;
  private readonly subscriptions = new Map<string, () => void>();
  private nextSubscription = 1;
  private closing = false;
  private alive = true;
  private terminateTimer: NodeJS.Timeout | undefined;
  /** Resolves when the socket has closed and everything of this connection is released. */
  readonly closed: Promise<void>;

  constructor(
    private readonly ws: WebSocket,
    private readonly options: ConnectionOptions,
  ) {
    this.sender = new BoundedSender(ws, {
      limitBytes: options.sendBufferLimitBytes,
      onOverflow: (pending) => {
        options.logger.warn(`connection ${options.id}: ${pending} bytes unread (limit ${options.sendBufferLimitBytes}); closing it as a slow consumer`);
        this.close(GatewayCloseCode.SlowConsumer, SLOW_CONSUMER_REASON);
      },
    });
    this.closed = new Promise<void>((resolve) => {
      ws.once('close', () => {
        clearTimeout(this.terminateTimer);
        this.release();
        resolve();
      });
    });
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('pong', () => (this.alive = true));
    // A protocol violation (frame over maxPayload, bad UTF-8) makes ws close the socket with
    // the right code (1009, 1007); the error itself needs no more than a log line.
    ws.on('error', (error) => options.logger.info(`connection ${options.id}: ${error.message}`));
  }

  get id(): number {
    return this.options.id;
  }

  /** Open and not on its way out. */
  get open(): boolean {
    return !this.closing && this.ws.readyState === this.ws.OPEN;
  }

  get pendingBytes(): number {
    return this.sender.pending;
  }

  get maxPendingBytes(): number {
    return this.sender.maxPendingBytes;
  }

  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  notify(method: NotificationName, paramsJson: string): void {
    this.sender.send(notificationFrame(method, paramsJson));
  }

  /** One heartbeat: false when the previous ping went unanswered (the caller terminates). */
  ping(): boolean {
    if (!this.alive) return false;
    this.alive = false;
    if (this.ws.readyState === this.ws.OPEN) this.ws.ping();
    return true;
  }

  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    this.sender.stop();
    this.release();
    this.ws.close(code, reason);
    // A client that never reads will never see the close frame: its socket goes anyway.
    this.terminateTimer = setTimeout(() => this.ws.terminate(), this.options.closeTimeoutMs).unref();
  }

  terminate(): void {
    this.closing = true;
    this.sender.stop();
    this.release();
    this.ws.terminate();
  }

  // ---------------------------------------------------------------------------------------
  // Frames

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    const parsed = readJsonFrame(data, isBinary, 'binary frames are not supported; send JSON-RPC 2.0 requests as text frames');
    if (!parsed.ok) {
      this.sendError(null, parsed.code, parsed.message);
      return;
    }
    const raw = parsed.value;
    if (Array.isArray(raw)) {
      this.sendError(null, RpcErrorCode.InvalidRequest, 'batch requests are not supported; send one request per frame');
      return;
    }
    const frame = RequestFrameSchema.safeParse(raw);
    if (!frame.success) {
      this.sendError(idOf(raw), RpcErrorCode.InvalidRequest, 'invalid request: expected {"jsonrpc":"2.0","id":<string|number>,"method":<string>,"params"?:<object>}', {
        issues: issuesOf(frame.error),
      });
      return;
    }
    const { id, method } = frame.data;
    if (!isMethodName(method)) {
      this.sendError(id, RpcErrorCode.MethodNotFound, `unknown method "${method.slice(0, 100)}"; known: ${KNOWN_METHODS}`);
      return;
    }
    void this.call(frame.data, method);
  }

  private async call(frame: RequestFrame, method: MethodName): Promise<void> {
    const params = MethodParamsSchemas[method].safeParse(frame.params ?? {});
    if (!params.success) {
      this.sendError(frame.id, RpcErrorCode.InvalidParams, `invalid params for ${method}`, {
        ...(method === 'run.submit' ? { code: 'invalid_request' } : {}),
        issues: issuesOf(params.error),
      });
      return;
    }
    const afterReply: (() => void)[] = [];
    // The table is keyed by method, and the params were parsed by that method's own schema.
    const handler = methodHandlers[method] as (params: unknown, scope: CallScope) => unknown;
    try {
      const result = await handler(params.data, this.scope(afterReply));
      this.sender.send(resultFrame(frame.id, result));
      for (const start of afterReply) start();
    } catch (error) {
      const { body, unexpected } = rpcErrorOf(error);
      if (unexpected) this.options.logger.error(`connection ${this.id}: ${method} failed`, error);
      this.sender.send(errorFrame(frame.id, body));
    }
  }

  private sendError(id: RequestFrame['id'] | null, code: number, message: string, data?: unknown): void {
    this.sender.send(errorFrame(id, { code, message, ...(data !== undefined ? { data } : {}) }));
  }

  private scope(afterReply: (() => void)[]): CallScope {
    return {
      engine: this.options.engine,
      admitting: this.options.admitting,
      ...(this.options.nodes ? { nodes: this.options.nodes } : {}),
      subscribeEvents: (filter) => {
        const subscriptionId = this.reserveSubscription();
        const stream = this.options.engine.events(filter);
        this.subscriptions.set(subscriptionId, () => stream.close());
        afterReply.push(() => void this.pump(subscriptionId, stream, filter));
        return subscriptionId;
      },
      subscribeInspect: () => {
        const subscriptionId = this.reserveSubscription();
        const prefix = `{"subscriptionId":${JSON.stringify(subscriptionId)},"event":`;
        let started = false;
        const unsubscribe = this.options.inspect.subscribe((eventJson) => {
          if (started) this.notify('inspect', `${prefix}${eventJson}}`);
        });
        this.subscriptions.set(subscriptionId, unsubscribe);
        afterReply.push(() => (started = true));
        return subscriptionId;
      },
      unsubscribe: (subscriptionId) => {
        this.subscriptions.get(subscriptionId)?.();
        this.subscriptions.delete(subscriptionId);
      },
    };
  }

  private reserveSubscription(): string {
    if (this.subscriptions.size >= this.options.maxSubscriptions) {
      throw new RpcError(RpcErrorCode.EngineError, `this connection already has ${this.options.maxSubscriptions} subscriptions; unsubscribe some first`, {
        code: 'too_many_subscriptions',
        max: this.options.maxSubscriptions,
      });
    }
    return `sub-${this.nextSubscription++}`;
  }

  /**
   * Forwards a subscription's events. Above half the send limit it waits for the client to
   * read down to a quarter, so a big replay flows to a fast client; a client that does not
   * within drainTimeoutMs is dropped as a slow consumer, like one that passes the limit.
   */
  private async pump(subscriptionId: string, stream: EventStream, filter: EventStreamFilter): Promise<void> {
    const highWater = this.sender.limit / 2;
    try {
      for await (const event of stream) {
        if (!this.sender.send(eventFrame(subscriptionId, event))) break;
        if (this.sender.pending > highWater && !(await this.sender.drained(this.sender.limit / 4, this.options.drainTimeoutMs))) {
          this.sender.overflow();
          break;
        }
      }
    } catch (error) {
      this.options.logger.error(`connection ${this.id}: subscription ${subscriptionId} (${JSON.stringify(filter)}) failed`, error);
    } finally {
      stream.close();
    }
  }

  private release(): void {
    for (const unsubscribe of this.subscriptions.values()) unsubscribe();
    this.subscriptions.clear();
  }
}

/**
 * Frames of recent events, shared by the connections they go to: a live event reaches every
 * subscriber as the same object, so subscriptions with the same id (each connection's first
 * is "sub-1") share one serialized frame instead of building (and flattening) one each —
 * most of the cost of fanning events out to many clients. Bounded by the characters kept.
 */
const recentEvents = new Map<object, { json: string; frames: Map<string, string>; chars: number }>();
const RECENT_EVENT_CHARS = 4 * 1024 * 1024;
let recentEventChars = 0;

function eventFrame(subscriptionId: string, event: object): string {
  let serialized = recentEvents.get(event);
  let frame = serialized?.frames.get(subscriptionId);
  if (frame !== undefined) return frame;
  if (!serialized) {
    const json = toJson(event);
    serialized = { json, frames: new Map(), chars: json.length };
    recentEvents.set(event, serialized);
    recentEventChars += json.length;
  }
  frame = notificationFrame('event', `{"subscriptionId":${JSON.stringify(subscriptionId)},"event":${serialized.json}}`);
  serialized.frames.set(subscriptionId, frame);
  serialized.chars += frame.length;
  recentEventChars += frame.length;
  for (const [oldest, entry] of recentEvents) {
    if (recentEventChars <= RECENT_EVENT_CHARS) break;
    recentEvents.delete(oldest);
    recentEventChars -= entry.chars;
  }
  return frame;
}

