/*
 * events.subscribe in a cluster: the stored logs in Redis, replayed with XRANGE and then
 * followed live with XREAD from the last entry replayed, so a subscriber on any process sees
 * every run wherever it executes, with no gap and no duplicate — the log is the only source,
 * and an entry is in it only once it is stored. A subscription to all runs follows the capped
 * feed, plus this process's engine-wide events (engine.running, limits.changed, config.reloaded).
 */
import type { Redis } from 'ioredis';
import type { EventStream, EventStreamFilter, RunEvent, StreamEvent } from '../engine/index.js';
import type { RedisKeys } from '../store/redis-keys.js';
import { eventsOfEntries } from '../store/redis-log-entry.js';
import type { StreamEntry, StreamFollower } from './stream-follower.js';

export interface ClusterEventsDeps {
  client: Redis;
  follower: StreamFollower;
  keys: RedisKeys;
  /** This process's own live stream of everything, for the engine-wide events. */
  local: () => EventStream;
  onError: (error: unknown) => void;
}

export function openClusterEvents(deps: ClusterEventsDeps, filter: EventStreamFilter): EventStream {
  const queue = new EventQueue();
  const { client, follower, keys } = deps;
  let unfollow: (() => void) | undefined;
  let local: EventStream | undefined;
  const deliver = (entries: StreamEntry[]) => {
    for (const event of eventsOfEntries(entries)) queue.push(event);
  };
  const key =
    filter.runId !== undefined
      ? keys.runEvents(filter.runId)
      : filter.sessionId !== undefined
        ? keys.sessionEvents(filter.sessionId)
        : keys.feed();
  const start = async () => {
    let after: string;
    if (filter.fromSeq !== undefined && key !== keys.feed()) {
      const replay = (await client.xrange(key, `${filter.fromSeq + 1}-0`, '+')) as StreamEntry[];
      // The first entry may begin before fromSeq (the events of one step share an entry).
      const numberOf = (event: RunEvent) => (filter.runId !== undefined ? event.seq : event.sessionSeq);
      for (const event of eventsOfEntries(replay)) if (numberOf(event) > filter.fromSeq) queue.push(event);
      after = replay.at(-1)?.[0] ?? `${filter.fromSeq}-0`;
    } else {
      const [last] = (await client.xrevrange(key, '+', '-', 'COUNT', 1)) as StreamEntry[];
      after = last?.[0] ?? '0-0';
    }
    if (queue.closed) return;
    unfollow = follower.follow(key, after, deliver);
    if (key === keys.feed()) void forwardEngineEvents((local = deps.local()), queue);
  };
  start().catch((error: unknown) => {
    deps.onError(error);
    queue.close();
  });
  queue.onClose(() => {
    unfollow?.();
    local?.close();
  });
  return queue.stream();
}

async function forwardEngineEvents(local: EventStream, queue: EventQueue): Promise<void> {
  for await (const event of local) if (!('runId' in event)) queue.push(event);
}

/** An async iterable fed by push(); close() ends it, also while it waits. */
class EventQueue {
  private readonly buffer: StreamEvent[] = [];
  private wake: (() => void) | undefined;
  private readonly closers: (() => void)[] = [];
  closed = false;

  push(event: StreamEvent): void {
    if (this.closed) return;
    this.buffer.push(event);
    this.wake?.();
  }

  onClose(fn: () => void): void {
    this.closers.push(fn);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.closers.splice(0)) fn();
    this.wake?.();
  }

  stream(): EventStream {
    const close = () => this.close();
    const next = async (): Promise<IteratorResult<StreamEvent>> => {
      for (;;) {
        const event = this.buffer.shift();
        if (event) return { value: event, done: false };
        if (this.closed) return { value: undefined, done: true };
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    };
    return {
      close,
      [Symbol.asyncIterator]: () => ({
        next,
        return: async () => {
          close();
          return { value: undefined, done: true };
        },
      }),
    };
  }
}
