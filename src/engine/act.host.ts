/*
 * Hosts machines/act.machine.ts and the machines/tool-call.machine.ts it invokes: a tool
 * batch's calls announced on the run's log as they start and finish, approvals and
 * executions through the run's ToolService, and the batch's results turned into the tool
 * messages of the conversation.
 */
import { actMachine, type ActInput, type ActOutput } from '../../machines/act.machine.js';
import type { ToolCallRequest } from '../../machines/run.machine.js';
import { toolCallMachine, type ToolCallOutcome } from '../../machines/tool-call.machine.js';
import { holdsAcrossRuns, type ClaimRegistry, type ClaimTicket } from '../concurrency/index.js';
import { nowOf, type Clock } from '../core/clock.js';
import type { Config } from '../config/index.js';
import { planBatch, type BatchPlan } from '../harness/batch-plan.js';
import type { ToolService } from '../tools/tool-service.js';
import type { AsyncEffects } from './async-effects.js';
import type { EngineObserver } from './engine-observer.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { RunTools } from './run-tools.js';

/** Tool results that mean a required action did not happen: the run summary lists them. */
const REFUSALS = new Set(['approval_denied', 'approval_unavailable', 'command_blocked']);

export interface ActHostDeps {
  table: RunTable;
  ledger: RunLedger;
  clock: Clock;
  config: () => Config;
  /** Where each run's ToolService comes from (and goes when the run's actor stops). */
  tools: Pick<RunTools, 'toolServiceOf' | 'forget'>;
  /** Where calls hold their claims against the calls of other runs. */
  claims: ClaimRegistry;
  observer: Pick<EngineObserver, 'commandJudged'>;
  /** Where tool executions run: started and abandoned with the call's `execute` state. */
  effects: AsyncEffects;
}

/** A run's tool batch in flight: its plan, the ToolService that runs it, when each call started (engine clock). */
export type Batch = BatchPlan & { service: ToolService; startedAt: number[] };

/**
 * The Act phase: each run's tool batch (the one owner of it, from planning until its results
 * are in the run's inbox), and the act chart wired to it.
 * @example
 * const act = new ActHost({ table, ledger, clock, config, tools, claims, observer });
 * act.plan(handle, turn, toolCalls, steerPending); // the ActInput of the run machine's `act` actor
 */
export class ActHost {
  private readonly batches = new Map<string, Batch>();
  private readonly held;
  readonly machine;

  constructor(private readonly deps: ActHostDeps) {
    this.held = new HeldClaims(deps.effects);
    this.machine = this.provide();
  }

  /** Plans the batch of a reply's tool calls (validation, claims, groups) and keeps it until its results are in. */
  plan(handle: RunHandle, turn: number, toolCalls: ToolCallRequest[], steerPending: boolean): ActInput {
    const { config, tools, ledger, clock, observer } = this.deps;
    const runId = handle.status.runId;
    const toolConfig = config().tool_service;
    const service = tools.toolServiceOf(handle);
    const plan = planBatch({
      runId,
      turn,
      toolCalls,
      service,
      concurrency: toolConfig.parallel_tool_concurrency,
      scheduling: toolConfig.scheduling,
      steerPending,
      callTimeoutMs: Math.max(
        1,
        Math.min(toolConfig.default_timeout_seconds * 1000, ledger.deadlineOf(handle) - nowOf(clock)),
      ),
    });
    this.open(runId, { ...plan, service, startedAt: [] });
    for (const { tool, commandVerdict } of plan.calls) {
      if (commandVerdict) observer.commandJudged({ runId, tool, verdict: commandVerdict });
    }
    return plan.act;
  }

  /** The batch the run acts on now (plan() opens the one it planned). */
  open(runId: string, batch: Batch): void {
    this.batches.set(runId, batch);
  }

  /** The planned batch's schedule goes on the run's log. */
  announceSchedule(handle: RunHandle): void {
    const batch = this.batches.get(handle.status.runId);
    if (batch) this.deps.ledger.append(handle, 'tool.scheduled', batch.schedule);
  }

  /** A batch's results, in model order, become the tool messages of the run's inbox; the batch is over. */
  recordResults(handle: RunHandle, output: ActOutput): void {
    const runId = handle.status.runId;
    const calls = this.batches.get(runId)?.calls ?? [];
    this.deps.ledger.post(
      handle,
      ...output.results.map((result, i) => toolMessage(calls[i]?.callId ?? `call_${i}`, result)),
    );
    this.batches.delete(runId);
  }

  /** The run's actor stopped: its open calls give back what they hold; its batch and ToolService are forgotten. */
  runStopped(runId: string): void {
    this.held.releaseRun(runId);
    this.batches.delete(runId);
    this.deps.tools.forget(runId);
  }

  private batchOf(runId: string): Batch {
    const batch = this.batches.get(runId);
    if (!batch) throw new Error(`run ${runId} has no tool batch`);
    return batch;
  }

  private announceStarted(runId: string, index: number): void {
    const handle = this.deps.table.get(runId);
    const batch = this.batches.get(runId);
    const call = batch?.calls[index];
    if (!handle || !batch || !call) return;
    batch.startedAt[index] = nowOf(this.deps.clock);
    this.deps.ledger.append(handle, 'tool.started', { callId: call.callId, tool: call.tool, args: call.args });
  }

  private provide() {
    const { table, ledger, clock, claims, config, effects } = this.deps;
    const held = this.held;
    return actMachine.provide({
      actions: {
        callStarted: ({ context }, { index }) => this.announceStarted(context.runId, index),
        callFinished: ({ context }, { index, result }) => {
          const handle = table.get(context.runId);
          const batch = this.batches.get(context.runId);
          const call = batch?.calls[index];
          if (!handle || !batch || !call) return;
          const startedAt = batch.startedAt[index];
          if (!result.ok && result.error && REFUSALS.has(result.error.code)) {
            ledger.recordDenied(handle, {
              callId: call.callId,
              tool: call.tool,
              code: result.error.code,
              message: result.error.message,
            });
          }
          ledger.append(handle, 'tool.finished', {
            callId: call.callId,
            ok: result.ok,
            ...(result.output !== undefined ? { output: result.output } : {}),
            ...(result.ok ? {} : { error: result.error }),
            durationMs: startedAt === undefined ? 0 : nowOf(clock) - startedAt,
            ...(result.synthetic ? { synthetic: true } : {}),
          });
        },
      },
      actors: {
        toolCall: toolCallMachine.provide({
          actions: {
            announceStarted: (_, { runId, index }) => this.announceStarted(runId, index),
            announceWaiting: (_, { runId, index, blockedBy, resource }) => {
              const handle = table.get(runId);
              const call = this.batches.get(runId)?.calls[index];
              if (handle && call) ledger.append(handle, 'tool.waiting', { callId: call.callId, blockedBy, resource });
            },
            // The claim is held for as long as the call's `holding` state lasts (a call that left
            // mid-execution: until its tool has stopped too).
            holdClaim: ({ self }, { runId, index }) => {
              const batch = this.batchOf(runId);
              const call = batch.calls[index]!;
              if (!config().tool_service.cross_run_claims || !holdsAcrossRuns(call.claim)) {
                self.send({ type: 'CLAIM_HELD' });
                return;
              }
              held.hold(
                runId,
                index,
                claims.acquire(
                  {
                    workspace: batch.service.workspace,
                    runId,
                    callId: call.callId,
                    tool: call.tool,
                    claim: call.claim,
                  },
                  {
                    waiting: (block) => self.send({ type: 'CLAIM_WAITING', ...block }),
                    held: () => self.send({ type: 'CLAIM_HELD' }),
                  },
                ),
              );
            },
            releaseClaim: (_, { runId, index }) => held.release(runId, index),
            requestApproval: ({ self }, { runId, index }) =>
              effects.start(
                runId,
                approvalKey(index),
                (signal) => {
                  const batch = this.batchOf(runId);
                  return batch.service.approve(batch.calls[index]!, signal);
                },
                {
                  done: (verdict) =>
                    self.send(verdict.allowed ? { type: 'APPROVED' } : { type: 'DENIED', error: verdict.error }),
                  failed: (error) => self.send({ type: 'APPROVAL_FAILED', error }),
                },
                self,
                'approval',
              ),
            abandonApproval: (_, { runId, index }) => effects.abandon(runId, approvalKey(index)),
            startExecution: ({ self }, { runId, index }) =>
              effects.start(
                runId,
                executionKey(index),
                (signal) => {
                  const batch = this.batchOf(runId);
                  return batch.service.execute(batch.calls[index]!, signal, batch.act.calls[index]!.timeoutMs);
                },
                {
                  done: (output) => self.send({ type: 'TOOL_DONE', output }),
                  failed: (error) => self.send({ type: 'TOOL_FAILED', error }),
                },
                self,
                'exec',
              ),
            abandonExecution: (_, { runId, index }) => effects.abandon(runId, executionKey(index)),
          },
        }),
      },
    });
  }
}

/** The key of a call's execution among its run's effects. */
const executionKey = (index: number) => `call-${index}`;
/** The key of a call's approval request among its run's effects. */
const approvalKey = (index: number) => `approval-${index}`;

/**
 * The claims open calls hold, by run. A call's exit action gives its claim back; a run whose
 * actor was stopped (no exit actions run) gives back all of its own at once. Either way the
 * claim is given back only once the call's execution, if one still runs, has stopped.
 */
class HeldClaims {
  private readonly runs = new Map<string, Map<number, ClaimTicket>>();

  constructor(private readonly effects: Pick<AsyncEffects, 'unsettled'>) {}

  hold(runId: string, index: number, ticket: ClaimTicket): void {
    let tickets = this.runs.get(runId);
    if (!tickets) this.runs.set(runId, (tickets = new Map()));
    tickets.set(index, ticket);
  }

  /** The call left `holding`: its claim is given back once its tool, if it ran, has stopped. */
  release(runId: string, index: number): void {
    const tickets = this.runs.get(runId);
    const ticket = tickets?.get(index);
    if (!tickets || !ticket) return;
    tickets.delete(index);
    if (tickets.size === 0) this.runs.delete(runId);
    const running = this.effects.unsettled(runId, executionKey(index));
    if (running) {
      const release = () => ticket.release();
      void running.then(release, release);
    } else ticket.release();
  }

  releaseRun(runId: string): void {
    for (const index of [...(this.runs.get(runId)?.keys() ?? [])]) this.release(runId, index);
  }
}

function toolMessage(callId: string, result: ToolCallOutcome) {
  const body = result.ok
    ? result.output
    : { error: result.error, ...(result.output !== undefined ? { output: result.output } : {}) };
  return {
    role: 'tool' as const,
    toolCallId: callId,
    content: typeof body === 'string' ? body : JSON.stringify(body ?? null),
  };
}
