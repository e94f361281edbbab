/*
 * The ordered event log: assigns seq (per run) and sessionSeq (per session), stores each
 * event, and publishes it to live listeners only after the store has it — so a subscriber
 * that replays from the store and then listens live sees no gap. When the store answers
 * asynchronously, publication follows a single chain, keeping the global order.
 */
import { isoNow, type Clock } from '../core/clock.js';
import type {
  EngineEvent,
  EngineEventData,
  RunEvent,
  RunEventData,
  RunEventType,
  StreamEvent,
} from '../core/run-events.js';
import { isTerminalEvent } from '../core/run-events.js';
import type { Store } from '../store/types.js';

export type EventListener = (event: StreamEvent) => void;

export interface EventFilter {
  runId?: string;
  sessionId?: string;
}

export class EventLog {
  private readonly runSeq = new Map<string, number>();
  private readonly sessionSeq = new Map<string, number>();
  private engineSeq = 0;
  private readonly byRun = new Map<string, Set<EventListener>>();
  private readonly bySession = new Map<string, Set<EventListener>>();
  private readonly everything = new Set<EventListener>();
  private publishChain: Promise<void> | undefined;
  private pendingWrites = 0;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly onListenerError: (error: unknown) => void = () => {},
  ) {}

  append<K extends RunEventType>(runId: string, sessionId: string, type: K, data: RunEventData[K]): RunEvent {
    const seq = (this.runSeq.get(runId) ?? 0) + 1;
    const sessionSeq = (this.sessionSeq.get(sessionId) ?? 0) + 1;
    const event = { type, runId, sessionId, seq, sessionSeq, at: this.timestamp(), ...data } as RunEvent;
    if (isTerminalEvent(event)) this.runSeq.delete(runId);
    else this.runSeq.set(runId, seq);
    this.sessionSeq.set(sessionId, sessionSeq);
    const written = this.store.appendEvent(event);
    if (written === undefined && this.publishChain === undefined) {
      this.publish(event);
    } else {
      this.pendingWrites += 1;
      const previous = this.publishChain ?? Promise.resolve();
      const chain: Promise<void> = Promise.all([previous, written]).then(
        () => this.published(event, chain),
        (error: unknown) => {
          this.onListenerError(error);
          this.published(event, chain);
        },
      );
      this.publishChain = chain;
    }
    return event;
  }

  engineEvent<K extends keyof EngineEventData>(type: K, data: EngineEventData[K]): void {
    this.engineSeq += 1;
    // Engine events are live only (never stored): with nobody listening there is nothing to build.
    if (this.everything.size === 0) return;
    const event = { type, seq: this.engineSeq, at: this.timestamp(), ...data } as EngineEvent;
    for (const listener of this.everything) this.deliver(listener, event);
  }

  /** Continues a session's numbering from its stored log. */
  restoreSessionSeq(sessionId: string, sessionSeq: number): void {
    if (sessionSeq > (this.sessionSeq.get(sessionId) ?? 0)) this.sessionSeq.set(sessionId, sessionSeq);
  }

  /** Continues a run's and a session's numbering after a restart. */
  restoreSeq(runId: string, seq: number, sessionId: string, sessionSeq: number): void {
    if (seq > (this.runSeq.get(runId) ?? 0)) this.runSeq.set(runId, seq);
    if (sessionSeq > (this.sessionSeq.get(sessionId) ?? 0)) this.sessionSeq.set(sessionId, sessionSeq);
  }

  /** Drops an idle session's counter; the engine reloads it from the store before the next event. */
  forgetSession(sessionId: string): void {
    this.sessionSeq.delete(sessionId);
  }

  lastSessionSeq(sessionId: string): number {
    return this.sessionSeq.get(sessionId) ?? 0;
  }

  subscribe(filter: EventFilter, listener: EventListener): () => void {
    const set =
      filter.runId !== undefined
        ? setIn(this.byRun, filter.runId)
        : filter.sessionId !== undefined
          ? setIn(this.bySession, filter.sessionId)
          : this.everything;
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && set !== this.everything) {
        if (filter.runId !== undefined) this.byRun.delete(filter.runId);
        else if (filter.sessionId !== undefined) this.bySession.delete(filter.sessionId);
      }
    };
  }

  /** Resolves once every event appended so far has been stored and published. */
  async settled(): Promise<void> {
    while (this.publishChain) await this.publishChain;
  }

  private published(event: RunEvent, chain: Promise<void>): void {
    this.pendingWrites -= 1;
    if (this.publishChain === chain && this.pendingWrites === 0) this.publishChain = undefined;
    this.publish(event);
  }

  private publish(event: RunEvent): void {
    // Copies, so a listener that unsubscribes or subscribes during delivery changes only later events.
    const run = this.byRun.get(event.runId);
    if (run) for (const listener of [...run]) this.deliver(listener, event);
    const session = this.bySession.get(event.sessionId);
    if (session) for (const listener of [...session]) this.deliver(listener, event);
    if (this.everything.size > 0) for (const listener of [...this.everything]) this.deliver(listener, event);
  }

  private deliver(listener: EventListener, event: StreamEvent): void {
    try {
      listener(event);
    } catch (error) {
      this.onListenerError(error);
    }
  }

  private timestamp(): string {
    return isoNow(this.clock);
  }
}

function setIn(map: Map<string, Set<EventListener>>, key: string): Set<EventListener> {
  let set = map.get(key);
  if (!set) {
    set = new Set();
    map.set(key, set);
  }
  return set;
}
