/*
 * Processes talk through Redis, never to each other directly (docs/cluster.md, "Routing"):
 * each has an inbox stream; a request is an entry in the addressee's inbox, its reply an
 * entry in the asker's. A request that gets no reply in time (its addressee died or stalled)
 * fails with `node_unavailable`, and the asker decides again — by then the session may have
 * another owner.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { EngineError, isEngineError } from '../core/errors.js';
import type { ClusterKeys } from './cluster-keys.js';
import type { StreamEntry, StreamFollower } from './stream-follower.js';

/** Inbox entries kept (approximately); a reply is read long before this many more arrive. */
const INBOX_LENGTH = 10_000;

export type InboxHandler = (params: unknown, from: string) => unknown;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class NodeInbox {
  private readonly pending = new Map<string, Pending>();
  private readonly handlers = new Map<string, InboxHandler>();
  private unfollow: (() => void) | undefined;

  constructor(
    private readonly client: Redis,
    private readonly follower: StreamFollower,
    private readonly keys: ClusterKeys,
    readonly nodeId: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Answers requests of `method` with `handler` (its result, or the EngineError it throws). */
  handle(method: string, handler: InboxHandler): void {
    this.handlers.set(method, handler);
  }

  /** Starts reading this process's inbox, from what arrives from now on. */
  async start(): Promise<void> {
    const key = this.keys.inbox(this.nodeId);
    const [last] = await this.client.xrevrange(key, '+', '-', 'COUNT', 1);
    this.unfollow = this.follower.follow(key, last?.[0] ?? '0-0', (entries) => this.receive(entries));
  }

  stop(): void {
    this.unfollow?.();
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(new EngineError('closed', 'this process is shutting down'));
      this.pending.delete(id);
    }
  }

  /** Asks `node` to run `method`; rejects with its EngineError, or `node_unavailable` after `timeoutMs`. */
  request<T>(node: string, method: string, params: unknown, timeoutMs: number): Promise<T> {
    const id = randomUUID();
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(
          new EngineError('node_unavailable', `process ${node} did not answer ${method} within ${timeoutMs} ms`, {
            node,
          }),
        );
      }, timeoutMs);
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      this.send(node, ['k', 'req', 'id', id, 'from', this.nodeId, 'm', method, 'b', JSON.stringify(params ?? null)]);
    });
  }

  /** A message that expects no reply. */
  tell(node: string, method: string, params: unknown): void {
    this.send(node, ['k', 'msg', 'from', this.nodeId, 'm', method, 'b', JSON.stringify(params ?? null)]);
  }

  private send(node: string, fields: string[]): void {
    this.client.xadd(this.keys.inbox(node), 'MAXLEN', '~', INBOX_LENGTH, '*', ...fields).catch(this.onError);
  }

  private receive(entries: StreamEntry[]): void {
    for (const [, list] of entries) {
      const f = fieldsOf(list);
      if (f.k === 'rep') this.settle(f);
      else void this.answer(f);
    }
  }

  private settle(f: Record<string, string>): void {
    const pending = this.pending.get(f.id ?? '');
    if (!pending) return;
    this.pending.delete(f.id!);
    clearTimeout(pending.timer);
    const body = JSON.parse(f.b ?? 'null') as unknown;
    if (f.ok === '1') pending.resolve(body);
    else {
      const { code, message, details } = body as { code: string; message: string; details?: unknown };
      pending.reject(new EngineError(code as never, message, details));
    }
  }

  private async answer(f: Record<string, string>): Promise<void> {
    const handler = this.handlers.get(f.m ?? '');
    let reply: string[];
    try {
      if (!handler) throw new EngineError('internal', `process ${this.nodeId} has no handler for ${f.m}`);
      const result = await handler(JSON.parse(f.b ?? 'null'), f.from ?? '');
      reply = ['ok', '1', 'b', JSON.stringify(result ?? null)];
    } catch (error) {
      if (!isEngineError(error)) this.onError(error);
      const body = isEngineError(error)
        ? {
            code: error.code,
            message: error.message,
            ...(error.details !== undefined ? { details: error.details } : {}),
          }
        : {
            code: 'internal',
            message: `process ${this.nodeId} failed to answer ${f.m}: ${error instanceof Error ? error.message : String(error)}`,
          };
      reply = ['ok', '0', 'b', JSON.stringify(body)];
    }
    if (f.k === 'req' && f.from) this.send(f.from, ['k', 'rep', 'id', f.id ?? '', ...reply]);
  }
}

function fieldsOf(list: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) fields[list[i]!] = list[i + 1]!;
  return fields;
}
