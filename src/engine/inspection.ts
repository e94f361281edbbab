/*
 * Inspection on demand: XState's inspection events are built only while someone listens.
 * Actors created while a listener exists get the relay as their `inspect` option; actors
 * already alive when the first listener arrives are attached through their system. A
 * listener that arrives while actors run can start from their current snapshots.
 *
 * The async work a chart asks for by action (a model turn, a tool's execution, an approval
 * wait: async-effects.ts) is no XState actor, so XState reports nothing of it. While someone
 * listens, the hub reports it as an invoked promise actor would be reported: a child of the
 * actor that asked for it ('@xstate.actor', then '@xstate.snapshot' active → done / error /
 * stopped), and current() lists it under that actor while it runs. Nobody listening: nothing
 * of this is made.
 */
import type { AnyActorRef, InspectionEvent, Observer, Snapshot, Subscription } from 'xstate';

export type InspectionListener = (event: InspectionEvent) => void;

/** How a shown effect ended: the snapshot it ends with is reported once. */
export interface ShownEffect {
  done(output: unknown): void;
  failed(error: unknown): void;
  /** Abandoned: the state that started it was left or its actor stopped. */
  stopped(): void;
}

/** What XState reports of a promise actor's snapshot. */
interface EffectSnapshot {
  status: 'active' | 'done' | 'error' | 'stopped';
  output: unknown;
  error: unknown;
  input: undefined;
}

/**
 * An effect as readers of inspection events see an actor: an id, a sessionId, its parent and
 * the snapshot it is in; no machine (like `fromPromise` logic), nothing to send to.
 */
class EffectActor {
  readonly sessionId: string;
  snapshot: EffectSnapshot = { status: 'active', output: undefined, error: undefined, input: undefined };
  readonly logic = {};
  constructor(
    readonly id: string,
    readonly _parent: AnyActorRef,
    serial: number,
  ) {
    this.sessionId = `x:effect:${serial}`;
  }
  get system(): unknown {
    return this._parent.system;
  }
  getSnapshot(): EffectSnapshot {
    return this.snapshot;
  }
  send(): void {
    // An effect takes no events: it is answered by its promise.
  }
}

/** The `event` of the snapshots current() makes: no event caused them, they say where an actor is. */
export const CURRENT_STATE_EVENT = 'inspect.current';

export class InspectionHub {
  private readonly listeners = new Set<InspectionListener>();
  private readonly attached = new Map<AnyActorRef, Subscription>();
  /** The shown effects still running, by the actor that asked for them. */
  private readonly effects = new Map<AnyActorRef, Set<EffectActor>>();
  private effectSerial = 0;
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
        this.effects.clear();
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
      for (const effect of this.effects.get(actor) ?? []) visit(effect as unknown as AnyActorRef, rootId);
    };
    for (const root of this.liveRoots()) visit(root, root.sessionId);
    return events;
  }

  /**
   * Shows async work `parent` asked for as its child `id` while it runs; undefined (and nothing
   * made) while nobody listens. Work started while nobody listened stays unseen.
   */
  showEffect(parent: AnyActorRef, id: string): ShownEffect | undefined {
    if (this.listeners.size === 0) return undefined;
    const effect = new EffectActor(id, parent, ++this.effectSerial);
    const actorRef = effect as unknown as AnyActorRef;
    let root: AnyActorRef = parent;
    while (root._parent) root = root._parent;
    const rootId = root.sessionId;
    let running = this.effects.get(parent);
    if (!running) this.effects.set(parent, (running = new Set()));
    running.add(effect);
    this.relay({ type: '@xstate.actor', actorRef, rootId });
    this.relay({
      type: '@xstate.snapshot',
      actorRef,
      rootId,
      snapshot: effect.snapshot as Snapshot<unknown>,
      event: { type: 'xstate.init' },
    });
    const end = (snapshot: Partial<EffectSnapshot>, event: { type: string; [key: string]: unknown }) => {
      const siblings = this.effects.get(parent);
      // Ended already, or every listener that saw it start has left (a later one never heard of it).
      if (!siblings?.delete(effect)) return;
      if (siblings.size === 0) this.effects.delete(parent);
      effect.snapshot = { ...effect.snapshot, ...snapshot };
      if (event.type !== 'xstate.stop')
        this.relay({ type: '@xstate.event', actorRef, rootId, event, sourceRef: undefined });
      this.relay({ type: '@xstate.snapshot', actorRef, rootId, snapshot: effect.snapshot as Snapshot<unknown>, event });
    };
    return {
      done: (output) => end({ status: 'done', output }, { type: 'xstate.promise.resolve', data: output }),
      failed: (error) => end({ status: 'error', error }, { type: 'xstate.promise.reject', data: error }),
      stopped: () => end({ status: 'stopped' }, { type: 'xstate.stop' }),
    };
  }

  /** Forgets an actor that stopped (its system is gone with it). */
  forget(actor: AnyActorRef): void {
    this.attached.get(actor)?.unsubscribe();
    this.attached.delete(actor);
  }
}
