/*
 * A typed client of the gateway: connect(url, { token }) gives one method per gateway method,
 * subscriptions as async iterables, notifications and batches (JSON-RPC 2.0), and errors as
 * ClientError values. Requests carry increasing numeric ids; answers (alone or in a batch's
 * array) are matched through a map of pending calls, all of which are rejected when the
 * socket closes.
 */
import WebSocket from 'ws';
import type { PartialConfig } from '../config/index.js';
import type { EngineSnapshot } from '../core/engine-snapshot.js';
import type { LaneChangeResult, LaneListing } from '../core/lane.js';
import type { SubmitResult } from '../core/submit-result.js';
import type { RunRequest } from '../core/run-request.js';
import type { RunEvent, StreamEvent } from '../core/run-events.js';
import type { RunResult, RunStatus } from '../core/run-status.js';
import type { SerializedInspectionEvent } from '../gateway/inspection/inspect-serialize.js';
import type { ApprovalDecision, MethodName, MethodParams, MethodResults, Notifications } from '../gateway/methods.js';
import { parseJsonText, type RpcErrorBody } from '../gateway/protocol.js';
import { ClientError, CONNECTION_CLOSED } from './client-error.js';
import { NotificationQueue } from './notification-queue.js';

/** The standard WebSocket surface the client needs (browsers' WebSocket and ws both have it). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: () => void): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
  addEventListener(type: 'error', listener: (event: { message?: string }) => void): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface ConnectOptions {
  token: string;
  /**
   * A WebSocket constructor (a browser's, for instance). It cannot set headers, so the token
   * travels as ?token= in the URL. Default: the `ws` package, with an Authorization header.
   */
  WebSocket?: WebSocketConstructor;
  /** Extra handshake headers (ws only), e.g. Origin. */
  headers?: Record<string, string>;
  /** Give up connecting after this long. Default 10 s. */
  connectTimeoutMs?: number;
}

export interface SubscribeFilter {
  runId?: string;
  sessionId?: string;
  /** Replay events after this seq (runId) or sessionSeq (sessionId), then follow live ones. */
  fromSeq?: number;
}

export interface EventSubscription<E> extends AsyncIterable<E> {
  /** Resolves once the server has confirmed the subscription (events after it are live). */
  readonly ready: Promise<void>;
  /**
   * The seq (runId filter) or sessionSeq (sessionId filter) of the last event the iteration
   * handed out: subscribe again with fromSeq = lastSeq to go on without a gap or a duplicate.
   */
  readonly lastSeq: number | undefined;
  /** Ends the iteration and unsubscribes on the server. */
  close(): void;
}

/** One call of a batch; with `notification: true` it is sent without an id and nothing answers it. */
export type BatchCall = {
  [M in MethodName]: { method: M; params: MethodParams<M>; notification?: boolean };
}[MethodName];

/** How one call of a batch ended. */
export type BatchOutcome<M extends MethodName = MethodName> =
  { ok: true; result: MethodResults[M] } | { ok: false; error: ClientError };

/** The outcomes of a batch, call by call; a notification has none. */
export type BatchOutcomes<C extends readonly BatchCall[]> = {
  -readonly [K in keyof C]: C[K] extends { notification: true }
    ? undefined
    : C[K] extends { method: infer M extends MethodName }
      ? BatchOutcome<M>
      : never;
};

export interface SwitchyardClient {
  submit(request: RunRequest): Promise<SubmitResult>;
  wait(runId: string): Promise<RunResult>;
  get(runId: string): Promise<RunStatus>;
  history(runId: string): Promise<RunEvent[]>;
  cancel(runId: string, reason?: string): Promise<boolean>;
  stopSession(sessionId: string): Promise<{ cancelled?: string; purged: number }>;
  /** The session's wait lane (docs/runs.md, "A queue you can see and change"). */
  lane(sessionId: string): Promise<LaneListing>;
  /** Lane operations on a waiting message: each answers once durable, or fails `not_waiting`. */
  withdraw(runId: string): Promise<LaneChangeResult>;
  moveInLane(runId: string, position: number): Promise<LaneChangeResult>;
  promoteToSteer(runId: string): Promise<LaneChangeResult>;
  editWaiting(runId: string, input: string): Promise<LaneChangeResult>;
  subscribe(filter: SubscribeFilter & ({ runId: string } | { sessionId: string })): EventSubscription<RunEvent>;
  subscribe(filter?: SubscribeFilter): EventSubscription<StreamEvent>;
  respondApproval(approvalId: string, decision: ApprovalDecision): Promise<boolean>;
  snapshot(): Promise<EngineSnapshot>;
  updateConfig(partial: PartialConfig): Promise<{ applied: string[]; restartRequired: string[] }>;
  inspect(): EventSubscription<SerializedInspectionEvent>;
  /** Calls back on every approval.requested notification; returns the unsubscribe function. */
  onApprovalRequested(listener: (request: Notifications['approval.requested']) => void): () => void;
  /** Any method of the table, by name. */
  call<M extends MethodName>(method: M, params: MethodParams<M>): Promise<MethodResults[M]>;
  /** Sends a notification: the server runs the method and answers nothing, not even an error. */
  notify<M extends MethodName>(method: M, params: MethodParams<M>): void;
  /**
   * Sends the calls as one batch frame; resolves once all are answered, with each call's
   * outcome in order (undefined for a notification). Calls still waiting when the connection
   * closes end with a CONNECTION_CLOSED error. An empty batch sends nothing.
   */
  batch<const C extends readonly BatchCall[]>(calls: C): Promise<BatchOutcomes<C>>;
  /** Resolves with the close code and reason once the connection has closed, for any reason. */
  readonly closed: Promise<{ code: number; reason: string }>;
  close(): Promise<void>;
}

const OPEN = 1;

export async function connect(url: string, options: ConnectOptions): Promise<SwitchyardClient> {
  const socket = openSocket(url, options);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(
        new ClientError(
          CONNECTION_CLOSED,
          `could not connect to ${redact(url)} within ${options.connectTimeoutMs ?? 10_000} ms`,
        ),
      );
      socket.close();
    }, options.connectTimeoutMs ?? 10_000);
    let failure = '';
    socket.addEventListener('open', () => {
      clearTimeout(timer);
      resolve();
    });
    socket.addEventListener('error', (event) => (failure = event.message ?? ''));
    socket.addEventListener('close', (event) => {
      clearTimeout(timer);
      reject(
        new ClientError(
          CONNECTION_CLOSED,
          `could not connect to ${redact(url)}${failure ? `: ${failure}` : ` (${event.code})`}`,
          { closeCode: event.code },
        ),
      );
    });
  });
  return new GatewayClient(socket);
}

function openSocket(url: string, options: ConnectOptions): WebSocketLike {
  if (options.WebSocket) {
    const withToken = new URL(url);
    withToken.searchParams.set('token', options.token);
    return new options.WebSocket(withToken.toString());
  }
  const socket = new WebSocket(url, { headers: { ...options.headers, Authorization: `Bearer ${options.token}` } });
  // ws implements the standard event-target surface; its typings only spell it differently.
  return socket as unknown as WebSocketLike;
}

function redact(url: string): string {
  return url.replace(/([?&]token=)[^&]*/, '$1…');
}

interface Pending {
  resolve(result: unknown): void;
  reject(error: ClientError): void;
}

/** Runs synchronously with the answer, before the notifications that follow it in the same chunk. */
type OnAnswer = (result: unknown) => void;

/** A frame from the server: an answer (alone or in a batch's array) or a notification. */
interface ServerFrame {
  id?: unknown;
  result?: unknown;
  error?: RpcErrorBody;
  method?: unknown;
  params?: unknown;
}

interface OpenSubscription {
  queue: NotificationQueue<unknown>;
}

class GatewayClient implements SwitchyardClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly subscriptions = new Map<string, OpenSubscription>();
  private readonly approvalListeners = new Set<(request: Notifications['approval.requested']) => void>();
  private closeError: ClientError | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(private readonly socket: WebSocketLike) {
    socket.addEventListener('message', (event) => this.onMessage(event.data));
    this.closed = new Promise((resolve) => {
      socket.addEventListener('close', ({ code, reason }) => {
        this.closeError = ClientError.connectionClosed(code, String(reason ?? ''));
        for (const call of this.pending.values()) call.reject(this.closeError);
        this.pending.clear();
        for (const sub of this.subscriptions.values()) sub.queue.fail(this.closeError);
        this.subscriptions.clear();
        resolve({ code, reason: String(reason ?? '') });
      });
    });
    // Errors always end in a close event, which is where they are reported.
    socket.addEventListener('error', () => {});
  }

  call<M extends MethodName>(method: M, params: MethodParams<M>, onAnswer?: OnAnswer): Promise<MethodResults[M]> {
    const closed = this.notOpen();
    if (closed) return Promise.reject(closed);
    const id = this.nextId++;
    return new Promise<MethodResults[M]>((resolve, reject) => {
      this.pending.set(id, {
        resolve: (result) => {
          onAnswer?.(result);
          resolve(result as MethodResults[M]);
        },
        reject,
      });
      this.socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  notify<M extends MethodName>(method: M, params: MethodParams<M>): void {
    if (this.notOpen()) return;
    this.socket.send(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  async batch<const C extends readonly BatchCall[]>(calls: C): Promise<BatchOutcomes<C>> {
    if (calls.length === 0) return [] as unknown as BatchOutcomes<C>;
    const closed = this.notOpen();
    if (closed) throw closed;
    const frames: object[] = [];
    const outcomes = calls.map(({ method, params, notification }) => {
      if (notification) {
        frames.push({ jsonrpc: '2.0', method, params });
        return undefined;
      }
      const id = this.nextId++;
      frames.push({ jsonrpc: '2.0', id, method, params });
      return new Promise<BatchOutcome>((resolve) =>
        this.pending.set(id, {
          resolve: (result) => resolve({ ok: true, result: result as MethodResults[MethodName] }),
          reject: (error) => resolve({ ok: false, error }),
        }),
      );
    });
    this.socket.send(JSON.stringify(frames));
    return (await Promise.all(outcomes)) as BatchOutcomes<C>;
  }

  submit(request: RunRequest): Promise<SubmitResult> {
    return this.call('run.submit', request);
  }

  wait(runId: string): Promise<RunResult> {
    return this.call('run.wait', { runId });
  }

  get(runId: string): Promise<RunStatus> {
    return this.call('run.get', { runId });
  }

  history(runId: string): Promise<RunEvent[]> {
    return this.call('run.history', { runId });
  }

  async cancel(runId: string, reason?: string): Promise<boolean> {
    const { cancelled } = await this.call('run.cancel', { runId, ...(reason !== undefined ? { reason } : {}) });
    return cancelled;
  }

  stopSession(sessionId: string): Promise<{ cancelled?: string; purged: number }> {
    return this.call('session.stop', { sessionId });
  }

  lane(sessionId: string): Promise<LaneListing> {
    return this.call('lane.list', { sessionId });
  }

  withdraw(runId: string): Promise<LaneChangeResult> {
    return this.call('lane.withdraw', { runId });
  }

  moveInLane(runId: string, position: number): Promise<LaneChangeResult> {
    return this.call('lane.move', { runId, position });
  }

  promoteToSteer(runId: string): Promise<LaneChangeResult> {
    return this.call('lane.promote', { runId });
  }

  editWaiting(runId: string, input: string): Promise<LaneChangeResult> {
    return this.call('lane.edit', { runId, input });
  }

  async respondApproval(approvalId: string, decision: ApprovalDecision): Promise<boolean> {
    const { ok } = await this.call('approval.respond', { approvalId, decision });
    return ok;
  }

  snapshot(): Promise<EngineSnapshot> {
    return this.call('engine.snapshot', {});
  }

  updateConfig(partial: PartialConfig): Promise<{ applied: string[]; restartRequired: string[] }> {
    return this.call('config.update', partial as Record<string, unknown>);
  }

  subscribe(filter: SubscribeFilter & ({ runId: string } | { sessionId: string })): EventSubscription<RunEvent>;
  subscribe(filter?: SubscribeFilter): EventSubscription<StreamEvent>;
  subscribe(filter: SubscribeFilter = {}): EventSubscription<StreamEvent> {
    const orderOf =
      filter.runId !== undefined
        ? (event: StreamEvent) => event.seq
        : filter.sessionId !== undefined
          ? (event: StreamEvent) => ('sessionSeq' in event ? event.sessionSeq : undefined)
          : () => undefined;
    return this.openSubscription<StreamEvent>(
      (onAnswer) => this.call('events.subscribe', { ...filter }, onAnswer),
      orderOf,
      filter.fromSeq,
    );
  }

  inspect(): EventSubscription<SerializedInspectionEvent> {
    return this.openSubscription<SerializedInspectionEvent>(
      (onAnswer) => this.call('inspect.subscribe', {}, onAnswer),
      () => undefined,
      undefined,
    );
  }

  onApprovalRequested(listener: (request: Notifications['approval.requested']) => void): () => void {
    this.approvalListeners.add(listener);
    return () => this.approvalListeners.delete(listener);
  }

  async close(): Promise<void> {
    if (!this.closeError) this.socket.close(1000, 'client closed');
    await this.closed;
  }

  private openSubscription<E>(
    subscribe: (onAnswer: OnAnswer) => Promise<{ subscriptionId: string }>,
    orderOf: (event: E) => number | undefined,
    fromSeq: number | undefined,
  ): EventSubscription<E> {
    const queue = new NotificationQueue<unknown>();
    let subscriptionId: string | undefined;
    let lastSeq = fromSeq;
    const unsubscribe = (id: string) => {
      this.subscriptions.delete(id);
      this.call('events.unsubscribe', { subscriptionId: id }).catch(() => {});
    };
    // Registered synchronously with the answer: the server's first events may follow it in
    // the same network chunk, before any promise callback would run.
    const ready = subscribe((result) => {
      subscriptionId = (result as { subscriptionId: string }).subscriptionId;
      if (queue.isEnded) unsubscribe(subscriptionId);
      else this.subscriptions.set(subscriptionId, { queue });
    }).then(
      () => {},
      (error: ClientError) => {
        queue.fail(error);
        throw error;
      },
    );
    // A failed subscribe surfaces through the iteration; `ready` need not be awaited.
    ready.catch(() => {});
    const close = () => {
      queue.end();
      if (subscriptionId !== undefined && this.subscriptions.has(subscriptionId)) unsubscribe(subscriptionId);
    };
    return {
      ready,
      get lastSeq() {
        return lastSeq;
      },
      close,
      [Symbol.asyncIterator]: () => {
        const inner = queue[Symbol.asyncIterator]();
        return {
          next: async (): Promise<IteratorResult<E>> => {
            const result = (await inner.next()) as IteratorResult<E>;
            if (!result.done) lastSeq = orderOf(result.value) ?? lastSeq;
            return result;
          },
          return: async (): Promise<IteratorResult<E>> => {
            close();
            return { value: undefined, done: true };
          },
        };
      },
    };
  }

  /** The error a call gets when the connection cannot carry it; undefined while open. */
  private notOpen(): ClientError | undefined {
    if (this.closeError) return this.closeError;
    if (this.socket.readyState !== OPEN) return ClientError.connectionClosed(1006, 'not open');
    return undefined;
  }

  private onMessage(data: unknown): void {
    // The server sends JSON only; anything else cannot be matched to a call and is dropped.
    const parsed = parseJsonText(typeof data === 'string' ? data : String(data));
    if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return;
    if (Array.isArray(parsed.value)) {
      for (const answer of parsed.value) this.onFrame(answer as ServerFrame);
      return;
    }
    this.onFrame(parsed.value as ServerFrame);
  }

  private onFrame(frame: ServerFrame | null): void {
    if (typeof frame !== 'object' || frame === null) return;
    if (typeof frame.method === 'string') {
      this.onNotification(frame.method, frame.params);
      return;
    }
    if (typeof frame.id !== 'number') return;
    const call = this.pending.get(frame.id);
    if (!call) return;
    this.pending.delete(frame.id);
    if (frame.error) call.reject(ClientError.fromBody(frame.error));
    else call.resolve(frame.result);
  }

  private onNotification(method: string, params: unknown): void {
    if (method === 'event' || method === 'inspect') {
      const { subscriptionId, event } = params as Notifications['event'];
      this.subscriptions.get(subscriptionId)?.queue.push(event);
    } else if (method === 'approval.requested') {
      for (const listener of [...this.approvalListeners]) {
        try {
          listener(params as Notifications['approval.requested']);
        } catch {
          // A listener's fault is its own; the connection goes on.
        }
      }
    }
  }
}
