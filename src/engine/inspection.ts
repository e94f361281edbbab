/*
 * Inspection on demand: XState's inspection events are built only while someone listens.
 * Actors created while a listener exists get the relay as their `inspect` option; actors
 * already alive when the first listener arrives are attached through their system. A
 * listener that arrives while actors run can start from their current snapshots.
 */
import type { AnyActorRef, InspectionEvent, Observer, Snapshot, Subscription } from 'xstate';

export type InspectionListener = (event: InspectionEvent) => void;

/** The `event` of the snapshots current() makes: no event caused them, they say where an actor is. */
export const CURRENT_STATE_EVENT = 'inspect.current';

export class InspectionHub {
  private readonly listeners = new Set<InspectionListener>();
  private readonly attached = new Map<AnyActorRef, Subscription>();
  private readonly relay = (event: InspectionEvent) => {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // An inspector's fault never reaches the engine.
      }
    }
  };

  /** The root actors alive right now (limiter, sessions, runs): none until the engine connects its parts. */
  private liveRoots: () => Iterable<AnyActorRef> = () => [];

  constructor(permanent?: InspectionListener) {
    if (permanent) this.listeners.add(permanent);
  }

  /** Where the root actors alive right now are found (given once the parts that hold them exist). */
  connect(liveRoots: () => Iterable<AnyActorRef>): void {
    this.liveRoots = liveRoots;
  }

  /** The `inspect` option for an actor created now: the relay while anyone listens. */
  get option(): InspectionListener | undefined {
    return this.listeners.size > 0 ? this.relay : undefined;
  }

  get active(): boolean {
    return this.listeners.size > 0;
  }

  subscribe(listener: InspectionListener): () => void {
    const first = this.listeners.size === 0;
    this.listeners.add(listener);
    if (first) {
      const observer: Observer<InspectionEvent> = { next: this.relay };
      for (const root of this.liveRoots()) {
        if (!this.attached.has(root)) this.attached.set(root, root.system.inspect(observer));
      }
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) {
        for (const subscription of this.attached.values()) subscription.unsubscribe();
        this.attached.clear();
      }
    };
  }

  /**
   * One `@xstate.snapshot` per live actor as it is now, each parent before its children, with
   * the event `{ type: CURRENT_STATE_EVENT }`: what a listener that arrives late starts from.
   */
  current(): InspectionEvent[] {
    const events: InspectionEvent[] = [];
    const visit = (actor: AnyActorRef, rootId: string) => {
      const snapshot: Snapshot<unknown> & { children?: Record<string, AnyActorRef | undefined> } = actor.getSnapshot();
      events.push({
        type: '@xstate.snapshot',
        actorRef: actor,
        rootId,
        snapshot,
        event: { type: CURRENT_STATE_EVENT },
      });
      for (const child of Object.values(snapshot.children ?? {})) if (child) visit(child, rootId);
    };
    for (const root of this.liveRoots()) visit(root, root.sessionId);
    return events;
  }

  /** Forgets an actor that stopped (its system is gone with it). */
  forget(actor: AnyActorRef): void {
    this.attached.get(actor)?.unsubscribe();
    this.attached.delete(actor);
  }
}
