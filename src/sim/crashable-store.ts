/*
 * The store one engine incarnation works through. It taps every appended event (so the
 * invariant monitor sees the log exactly as persisted, recovery included, in append order) and
 * can be crashed.
 *
 * Over the memory store it models a disk that is slower than memory: the engine reads and
 * writes its own copy at once, and each write reaches the shared store (what the next
 * incarnation starts from) only when the "disk" completes it, one macrotask later, in order.
 * A crash loses every write not completed by then — exactly what a SIGKILL loses — so an
 * engine that answers before its writes complete is caught by the restart invariants.
 *
 * Over a store that does real I/O (lowdb), every operation's promise is settled in the order
 * the engine asked for them, whenever the disk finishes them; a crash drops the abandoned
 * engine's writes from then on. Either way the simulator waits for the store to be idle before
 * it moves virtual time, so the engine sees the same sequence of completions on every run.
 */
import type { RunEvent } from '../core/run-events.js';
import type { Message } from '../model/types.js';
import { MemoryStore } from '../store/memory-store.js';
import type { RunPage, RunQuery, RunRecord, RunState, SteerRecord, Store, StoredLaneEntry } from '../store/types.js';

export interface CrashableStoreOptions {
  /** Fault: durable() answers at once, as if every write had completed (an engine answering early). */
  lyingDurable?: boolean;
  /**
   * Several processes share the store (a simulated cluster on one Redis): every read and write
   * goes to it, in order, so each process sees what the others wrote — no copy of its own.
   */
  shared?: boolean;
  /** Taps every run record the engine saves (a collect batch's carrier names what it carries). */
  onRecord?: (record: RunRecord) => void;
}

export class CrashableStore implements Store {
  readonly kind: string;
  private crashed = false;
  private pending = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private wake: (() => void) | undefined;
  /** Memory mode: the engine's own view; writes reach `inner` when the disk completes them. */
  private readonly view: MemoryStore | undefined;
  private diskQueue: { apply: () => void; done: () => void }[] = [];
  private diskScheduled = false;
  private lastDiskWrite: Promise<void> = Promise.resolve();

  constructor(
    private readonly inner: Store,
    private readonly onEvent: (event: RunEvent) => void,
    private readonly options: CrashableStoreOptions = {},
  ) {
    this.kind = inner.kind;
    this.view = inner instanceof MemoryStore && !options.shared ? inner.copy() : undefined;
  }

  crash(): void {
    this.crashed = true;
    // What the disk had not completed is lost.
    this.diskQueue = [];
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
    if (!this.crashed) this.options.onRecord?.(record);
    return this.write((store) => store.saveRun(record));
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.read((store) => store.getRun(runId));
  }

  appendEvent(event: RunEvent): void | Promise<void> {
    if (this.crashed) return;
    const written = this.write((store) => store.appendEvent(event));
    this.onEvent(event);
    return written;
  }

  readEvents(runId: string, afterSeq?: number): Promise<RunEvent[]> {
    return this.read((store) => store.readEvents(runId, afterSeq));
  }

  readSessionEvents(sessionId: string, afterSessionSeq?: number): Promise<RunEvent[]> {
    return this.read((store) => store.readSessionEvents(sessionId, afterSessionSeq));
  }

  appendMessages(sessionId: string, messages: Message[]): void | Promise<void> {
    return this.write((store) => store.appendMessages(sessionId, messages));
  }

  readConversation(sessionId: string): Promise<Message[]> {
    return this.read((store) => store.readConversation(sessionId));
  }

  saveLane(sessionId: string, entries: StoredLaneEntry[]): void | Promise<void> {
    return this.write((store) => store.saveLane(sessionId, entries));
  }

  listRuns(states: readonly RunState[]): Promise<RunRecord[]> {
    return this.read((store) => store.listRuns(states));
  }

  queryRuns(query: RunQuery): Promise<RunPage> {
    return this.read((store) => store.queryRuns(query));
  }

  openRuns(): Promise<RunRecord[]> {
    return this.read((store) => store.openRuns());
  }

  saveSteer(record: SteerRecord): void | Promise<void> {
    return this.write((store) => store.saveSteer(record));
  }

  getSteer(steerId: string): Promise<SteerRecord | undefined> {
    return this.read((store) => store.getSteer(steerId));
  }

  pendingSteers(): Promise<SteerRecord[]> {
    return this.read((store) => store.pendingSteers());
  }

  readLanes(): Promise<Record<string, StoredLaneEntry[]>> {
    return this.read((store) => store.readLanes());
  }

  saveGrants(sessionId: string, fingerprints: string[]): void | Promise<void> {
    return this.write((store) => store.saveGrants?.(sessionId, fingerprints));
  }

  readGrants(): Promise<Record<string, string[]>> {
    return this.read((store) => store.readGrants?.() ?? Promise.resolve({}));
  }

  lastSessionSeq(sessionId: string): Promise<number> {
    return this.read((store) =>
      store.lastSessionSeq
        ? store.lastSessionSeq(sessionId)
        : store.readSessionEvents(sessionId).then((events) => events.at(-1)?.sessionSeq ?? 0),
    );
  }

  durable(): Promise<void> {
    if (this.crashed || this.options.lyingDurable) return Promise.resolve();
    if (this.view) return this.lastDiskWrite;
    return this.order(this.inner.durable());
  }

  flush(): Promise<void> {
    if (this.crashed) return Promise.resolve();
    if (this.view) return this.lastDiskWrite;
    return this.order(this.inner.flush());
  }

  /** Closing an incarnation never closes the store the next one will use. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  private read<T>(op: (store: Store) => Promise<T>): Promise<T> {
    return this.view ? op(this.view) : this.order(op(this.inner));
  }

  private write(op: (store: Store) => void | Promise<void>): void | Promise<void> {
    if (this.crashed) return;
    if (!this.view) return this.order(op(this.inner));
    void op(this.view);
    const written = new Promise<void>((resolve) => {
      this.diskQueue.push({ apply: () => void op(this.inner), done: resolve });
    });
    this.lastDiskWrite = this.track(written);
    this.scheduleDisk();
    return this.lastDiskWrite;
  }

  /** The disk completes every queued write in order, one macrotask after it was asked for. */
  private scheduleDisk(): void {
    if (this.diskScheduled) return;
    this.diskScheduled = true;
    setImmediate(() => {
      this.diskScheduled = false;
      for (const write of this.diskQueue.splice(0)) {
        write.apply();
        write.done();
      }
    });
  }

  private track(promise: Promise<void>): Promise<void> {
    this.pending += 1;
    return promise.finally(() => this.settled());
  }

  private settled(): void {
    this.pending -= 1;
    if (this.pending === 0) {
      const wake = this.wake;
      this.wake = undefined;
      wake?.();
    }
  }

  private order<T>(result: Promise<T>): Promise<T>;
  private order<T>(result: T | Promise<T>): T | Promise<T>;
  private order<T>(result: T | Promise<T>): T | Promise<T> {
    if (!(result instanceof Promise)) return result;
    this.pending += 1;
    const settled = this.tail.then(() => result).finally(() => this.settled());
    this.tail = settled.catch(() => undefined);
    return settled;
  }
}
