/*
 * Hosts machines/run.machine.ts: a run's effects (permits requested, start announced,
 * steers consumed, model turns, tool batches planned and closed, the terminal event and the
 * releases). The chart decides the order; this file does each step; run-tools.ts gives the
 * run its tools.
 */
import { assign, createActor, type AnyActorRef } from 'xstate';
import type { ActOutput } from '../../machines/act.machine.js';
import type { ModelTurnInput, RunChartEvent, RunOutcome } from '../../machines/run.machine.js';
import { runMachine } from '../../machines/run.machine.js';
import { nowOf, type Clock } from '../core/clock.js';
import type { ActHost } from './act.host.js';
import type { AsyncEffects } from './async-effects.js';
import type { InspectionHub } from './inspection.js';
import type { ModelTurns } from './model-turns.js';
import type { Limiter } from './ownership.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { CancelRunTree } from './run-tree.js';
import type { SessionHost } from './session.host.js';
import type { Steers } from './steers.js';

/** The key of a run's model turn among its effects. */
const TURN = 'turn';

export interface RunHostDeps {
  table: RunTable;
  ledger: RunLedger;
  /** The Act phase: plans, runs and records each tool batch, and gives back what a stopped run's calls hold. */
  act: Pick<ActHost, 'machine' | 'plan' | 'announceSchedule' | 'recordResults' | 'runStopped'>;
  /** What a model turn does. */
  turns: Pick<ModelTurns, 'run'>;
  /** The run's session: its slot taken and given back, steers read. */
  sessions: Pick<SessionHost, 'runStarted' | 'runEnded' | 'steersConsumed'>;
  limiter: Pick<Limiter, 'acquire' | 'release'>;
  steers: Pick<Steers, 'consumed' | 'handOver' | 'toLane'>;
  inspection: Pick<InspectionHub, 'option' | 'forget'>;
  clock: Clock;
  /** The runs' model turns and tool executions: started and abandoned with the states that asked for them. */
  effects: AsyncEffects;
  engine: {
    /** True once the engine is closing. */
    closing: () => boolean;
    /** Contract: must not throw; reports an unexpected error. */
    onError: (error: unknown) => void;
    /** Cancels what a run that did not complete delegated. */
    cancelRunTree: CancelRunTree;
  };
}

/**
 * @example
 * const runs = new RunHost(deps);
 * runs.start(runId); // the run's actor: permits, turns, tool batches, terminal event, releases
 */
export class RunHost {
  private readonly machine;

  constructor(private readonly deps: RunHostDeps) {
    this.machine = this.provide();
  }

  /** Creates and starts the actor of an admitted run; it settles the run when it stops. */
  start(runId: string): void {
    const { table } = this.deps;
    const handle = table.get(runId);
    if (!handle || handle.ended) return;
    if (handle.request.parentRunId) table.addChild(handle.request.parentRunId, runId);
    const actor = createActor(this.machine, {
      input: {
        runId,
        sessionId: handle.request.sessionId,
        agentId: handle.request.agentId,
        timeoutMs: handle.request.timeoutMs,
        maxIterations: handle.request.maxIterations,
        ...(handle.request.startBy !== undefined
          ? { startWithinMs: Math.max(0, Date.parse(handle.request.startBy) - nowOf(this.deps.clock)) }
          : {}),
      },
      clock: this.deps.clock,
      inspect: this.deps.inspection.option,
      id: `run:${runId}`,
    });
    handle.actor = actor;
    actor.subscribe({
      // A run stopped unstarted by close() stays queued in the store: nothing is written for it.
      complete: () => {
        this.stopped(handle);
        if (!this.deps.engine.closing() || handle.ended) this.settle(handle);
      },
      error: (error) => {
        this.stopped(handle);
        this.deps.engine.onError(error);
        this.settle(handle);
      },
    });
    actor.start();
  }

  /**
   * The one place that owns a stopped actor's effects. A stopped or crashed actor runs no exit
   * action: its model turn and its open tool calls are given up here. So are the calls of a
   * batch stopped while it was busy with an event (it never took the CLOSE of the run's
   * ending, so they ran no exit action either).
   */
  private stopped(handle: RunHandle): void {
    const runId = handle.status.runId;
    this.deps.effects.abandonRun(runId);
    this.deps.act.runStopped(runId);
  }

  /** Settles the run; one whose actor stopped before its terminal event is ended and released here. */
  private settle(handle: RunHandle): void {
    const { ledger, sessions, limiter, inspection } = this.deps;
    if (!handle.ended) {
      this.endRun(handle, { state: 'failed', error: { code: 'internal', message: 'run actor stopped unexpectedly' } });
      sessions.runEnded(handle.status.sessionId, handle.status.runId);
      limiter.release(handle.status.runId);
    }
    if (handle.actor) inspection.forget(handle.actor);
    ledger.settleRun(handle);
  }

  /** The terminal event; a run that did not complete cancels what it delegated. */
  private endRun(handle: RunHandle, outcome: RunOutcome | undefined, usage?: { turns: number; toolCalls: number }) {
    if (handle.ended) return;
    this.deps.ledger.endRun(handle, outcome, usage);
    const state = handle.status.state;
    if (state === 'completed') return;
    for (const child of this.deps.table.childrenOf(handle.status.runId))
      this.deps.engine.cancelRunTree(child, `parent ${state}`);
  }

  private provide() {
    const { table, ledger, sessions, limiter, steers, act } = this.deps;
    return runMachine.provide({
      actions: {
        requestPermits: ({ context, self }) => {
          // A delegated run works under its parent's permit: the parent waits for it, so making
          // it wait for a permit of its own could deadlock at the limit.
          const { parentRunId, priority } = table.require(context.runId).request;
          if (parentRunId !== undefined) self.send({ type: 'GRANTED' });
          else limiter.acquire(context.runId, context.agentId, priority);
        },
        announceStarted: ({ context }) => {
          ledger.markStarted(table.require(context.runId));
          sessions.runStarted(context.sessionId, context.runId);
        },
        consumeSteers: ({ context }, { steers: consumed, turn }) => {
          if (consumed.length === 0) return;
          const handle = table.require(context.runId);
          for (const steer of consumed) {
            ledger.post(handle, { role: 'user', content: steer.text });
            ledger.append(handle, 'run.steered', { steerId: steer.steerId, text: steer.text, consumedAtTurn: turn });
            steers.consumed(steer.steerId, turn);
          }
          sessions.steersConsumed(context.sessionId, context.runId, consumed.length);
        },
        startTurn: ({ context }, { turn }) => ledger.append(table.require(context.runId), 'turn.started', { turn }),
        requestReply: ({ self }, turn) => this.requestReply(self, turn),
        abandonReply: (_, { runId }) => this.deps.effects.abandon(runId, TURN),
        finishTurn: ({ context }, { turn }) => ledger.append(table.require(context.runId), 'turn.finished', { turn }),
        appendTerminalEvent: ({ context }, { outcome, turns, toolCalls }) =>
          this.endRun(table.require(context.runId), outcome, { turns, toolCalls }),
        handOverSteers: ({ context }, { steers: unconsumed, outcome }) =>
          steers.handOver(table.require(context.runId), unconsumed, outcome?.state === 'completed'),
        escalateSteer: ({ context }, { steer, to }) => {
          const handle = table.require(context.runId);
          ledger.append(handle, 'run.steer_escalated', { steerId: steer.steerId, to });
          if (to === 'queue') steers.toLane(handle, steer);
        },
        releaseSlot: ({ context }) => sessions.runEnded(context.sessionId, context.runId),
        releasePermits: ({ context }) => limiter.release(context.runId),
        planBatch: assign(({ context }) => ({
          batch: act.plan(
            table.require(context.runId),
            context.turn,
            context.lastReply?.toolCalls ?? [],
            context.pendingSteers.length > 0,
          ),
        })),
        announceSchedule: ({ context }) => act.announceSchedule(table.require(context.runId)),
        recordToolResults: ({ context }, output) => act.recordResults(table.require(context.runId), output),
        closeBatch: ({ context, self }, reason) => {
          // Sent directly (not with sendTo, which runs after this macrostep) so the batch's
          // synthetic results are logged before the run's terminal event.
          const batch = self.getSnapshot().children['act'];
          if (!batch || batch.getSnapshot().status !== 'active') return;
          batch.send({ type: 'CLOSE', ...reason });
          // Results of calls that did finish are real: the conversation keeps them.
          const output = batch.getSnapshot().output as ActOutput | undefined;
          if (output) act.recordResults(table.require(context.runId), output);
        },
      },
      actors: {
        act: act.machine,
      },
    });
  }

  /** Runs the turn; its answer goes to the run unless the run left `thinking` meanwhile (abandonReply). */
  private requestReply(run: AnyActorRef, turn: ModelTurnInput): void {
    this.deps.effects.start(
      turn.runId,
      TURN,
      (signal) => this.deps.turns.run(turn, signal),
      {
        done: (reply) => run.send({ type: 'MODEL_REPLY', reply } satisfies RunChartEvent),
        failed: (error) => run.send({ type: 'MODEL_FAILED', error } satisfies RunChartEvent),
      },
      run,
      `turn:${turn.turn}`,
    );
  }
}
