/*
 * Follows Redis Streams live for a whole process over one blocking connection: every stream
 * someone listens to (a run's log, a session's log, the feed, this process's inbox) is read by
 * one XREAD loop, each listener from its own position, so a process holds one connection
 * however many subscriptions its clients open. A new listener wakes the loop (CLIENT UNBLOCK)
 * so it does not wait for the current read to time out.
 */
import type { Redis } from 'ioredis';
import { createRedisClient } from '../store/redis-client.js';

export type StreamEntry = [id: string, fields: string[]];

interface Listener {
  after: string;
  deliver: (entries: StreamEntry[]) => void;
}

/** How long one XREAD blocks when nothing arrives (also the bound on a missed wake-up). */
const BLOCK_MS = 1000;
const BATCH = 512;

export class StreamFollower {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly reader: Redis;
  private readerId: number | undefined;
  private blocked = false;
  private wake: (() => void) | undefined;
  private closed = false;
  private readonly loop: Promise<void>;

  constructor(
    url: string,
    /** A command connection, for waking the reader. */
    private readonly commands: Redis,
    private readonly onError: (error: unknown) => void,
  ) {
    this.reader = createRedisClient(url, { name: 'switchyard-follower' });
    this.reader.on('ready', () => {
      this.reader.client('ID').then(
        (id) => (this.readerId = Number(id)),
        () => {},
      );
    });
    this.loop = this.run();
  }

  /** Delivers the stream's entries after `after` (a stream id) as they arrive; returns the unfollow. */
  follow(key: string, after: string, deliver: (entries: StreamEntry[]) => void): () => void {
    const listener: Listener = { after, deliver };
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    this.nudge();
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.nudge();
    this.reader.disconnect();
    await this.loop;
  }

  private nudge(): void {
    this.wake?.();
    if (this.blocked && this.readerId !== undefined) this.commands.client('UNBLOCK', this.readerId).catch(() => {});
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const keys = [...this.listeners.keys()];
      if (keys.length === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const from = keys.map((key) => earliest([...this.listeners.get(key)!].map((l) => l.after)));
      let reply: [string, StreamEntry[]][] | null;
      this.blocked = true;
      try {
        reply = (await this.reader.xread('COUNT', BATCH, 'BLOCK', BLOCK_MS, 'STREAMS', ...keys, ...from)) as
          [string, StreamEntry[]][] | null;
      } catch (error) {
        if (this.closed) break;
        this.onError(error);
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      } finally {
        this.blocked = false;
      }
      for (const [key, entries] of reply ?? []) {
        for (const listener of [...(this.listeners.get(key) ?? [])]) {
          const fresh = entries.filter(([id]) => compareIds(id, listener.after) > 0);
          if (fresh.length === 0) continue;
          listener.after = fresh.at(-1)![0];
          try {
            listener.deliver(fresh);
          } catch (error) {
            this.onError(error);
          }
        }
      }
    }
  }
}

/** Orders stream ids ("<ms>-<seq>"). */
export function compareIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am - bm : (as ?? 0) - (bs ?? 0);
}

function earliest(ids: string[]): string {
  return ids.reduce((min, id) => (compareIds(id, min) < 0 ? id : min));
}
