/*
 * Hosts machines/run.machine.ts: a run's effects (permits requested, start announced,
 * steers consumed, model turns, tool batches planned and closed, the terminal event and the
 * releases). The chart decides the order; this file does each step; run-tools.ts gives the
 * run its tools.
 */
import { assign, createActor } from 'xstate';
import type { ActOutput } from '../../machines/act.machine.js';
import type { ModelReply, ModelTurnInput, RunChartEvent } from '../../machines/run.machine.js';
import { runMachine } from '../../machines/run.machine.js';
import type { ApprovalGate } from '../approval/index.js';
import type { ClaimRegistry } from '../concurrency/index.js';
import type { Config } from '../config/index.js';
import { nowOf, type Clock } from '../core/clock.js';
import { splitModel, type RunRequest } from '../core/run-request.js';
import type { RunResult } from '../core/run-status.js';
import { planBatch } from '../harness/batch-plan.js';
import type { Conversations } from '../harness/conversation.js';
import {
  addUsage,
  assistantMessageOf,
  modelMessageData,
  runModelTurn,
  unfinishedReplyError,
} from '../harness/model-turn.js';
import type { ModelProvider } from '../model/types.js';
import type { AnyTool } from '../tools/tool.js';
import type { ToolServiceOptions } from '../tools/tool-service.js';
import { provideActMachine, recordResults } from './act.host.js';
import type { EngineObserver } from './engine-observer.js';
import type { EventLog } from './event-log.js';
import type { InspectionHub } from './inspection.js';
import type { RunLedger } from './run-ledger.js';
import type { RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';
import type { Steers } from './steers.js';
import { assertMayAct, type Limiter, type SessionOwnership } from './ownership.js';
import { RunTools } from './run-tools.js';

export interface RunHostDeps {
  table: RunTable;
  ledger: RunLedger;
  log: EventLog;
  sessions: SessionHost;
  limiter: Limiter;
  steers: Steers;
  conversations: Conversations;
  inspection: InspectionHub;
  clock: Clock;
  config: () => Config;
  models: ReadonlyMap<string, ModelProvider>;
  tools: ReadonlyMap<string, AnyTool>;
  /** Tools only the runs of one session see; one replaces an engine tool of the same name. Must not throw. */
  sessionTools?: (sessionId: string) => readonly AnyTool[];
  approvals: ApprovalGate;
  /** Where tool calls hold their claims against other runs' calls. */
  claims: ClaimRegistry;
  rewriteArguments?: ToolServiceOptions['rewriteArguments'];
  nodes?: ToolServiceOptions['nodes'];
  /** Contract: must not throw; reports an unexpected error. */
  onError: (error: unknown) => void;
  /** True once the engine is closing. */
  closing: () => boolean;
  /** Submits a delegated run (`session_send`) and resolves with its result. May reject with an EngineError. */
  delegate: (request: RunRequest) => Promise<RunResult>;
  observer: EngineObserver;
  ownership?: Pick<SessionOwnership, 'mayAct'>; // in a cluster: a run stops once its process may no longer act
}

/**
 * @example
 * const runs = new RunHost(deps);
 * runs.start(runId); // the run's actor: permits, turns, tool batches, terminal event, releases
 */
export class RunHost {
  private readonly machine;
  private readonly tools: RunTools;
  /** The model turn each thinking run waits for, to abort when the run leaves `thinking`. */
  private readonly turns = new Map<string, AbortController>();
  /** The act host of this engine's runs: gives back what a stopped run's open calls hold. */
  private readonly act;

  constructor(private readonly deps: RunHostDeps) {
    this.tools = new RunTools(deps);
    this.act = provideActMachine({
      table: deps.table,
      ledger: deps.ledger,
      clock: deps.clock,
      claims: deps.claims,
      crossRunClaims: () => deps.config().tool_service.cross_run_claims,
    });
    this.machine = this.provide();
  }

  /** Creates and starts the actor of an admitted run; it settles the run when it stops. */
  start(runId: string): void {
    const { table, ledger } = this.deps;
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
      // A stopped or crashed actor runs no exit action: its model turn and its open tool calls
      // are given up here too. So are the calls of a batch stopped while it was busy with an
      // event (it never took the CLOSE of the run's ending, so they ran no exit action either).
      complete: () => {
        this.abandonTurn(runId);
        this.act.abandonRun(runId);
        if (!this.deps.closing() || handle.ended) ledger.settleRun(handle);
      },
      error: (error) => {
        this.abandonTurn(runId);
        this.act.abandonRun(runId);
        this.deps.onError(error);
        ledger.settleRun(handle);
      },
    });
    actor.start();
  }

  private provide() {
    const { table, ledger, sessions, limiter, steers, clock } = this.deps;
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
          table.running.add(context.runId);
          this.deps.log.engineEvent('engine.running', { running: [...table.running] });
          sessions.runStarted(context.sessionId, context.runId);
        },
        consumeSteers: ({ context }, { steers: consumed, turn }) => {
          if (consumed.length === 0) return;
          const handle = table.require(context.runId);
          for (const steer of consumed) {
            handle.inbox.push({ role: 'user', content: steer.text });
            ledger.append(handle, 'run.steered', { steerId: steer.steerId, text: steer.text, consumedAtTurn: turn });
            steers.consumed(steer.steerId, turn);
          }
          sessions.steersConsumed(context.sessionId, context.runId, consumed.length);
        },
        startTurn: ({ context }, { turn }) => ledger.append(table.require(context.runId), 'turn.started', { turn }),
        requestReply: ({ self }, turn) => this.requestReply(self, turn),
        abandonReply: (_, { runId }) => this.abandonTurn(runId),
        finishTurn: ({ context }, { turn }) => ledger.append(table.require(context.runId), 'turn.finished', { turn }),
        appendTerminalEvent: ({ context }, { outcome, turns, toolCalls }) =>
          ledger.endRun(table.require(context.runId), outcome, { turns, toolCalls }),
        handOverSteers: ({ context }, { steers: unconsumed, outcome }) =>
          steers.handOver(table.require(context.runId), unconsumed, outcome?.state === 'completed'),
        escalateSteer: ({ context }, { steer, to }) => {
          const handle = table.require(context.runId);
          ledger.append(handle, 'run.steer_escalated', { steerId: steer.steerId, to });
          if (to === 'queue') steers.toLane(handle, steer);
        },
        releaseSlot: ({ context }) => sessions.runEnded(context.sessionId, context.runId),
        releasePermits: ({ context }) => limiter.release(context.runId),
        planBatch: assign(({ context }) => {
          const handle = table.require(context.runId);
          const toolConfig = this.deps.config().tool_service;
          const service = this.tools.toolServiceOf(handle);
          const plan = planBatch({
            runId: context.runId,
            turn: context.turn,
            toolCalls: context.lastReply?.toolCalls ?? [],
            service,
            concurrency: toolConfig.parallel_tool_concurrency,
            scheduling: toolConfig.scheduling,
            steerPending: context.pendingSteers.length > 0,
            callTimeoutMs: Math.max(
              1,
              Math.min(toolConfig.default_timeout_seconds * 1000, handle.deadlineAt - nowOf(clock)),
            ),
          });
          handle.batch = { ...plan, service, startedAt: [] };
          for (const { tool, commandVerdict } of plan.calls) {
            if (commandVerdict)
              this.deps.observer.commandJudged({ runId: context.runId, tool, verdict: commandVerdict });
          }
          return { batch: plan.act };
        }),
        announceSchedule: ({ context }) => {
          const handle = table.require(context.runId);
          if (handle.batch) ledger.append(handle, 'tool.scheduled', handle.batch.schedule);
        },
        recordToolResults: ({ context }, output) => recordResults(table.require(context.runId), output),
        closeBatch: ({ context, self }, reason) => {
          // Sent directly (not with sendTo, which runs after this macrostep) so the batch's
          // synthetic results are logged before the run's terminal event.
          const act = self.getSnapshot().children['act'];
          if (!act || act.getSnapshot().status !== 'active') return;
          act.send({ type: 'CLOSE', ...reason });
          // Results of calls that did finish are real: the conversation keeps them.
          const output = act.getSnapshot().output as ActOutput | undefined;
          if (output) recordResults(table.require(context.runId), output);
        },
      },
      actors: {
        act: this.act.machine,
      },
    });
  }

  private abandonTurn(runId: string): void {
    this.turns.get(runId)?.abort();
    this.turns.delete(runId);
  }

  /** Runs the turn; its answer goes to the run unless the run left `thinking` meanwhile (abandonReply aborted it). */
  private requestReply(run: { send(event: RunChartEvent): void }, turn: ModelTurnInput): void {
    const controller = new AbortController();
    this.turns.set(turn.runId, controller);
    // A settled turn leaves the map first, so abandonReply aborts only a turn still running
    // (an abort builds a DOMException with a stack: not free on every turn).
    const answer = (event: RunChartEvent) => {
      if (controller.signal.aborted) return;
      if (this.turns.get(turn.runId) === controller) this.turns.delete(turn.runId);
      run.send(event);
    };
    this.modelTurn(turn, controller.signal).then(
      (reply) => answer({ type: 'MODEL_REPLY', reply }),
      (error: unknown) => answer({ type: 'MODEL_FAILED', error }),
    );
  }

  private async modelTurn(input: ModelTurnInput, signal: AbortSignal): Promise<ModelReply> {
    const { table, ledger, conversations } = this.deps;
    const handle = table.require(input.runId);
    assertMayAct(this.deps.ownership, handle.status.sessionId);
    await ledger.flushInbox(handle);
    const conversation = await conversations.messages(handle.status.sessionId);
    if (signal.aborted) throw abortError();
    const [providerId, modelName] = splitModel(handle.request.model);
    const reply = await runModelTurn({
      provider: this.deps.models.get(providerId)!,
      ...(modelName !== undefined ? { model: modelName } : {}),
      messages: conversation,
      tools: this.tools.toolSpecsOf(handle.status.sessionId),
      signal,
      clock: this.deps.clock,
      context: {
        runId: input.runId,
        sessionId: handle.status.sessionId,
        turn: input.turn,
        input: handle.request.input,
        deadline: handle.deadlineAt,
      },
      onDelta: (text) => ledger.append(handle, 'model.delta', { turn: input.turn, text }),
      onRetry: (attempt, reason) => ledger.append(handle, 'run.retrying', { attempt, reason }),
    });
    if (signal.aborted) throw abortError();
    assertMayAct(this.deps.ownership, handle.status.sessionId); // an answer that outlived the lease must not act here
    handle.status.usage = addUsage(handle.status.usage, reply.usage);
    ledger.append(handle, 'model.message', modelMessageData(input.turn, reply));
    await conversations.append(handle.status.sessionId, assistantMessageOf(reply));
    const unfinished = unfinishedReplyError(reply);
    if (unfinished) throw Object.assign(new Error(unfinished.message), { code: unfinished.code });
    return reply;
  }
}

function abortError(): Error {
  return Object.assign(new Error('aborted'), { name: 'AbortError', code: 'aborted' });
}
