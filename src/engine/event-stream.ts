/*
 * engine.events(filter): an async iterable that replays stored events past `fromSeq` and then
 * follows live ones, with no gap and no duplicate between the two (live events are buffered
 * while the replay is read, then de-duplicated by sequence number). close() ends the
 * iteration, also one that is waiting for its next event.
 */
import type { EventFilter, EventLog } from './event-log.js';
import type { RunEvent, StreamEvent } from '../core/run-events.js';
import type { Store } from '../store/types.js';

export interface EventStreamFilter extends EventFilter {
  /** Replay events after this seq (per run with runId, per session with sessionId). */
  fromSeq?: number;
}

export type EventStream = AsyncIterable<StreamEvent> & { close(): void };

export function openEventStream(log: EventLog, store: Store, filter: EventStreamFilter): EventStream {
  const buffer: StreamEvent[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  let replaying = filter.fromSeq !== undefined && (filter.runId !== undefined || filter.sessionId !== undefined);
  let lastSeq = filter.fromSeq ?? 0;
  const held: StreamEvent[] = [];

  const orderOf = (event: StreamEvent): number =>
    filter.runId !== undefined ? event.seq : ((event as RunEvent).sessionSeq ?? event.seq);

  const push = (event: StreamEvent) => {
    if (closed) return;
    if (replaying) {
      held.push(event);
      return;
    }
    buffer.push(event);
    wake?.();
  };

  const unsubscribe = log.subscribe(
    { runId: filter.runId, sessionId: filter.runId === undefined ? filter.sessionId : undefined },
    push,
  );

  if (replaying) {
    const read =
      filter.runId !== undefined
        ? store.readEvents(filter.runId, filter.fromSeq)
        : store.readSessionEvents(filter.sessionId!, filter.fromSeq);
    void read.then(
      (events) => finishReplay(events),
      () => finishReplay([]),
    );
  }

  function finishReplay(events: RunEvent[]): void {
    // A stream closed while its replay was being read stays ended.
    if (closed) return;
    for (const event of events) {
      if (filter.runId === undefined && filter.sessionId !== undefined && event.sessionId !== filter.sessionId)
        continue;
      buffer.push(event);
      lastSeq = Math.max(lastSeq, orderOf(event));
    }
    for (const event of held) if (orderOf(event) > lastSeq) buffer.push(event);
    held.length = 0;
    replaying = false;
    wake?.();
  }

  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe();
    wake?.();
  };

  return {
    close,
    [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
      return {
        async next(): Promise<IteratorResult<StreamEvent>> {
          for (;;) {
            const event = buffer.shift();
            if (event) return { value: event, done: false };
            if (closed) return { value: undefined, done: true };
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
          }
        },
        async return(): Promise<IteratorResult<StreamEvent>> {
          close();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
