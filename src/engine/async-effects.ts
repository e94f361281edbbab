/*
 * The async work the charts ask for and are answered about by event: a run's model turn
 * (requestReply -> MODEL_REPLY / MODEL_FAILED), a tool call's approval (requestApproval ->
 * APPROVED / DENIED / APPROVAL_FAILED) and its execution (startExecution -> TOOL_DONE /
 * TOOL_FAILED). One mechanism for all, and the one place that owns the effects
 * of a stopped actor:
 * - start: the chart entered the state that asked for it (its entry action);
 * - abandon: the chart left that state (its exit action): the work is aborted and its answer
 *   dropped, whatever it is;
 * - abandonRun: the run's actor stopped or crashed, so no exit action ran: everything of the
 *   run is abandoned at once.
 * An effect stays known until its promise settles, so what must wait for the work to have
 * really stopped (a call's claim) can. Why not invoked actors: bench/invoke-cost.bench.ts.
 *
 * While someone inspects, an effect started with the actor that asked for it is shown as that
 * actor's child (InspectionHub.showEffect) until it settles or is abandoned; nobody inspecting,
 * nothing is made for that.
 */
import type { AnyActorRef } from 'xstate';
import type { InspectionHub, ShownEffect } from './inspection.js';

interface Effect {
  controller: AbortController;
  running: Promise<unknown>;
  shown: ShownEffect | undefined;
}

export interface EffectAnswer<T> {
  done: (output: T) => void;
  failed: (error: unknown) => void;
}

/**
 * @example
 * effects.start(runId, 'turn', (signal) => turns.run(input, signal), { done, failed });
 * effects.abandon(runId, 'turn'); // on leaving `thinking`: aborted, its answer dropped
 */
export class AsyncEffects {
  private readonly runs = new Map<string, Map<string, Effect>>();

  constructor(private readonly inspection?: Pick<InspectionHub, 'showEffect'>) {}

  /**
   * Starts `work`; its answer is delivered unless it was abandoned first. `asker` (the actor
   * whose state asked for it) and `childId` name it for the inspector: shown as `asker`'s
   * child `childId` (`key` if not given) while someone inspects.
   */
  start<T>(
    runId: string,
    key: string,
    work: (signal: AbortSignal) => Promise<T>,
    answer: EffectAnswer<T>,
    asker?: AnyActorRef,
    childId?: string,
  ): void {
    const controller = new AbortController();
    let running: Promise<T>;
    try {
      running = work(controller.signal);
    } catch (error) {
      running = Promise.reject(error);
    }
    let effects = this.runs.get(runId);
    if (!effects) this.runs.set(runId, (effects = new Map()));
    const shown = asker && this.inspection?.showEffect(asker, childId ?? key);
    const effect: Effect = { controller, running, shown };
    effects.set(key, effect);
    // A settled effect leaves the map first, so abandon() aborts only work still running (an
    // abort builds a DOMException with a stack: not free on every turn and call).
    const settle = () => {
      const known = this.runs.get(runId);
      if (known?.get(key) !== effect) return;
      known.delete(key);
      if (known.size === 0) this.runs.delete(runId);
    };
    running.then(
      (output) => {
        settle();
        if (controller.signal.aborted) return;
        shown?.done(output);
        answer.done(output);
      },
      (error: unknown) => {
        settle();
        if (controller.signal.aborted) return;
        shown?.failed(error);
        answer.failed(error);
      },
    );
  }

  /** The state that started the work was left: abort it (if it still runs) and drop its answer. */
  abandon(runId: string, key: string): void {
    const effect = this.runs.get(runId)?.get(key);
    if (!effect) return;
    effect.controller.abort();
    effect.shown?.stopped();
  }

  /** The work's promise while it has not settled (abandoned or not), for what must wait until it stopped. */
  unsettled(runId: string, key: string): Promise<unknown> | undefined {
    return this.runs.get(runId)?.get(key)?.running;
  }

  /** The run's actor stopped without its exit actions: every effect of the run is abandoned. */
  abandonRun(runId: string): void {
    for (const effect of this.runs.get(runId)?.values() ?? []) {
      effect.controller.abort();
      effect.shown?.stopped();
    }
  }
}
