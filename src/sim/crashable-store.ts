/*
 * The store one engine incarnation works through. It taps every appended event (so the
 * invariant monitor sees the log exactly as persisted, recovery included, in append order) and
 * can be crashed: from then on the abandoned engine's writes are dropped, so only the engine
 * that replaced it changes the shared store.
 *
 * Over a store that does real I/O (lowdb), every operation's promise is settled in the order
 * the engine asked for them, whenever the disk finishes them, and the simulator waits for the
 * store to be idle before it moves virtual time: the engine then sees the same sequence of
 * completions on every run of a seed.
 */
import type { RunEvent } from '../core/run-events.js';
import type { Message } from '../model/types.js';
import type { RunRecord, RunState, Store, StoredLaneEntry } from '../store/types.js';

export class CrashableStore implements Store {
  readonly kind: string;
  private crashed = false;
  private pending = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private wake: (() => void) | undefined;

  constructor(
    private readonly inner: Store,
    private readonly onEvent: (event: RunEvent) => void,
    /** Settle the inner store's promises in the order they were asked for (for a store doing real I/O). */
    private readonly ordered = false,
  ) {
    this.kind = inner.kind;
  }

  crash(): void {
    this.crashed = true;
  }

  /** Operations whose promise has not settled yet. */
  get inFlight(): number {
    return this.pending;
  }

  /** Resolves once no operation is in flight. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => (this.wake = resolve));
  }

  saveRun(record: RunRecord): void | Promise<void> {
    if (!this.crashed) return this.order(this.inner.saveRun(record));
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.order(this.inner.getRun(runId));
  }

  appendEvent(event: RunEvent): void | Promise<void> {
    if (this.crashed) return;
    const written = this.inner.appendEvent(event);
    this.onEvent(event);
    return this.order(written);
  }

  readEvents(runId: string, afterSeq?: number): Promise<RunEvent[]> {
    return this.order(this.inner.readEvents(runId, afterSeq));
  }

  readSessionEvents(sessionId: string, afterSessionSeq?: number): Promise<RunEvent[]> {
    return this.order(this.inner.readSessionEvents(sessionId, afterSessionSeq));
  }

  appendMessages(sessionId: string, messages: Message[]): void | Promise<void> {
    if (!this.crashed) return this.order(this.inner.appendMessages(sessionId, messages));
  }

  readConversation(sessionId: string): Promise<Message[]> {
    return this.order(this.inner.readConversation(sessionId));
  }

  saveLane(sessionId: string, entries: StoredLaneEntry[]): void | Promise<void> {
    if (!this.crashed) return this.order(this.inner.saveLane(sessionId, entries));
  }

  listRuns(states: readonly RunState[]): Promise<RunRecord[]> {
    return this.order(this.inner.listRuns(states));
  }

  readLanes(): Promise<Record<string, StoredLaneEntry[]>> {
    return this.order(this.inner.readLanes());
  }

  saveGrants(sessionId: string, fingerprints: string[]): void | Promise<void> {
    if (!this.crashed) return this.order(this.inner.saveGrants?.(sessionId, fingerprints));
  }

  readGrants(): Promise<Record<string, string[]>> {
    return this.order(this.inner.readGrants?.() ?? Promise.resolve({}));
  }

  lastSessionSeq(sessionId: string): Promise<number> {
    if (this.inner.lastSessionSeq) return this.order(this.inner.lastSessionSeq(sessionId));
    return this.order(this.inner.readSessionEvents(sessionId)).then((events) => events.at(-1)?.sessionSeq ?? 0);
  }

  durable(): Promise<void> {
    return this.crashed ? Promise.resolve() : this.order(this.inner.durable());
  }

  flush(): Promise<void> {
    return this.crashed ? Promise.resolve() : this.order(this.inner.flush());
  }

  /** Closing an incarnation never closes the store the next one will use. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  private order<T>(result: Promise<T>): Promise<T>;
  private order<T>(result: T | Promise<T>): T | Promise<T>;
  private order<T>(result: T | Promise<T>): T | Promise<T> {
    if (!this.ordered || !(result instanceof Promise)) return result;
    this.pending += 1;
    const settled = this.tail.then(() => result).finally(() => {
      this.pending -= 1;
      if (this.pending === 0) {
        const wake = this.wake;
        this.wake = undefined;
        wake?.();
      }
    });
    this.tail = settled.catch(() => undefined);
    return settled;
  }
}
