/*
 * A persistent FIFO: the limiter keeps one per class and agent for the runs waiting for a
 * permit. Pushing at the back and taking the front cost O(1), and no operation changes what
 * an older version holds, so a statechart's context can keep the queue without copying it at
 * every change — with 10,000 sessions waiting at once, copying was most of a run's cost
 * (bench/scaling.bench.ts). Versions share one append-only array and each sees only its window
 * [start, end): the newest version appends in place, an older one copies its window first.
 * Pure: no clock, no I/O.
 */

export interface WaitQueue<T> {
  /** Shared with other versions; only [start, end) belongs to this one. */
  readonly items: readonly T[];
  readonly start: number;
  readonly end: number;
}

/** Taken items kept at the front before a pop copies the window into a fresh array. */
const COMPACT_AFTER = 64;

export function emptyQueue<T>(): WaitQueue<T> {
  return { items: [], start: 0, end: 0 };
}

export function sizeOf<T>(queue: WaitQueue<T>): number {
  return queue.end - queue.start;
}

/** The oldest item. */
export function frontOf<T>(queue: WaitQueue<T>): T | undefined {
  return queue.start < queue.end ? queue.items[queue.start] : undefined;
}

/** The newest item. */
export function backOf<T>(queue: WaitQueue<T>): T | undefined {
  return queue.start < queue.end ? queue.items[queue.end - 1] : undefined;
}

/** The queue with `item` at the back. */
export function pushed<T>(queue: WaitQueue<T>, item: T): WaitQueue<T> {
  if (queue.end === queue.items.length) {
    // No version sees past `end`: appending in place changes nothing any version holds.
    (queue.items as T[]).push(item);
    return { items: queue.items, start: queue.start, end: queue.end + 1 };
  }
  const items = queue.items.slice(queue.start, queue.end);
  items.push(item);
  return { items, start: 0, end: items.length };
}

/** The queue without its front item. */
export function popped<T>(queue: WaitQueue<T>): WaitQueue<T> {
  if (queue.start >= queue.end) return queue;
  const start = queue.start + 1;
  // Taken items are let go now and then, so a long-lived queue does not keep every waiter it had.
  if (start >= COMPACT_AFTER && start * 2 >= queue.end) {
    const items = queue.items.slice(start, queue.end);
    return { items, start: 0, end: items.length };
  }
  return { items: queue.items, start, end: queue.end };
}

/** The queue without the items `drop` matches (a copy of the window; for the rare removal from the middle). */
export function withoutItems<T>(queue: WaitQueue<T>, drop: (item: T) => boolean): WaitQueue<T> {
  const items = queue.items.slice(queue.start, queue.end).filter((item) => !drop(item));
  return items.length === sizeOf(queue) ? queue : { items, start: 0, end: items.length };
}

export function someItem<T>(queue: WaitQueue<T>, test: (item: T) => boolean): boolean {
  for (let i = queue.start; i < queue.end; i++) if (test(queue.items[i]!)) return true;
  return false;
}

/** The items, oldest first. */
export function itemsOf<T>(queue: WaitQueue<T>): T[] {
  return queue.items.slice(queue.start, queue.end);
}
