/*
 * One authenticated client connection: its socket's life (peer-socket.ts), its frames turned
 * into calls (request-dispatcher.ts), and its subscriptions (each one an engine event stream
 * or an inspect subscriber), all released when the connection closes — however it closes.
 */
import type { WebSocket } from 'ws';
import type { EventStream, EventStreamFilter } from '../engine/index.js';
import { BoundedSender } from './bounded-sender.js';
import { GatewayCloseCode } from './close-codes.js';
import { eventFrame } from './event-frames.js';
import type { InspectFanout } from './inspection/inspect-fanout.js';
import type { GatewayLogger } from './logger.js';
import type { CallScope, GatewayEngine } from './method-handlers.js';
import type { NotificationName } from './methods.js';
import { PeerSocket } from './peer-socket.js';
import { notificationFrame, RpcError, RpcErrorCode } from './protocol.js';
import { RequestDispatcher } from './request-dispatcher.js';

export interface ConnectionOptions {
  id: number;
  engine: GatewayEngine;
  inspect: InspectFanout;
  admitting: () => boolean;
  logger: GatewayLogger;
  sendBufferLimitBytes: number;
  maxSubscriptions: number;
  /** Requests one batch may hold. */
  maxBatchRequests: number;
  /** How long a closing connection may take to say goodbye before its socket is destroyed. */
  closeTimeoutMs: number;
  /** How long a subscription waits for a client with half the limit unread to read down to a quarter. */
  drainTimeoutMs: number;
  /** The node clients, for nodes.list. */
  nodes?: CallScope['nodes'];
}

const SLOW_CONSUMER_REASON = 'slow consumer: resubscribe with fromSeq';

export class Connection {
  private readonly sender: BoundedSender;
  private readonly socket: PeerSocket;
  private readonly subscriptions = new Map<string, () => void>();
  private nextSubscription = 1;
  private slowConsumer = false;
  /** Resolves when the socket has closed and everything of this connection is released. */
  readonly closed: Promise<void>;

  constructor(
    ws: WebSocket,
    private readonly options: ConnectionOptions,
  ) {
    const label = `connection ${options.id}`;
    this.sender = new BoundedSender(ws, {
      limitBytes: options.sendBufferLimitBytes,
      onOverflow: (pending) => {
        options.logger.warn(
          `${label}: ${pending} bytes unread (limit ${options.sendBufferLimitBytes}); closing it as a slow consumer`,
        );
        this.slowConsumer = true;
        this.close(GatewayCloseCode.SlowConsumer, SLOW_CONSUMER_REASON);
      },
    });
    const dispatcher = new RequestDispatcher({
      label,
      logger: options.logger,
      maxBatchRequests: options.maxBatchRequests,
      send: (frame) => void this.sender.send(frame),
      scope: (afterReply, answerWaits) => this.scope(afterReply, answerWaits),
    });
    this.socket = new PeerSocket(ws, {
      sender: this.sender,
      closeTimeoutMs: options.closeTimeoutMs,
      binaryMessage: 'binary frames are not supported; send JSON-RPC 2.0 requests as text frames',
      onFrame: (raw) => dispatcher.dispatch(raw),
      onClosing: () => this.release(),
      onClosed: () => this.release(),
      // A protocol violation (frame over maxPayload, bad UTF-8) makes ws close the socket with
      // the right code (1009, 1007); the error itself needs no more than a log line.
      onError: (error) => options.logger.info(`${label}: ${error.message}`),
    });
    this.closed = this.socket.closed.then(() => {});
  }

  get id(): number {
    return this.options.id;
  }

  /** Open and not on its way out. */
  get open(): boolean {
    return this.socket.open;
  }

  get pendingBytes(): number {
    return this.sender.pending;
  }

  get maxPendingBytes(): number {
    return this.sender.maxPendingBytes;
  }

  /** Closed with 4008: it did not read fast enough. */
  get droppedAsSlowConsumer(): boolean {
    return this.slowConsumer;
  }

  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  notify(method: NotificationName, paramsJson: string): void {
    this.sender.send(notificationFrame(method, paramsJson));
  }

  ping(): boolean {
    return this.socket.ping();
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }

  terminate(): void {
    this.socket.terminate();
  }

  private scope(afterReply: (() => void)[], answerWaits: boolean): CallScope {
    return {
      engine: this.options.engine,
      admitting: this.options.admitting,
      ...(this.options.nodes ? { nodes: this.options.nodes } : {}),
      subscribeEvents: (filter) => {
        const subscriptionId = this.reserveSubscription();
        if (!answerWaits) {
          const stream = this.openStream(subscriptionId, filter);
          afterReply.push(() => void this.pump(subscriptionId, stream, filter));
          return subscriptionId;
        }
        // A batch is answered when its slowest request is done: the stream opens with the
        // answer, so events do not pile up meanwhile. Live events count from the answer on
        // (as the client's `ready` says); a replay from fromSeq misses nothing either way.
        this.subscriptions.set(subscriptionId, () => {});
        afterReply.push(() => {
          if (this.subscriptions.has(subscriptionId))
            void this.pump(subscriptionId, this.openStream(subscriptionId, filter), filter);
        });
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
        afterReply.push(() => {
          // The actors as they are, then what happens to them: nothing can happen in between.
          for (const eventJson of this.options.inspect.current()) this.notify('inspect', `${prefix}${eventJson}}`);
          started = true;
        });
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
      throw new RpcError(
        RpcErrorCode.EngineError,
        `this connection already has ${this.options.maxSubscriptions} subscriptions; unsubscribe some first`,
        {
          code: 'too_many_subscriptions',
          max: this.options.maxSubscriptions,
        },
      );
    }
    return `sub-${this.nextSubscription++}`;
  }

  private openStream(subscriptionId: string, filter: EventStreamFilter): EventStream {
    const stream = this.options.engine.events(filter);
    this.subscriptions.set(subscriptionId, () => stream.close());
    return stream;
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
        if (
          this.sender.pending > highWater &&
          !(await this.sender.drained(this.sender.limit / 4, this.options.drainTimeoutMs))
        ) {
          this.sender.overflow();
          break;
        }
      }
    } catch (error) {
      this.options.logger.error(
        `connection ${this.id}: subscription ${subscriptionId} (${JSON.stringify(filter)}) failed`,
        error,
      );
    } finally {
      stream.close();
    }
  }

  private release(): void {
    for (const unsubscribe of this.subscriptions.values()) unsubscribe();
    this.subscriptions.clear();
  }
}
