/*
 * Hosts machines/run.machine.ts: a run's effects (permits requested, start announced,
 * steers consumed, model turns, tool batches planned and closed, the terminal event and the
 * releases) and the run's ToolService. The chart decides the order; this file does each step.
 */
import { assign, createActor, fromPromise } from 'xstate';
import type { ActOutput } from '../../machines/act.machine.js';
import type { ModelReply, ModelTurnInput } from '../../machines/run.machine.js';
import { runMachine } from '../../machines/run.machine.js';
import type { ApprovalGate } from '../approval/index.js';
import type { ClaimRegistry } from '../concurrency/index.js';
import type { Config } from '../config/index.js';
import { nowOf, type Clock } from '../core/clock.js';
import { ToolError } from '../core/errors.js';
import { splitModel, type RunRequest } from '../core/run-request.js';
import type { RunResult } from '../core/run-status.js';
import { planBatch } from '../harness/batch-plan.js';
import type { Conversations } from '../harness/conversation.js';
import { addUsage, assistantMessageOf, modelMessageData, runModelTurn, unfinishedReplyError } from '../harness/model-turn.js';
import { toolSpecOf } from '../harness/tool-specs.js';
import type { ModelProvider, ToolSpec } from '../model/types.js';
import type { AnyTool, DelegatedRunResult, DelegationRequest } from '../tools/tool.js';
import { sandboxSettings } from '../sandbox/sandbox-settings.js';
import { ToolService, type ToolServiceOptions } from '../tools/tool-service.js';
import { provideActMachine, recordResults } from './act.host.js';
import type { EngineObserver } from './engine-observer.js';
import type { EventLog } from './event-log.js';
import type { InspectionHub } from './inspection.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';
import type { Steers } from './steers.js';
import { assertMayAct, leaseCheckedTools, type Limiter, type SessionOwnership } from './ownership.js';

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
  private readonly toolSpecs: ToolSpec[];

  constructor(private readonly deps: RunHostDeps) {
    this.toolSpecs = [...deps.tools.values()].map(toolSpecOf);
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
        ...(handle.request.startBy !== undefined ? { startWithinMs: Math.max(0, Date.parse(handle.request.startBy) - nowOf(this.deps.clock)) } : {}),
      },
      clock: this.deps.clock,
      inspect: this.deps.inspection.option,
      id: `run:${runId}`,
    });
    handle.actor = actor;
    actor.subscribe({
      // A run stopped unstarted by close() stays queued in the store: nothing is written for it.
      complete: () => {
        if (!this.deps.closing() || handle.ended) ledger.settleRun(handle);
      },
      error: (error) => {
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
          const service = this.toolServiceOf(handle);
          const plan = planBatch({
            runId: context.runId,
            turn: context.turn,
            toolCalls: context.lastReply?.toolCalls ?? [],
            service,
            concurrency: toolConfig.parallel_tool_concurrency,
            scheduling: toolConfig.scheduling,
            steerPending: context.pendingSteers.length > 0,
            callTimeoutMs: Math.max(1, Math.min(toolConfig.default_timeout_seconds * 1000, handle.deadlineAt - nowOf(clock))),
          });
          handle.batch = { ...plan, service, startedAt: [] };
          for (const { tool, commandVerdict } of plan.calls) {
            if (commandVerdict) this.deps.observer.commandJudged({ runId: context.runId, tool, verdict: commandVerdict });
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
        modelTurn: fromPromise<ModelReply, ModelTurnInput>(({ input, signal }) => this.modelTurn(input, signal)),
        act: provideActMachine({ table, ledger, clock, claims: this.deps.claims, crossRunClaims: () => this.deps.config().tool_service.cross_run_claims }),
      },
    });
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
      tools: this.toolSpecsOf(handle.status.sessionId),
      signal,
      clock: this.deps.clock,
      context: { runId: input.runId, sessionId: handle.status.sessionId, turn: input.turn, input: handle.request.input, deadline: handle.deadlineAt },
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

  /** The engine's tools, with the session's own over them (in a cluster, each checking the lease first). */
  private toolsOf(sessionId: string): ReadonlyMap<string, AnyTool> {
    const own = this.deps.sessionTools?.(sessionId) ?? [];
    const tools = own.length === 0 ? this.deps.tools : new Map([...this.deps.tools, ...own.map((tool) => [tool.name, tool] as const)]);
    return this.deps.ownership ? leaseCheckedTools(tools, sessionId, this.deps.ownership) : tools;
  }

  private toolSpecsOf(sessionId: string): ToolSpec[] {
    const own = this.deps.sessionTools?.(sessionId) ?? [];
    if (own.length === 0) return this.toolSpecs;
    const replaced = new Set(own.map((tool) => tool.name));
    return [...this.toolSpecs.filter((spec) => !replaced.has(spec.name)), ...own.map(toolSpecOf)];
  }

  /** session_send: a run on another session, owned by this one (cancelling it cancels the child). */
  private async delegate(parent: RunHandle, request: DelegationRequest): Promise<DelegatedRunResult> {
    const { table } = this.deps;
    for (let run: RunHandle | undefined = parent; run; run = table.get(run.request.parentRunId ?? '')) {
      if (run.status.sessionId === request.sessionId) {
        throw new ToolError(
          'delegation_cycle',
          `session "${request.sessionId}" is already working on this task (run ${run.status.runId}); delegating to it would wait for itself`,
        );
      }
      if (!run.request.parentRunId) break;
    }
    const result = await this.deps.delegate({
      sessionId: request.sessionId,
      agentId: parent.request.agentId,
      input: request.input,
      parentRunId: parent.status.runId,
      busyPolicy: 'queue',
      ...(request.workspace !== undefined ? { workspace: request.workspace } : {}),
      ...(parent.request.unattended !== undefined ? { unattended: parent.request.unattended } : {}),
      // A delegated run may not escape the tier its parent works under.
      ...(parent.request.approvalTier !== undefined ? { approvalTier: parent.request.approvalTier } : {}),
    });
    return {
      runId: result.runId,
      state: result.state,
      ...(result.output !== undefined ? { output: result.output } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
  }

  private toolServiceOf(handle: RunHandle): ToolService {
    if (handle.toolService) return handle.toolService;
    const { config, ledger } = this.deps;
    handle.toolService = new ToolService({
      tools: this.toolsOf(handle.status.sessionId),
      runId: handle.status.runId,
      sessionId: handle.status.sessionId,
      workspace: handle.workspace,
      sandbox: sandboxSettings(config(), handle.request.sandbox),
      unattended: handle.request.unattended ?? false,
      warn: (message) => ledger.append(handle, 'sandbox.warning', { message }),
      delegate: (request) => this.delegate(handle, request),
      ...(this.deps.rewriteArguments ? { rewriteArguments: this.deps.rewriteArguments } : {}),
      ...(this.deps.nodes ? { nodes: this.deps.nodes } : {}),
      gate: this.deps.approvals,
      approvalConfig: () => {
        const tier = handle.request.approvalTier;
        return tier === undefined ? config().approval : { ...config().approval, tier };
      },
      commandPolicy: () => config().sandbox.command_policy,
    });
    return handle.toolService;
  }
}

function abortError(): Error {
  return Object.assign(new Error('aborted'), { name: 'AbortError', code: 'aborted' });
}
