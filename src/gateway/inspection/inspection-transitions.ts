/*
 * Each step of an actor as one transition record: the event, the actor that sent it (source),
 * the actor that took it (target), the state-node transitions it made and the snapshot it
 * reached. XState 5 reports a step in pieces — an '@xstate.event', its '@xstate.microstep's,
 * then the '@xstate.snapshot' that ends it — and XState 6 reports it whole as one
 * '@xstate.transition'. Readers that consume these records (our inspection stream, the
 * Stately bridge) work on either.
 */
import type { ActorRefLike, AnyEventObject, InspectionEvent } from 'xstate';

export interface StateNodeTransition {
  source: { id: string };
  target?: readonly { id: string }[];
  eventType: unknown;
}

export interface TransitionRecord {
  /** The actor that took the event and moved: the target. */
  actorRef: ActorRefLike;
  rootId: string;
  event: AnyEventObject;
  /** The actor that sent the event, if an actor did. */
  sourceRef: ActorRefLike | undefined;
  /** The state-node transitions of the step, in the order they were taken (machines only). */
  transitions: readonly StateNodeTransition[];
  snapshot: unknown;
}

interface PendingStep {
  event: AnyEventObject;
  sourceRef: ActorRefLike | undefined;
  transitions: StateNodeTransition[];
}

/** XState 6's '@xstate.transition', as far as a record needs it (XState 5 declares the type without these). */
interface WholeTransitionShape {
  sourceRef?: ActorRefLike;
  microsteps?: readonly { transitions?: readonly StateNodeTransition[] }[];
  _transitions?: readonly StateNodeTransition[];
}

/** Steps of one actor announced and not ended that are kept (a stopped actor's are never ended). */
const MAX_PENDING_STEPS = 16;

export class InspectionTransitions {
  /**
   * actor → its steps announced and not yet ended, oldest first: from an '@xstate.event' to
   * the '@xstate.snapshot' of that event (an actor may be sent its next event mid-step).
   */
  private readonly steps = new WeakMap<object, PendingStep[]>();

  /** The record a step ends with, or undefined for an inspection event that ends none. */
  observe(event: InspectionEvent): TransitionRecord | undefined {
    switch (event.type) {
      case '@xstate.event': {
        const step: PendingStep = { event: event.event, sourceRef: event.sourceRef, transitions: [] };
        const pending = this.steps.get(event.actorRef);
        if (pending === undefined) this.steps.set(event.actorRef, [step]);
        // An actor that stopped mid-queue never ends its steps: a few are kept, not all.
        else if (pending.push(step) > MAX_PENDING_STEPS) pending.shift();
        return undefined;
      }
      case '@xstate.microstep': {
        const step = this.stepOf(event.actorRef, event.event);
        for (const transition of event._transitions)
          step.transitions.push(transition as unknown as StateNodeTransition);
        return undefined;
      }
      case '@xstate.snapshot': {
        const step = this.stepOf(event.actorRef, event.event);
        this.end(event.actorRef, step);
        return {
          actorRef: event.actorRef,
          rootId: event.rootId,
          event: event.event,
          sourceRef: step.sourceRef,
          transitions: step.transitions,
          snapshot: event.snapshot,
        };
      }
      case '@xstate.transition': {
        const whole = event as unknown as WholeTransitionShape;
        const transitions =
          whole.microsteps?.flatMap((microstep) => microstep.transitions ?? []) ?? whole._transitions ?? [];
        return {
          actorRef: event.actorRef,
          rootId: event.rootId,
          event: event.event,
          sourceRef: whole.sourceRef,
          transitions,
          snapshot: event.snapshot,
        };
      }
      default:
        return undefined;
    }
  }

  /** The actor's step for this event; a step without an '@xstate.event' (a delayed event) has no source. */
  private stepOf(actor: object, event: AnyEventObject): PendingStep {
    let pending = this.steps.get(actor);
    if (pending === undefined) this.steps.set(actor, (pending = []));
    let step = pending.find((candidate) => candidate.event === event);
    if (step === undefined) {
      step = { event, sourceRef: undefined, transitions: [] };
      pending.push(step);
    }
    return step;
  }

  private end(actor: object, step: PendingStep): void {
    const pending = this.steps.get(actor)!;
    pending.splice(pending.indexOf(step), 1);
    if (pending.length === 0) this.steps.delete(actor);
  }
}
