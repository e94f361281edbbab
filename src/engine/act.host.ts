/*
 * Hosts machines/act.machine.ts and the machines/tool-call.machine.ts it invokes: a tool
 * batch's calls announced on the run's log as they start and finish, approvals and
 * executions through the run's ToolService, and the batch's results turned into the tool
 * messages of the conversation.
 */
import { fromPromise } from 'xstate';
import { actMachine, type ActOutput } from '../../machines/act.machine.js';
import { toolCallMachine, type ToolCallOutcome } from '../../machines/tool-call.machine.js';
import { holdsAcrossRuns, type ClaimRegistry, type ClaimTicket } from '../concurrency/index.js';
import { nowOf, type Clock } from '../core/clock.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';

/** Tool results that mean a required action did not happen: the run summary lists them. */
const REFUSALS = new Set(['approval_denied', 'approval_unavailable', 'command_blocked']);

export interface ActHostDeps {
  table: RunTable;
  ledger: RunLedger;
  clock: Clock;
  /** Where calls hold their claims against the calls of other runs. */
  claims: ClaimRegistry;
  /** [tool_service] cross_run_claims, read as each call starts. */
  crossRunClaims: () => boolean;
}

/**
 * The Act phase wired to the run's batch (planned by the run host into `handle.batch`).
 * @example
 * const act = provideActMachine({ table, ledger, clock, claims, crossRunClaims }); // act.machine: the run machine's `act` actor
 */
export function provideActMachine({ table, ledger, clock, claims, crossRunClaims }: ActHostDeps) {
  const effects = new CallEffects();
  const batchOf = (runId: string) => {
    const batch = table.get(runId)?.batch;
    if (!batch) throw new Error(`run ${runId} has no tool batch`);
    return batch;
  };
  const announceStarted = (runId: string, index: number) => {
    const handle = table.get(runId);
    const call = handle?.batch?.calls[index];
    if (!handle || !call) return;
    handle.batch!.startedAt[index] = nowOf(clock);
    ledger.append(handle, 'tool.started', { callId: call.callId, tool: call.tool, args: call.args });
  };
  const machine = actMachine.provide({
    actions: {
      callStarted: ({ context }, { index }) => announceStarted(context.runId, index),
      callFinished: ({ context }, { index, result }) => {
        const handle = table.get(context.runId);
        const call = handle?.batch?.calls[index];
        if (!handle || !call) return;
        const startedAt = handle.batch!.startedAt[index];
        if (!result.ok && result.error && REFUSALS.has(result.error.code)) {
          (handle.status.denied ??= []).push({
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
          announceStarted: (_, { runId, index }) => announceStarted(runId, index),
          announceWaiting: (_, { runId, index, blockedBy, resource }) => {
            const handle = table.get(runId);
            const call = handle?.batch?.calls[index];
            if (handle && call) ledger.append(handle, 'tool.waiting', { callId: call.callId, blockedBy, resource });
          },
          // The claim is held for as long as the call's `holding` state lasts (a call that left
          // mid-execution: until its tool has stopped too).
          holdClaim: ({ self }, { runId, index }) => {
            const batch = batchOf(runId);
            const call = batch.calls[index]!;
            if (!crossRunClaims() || !holdsAcrossRuns(call.claim)) {
              self.send({ type: 'CLAIM_HELD' });
              return;
            }
            effects.of(runId, index).ticket = claims.acquire(
              { workspace: batch.service.workspace, runId, callId: call.callId, tool: call.tool, claim: call.claim },
              {
                waiting: (block) => self.send({ type: 'CLAIM_WAITING', ...block }),
                held: () => self.send({ type: 'CLAIM_HELD' }),
              },
            );
          },
          releaseClaim: (_, { runId, index }) => effects.release(runId, index),
          startExecution: ({ self }, { runId, index }) => {
            const controller = new AbortController();
            let running: Promise<unknown>;
            try {
              const batch = batchOf(runId);
              running = batch.service.execute(
                batch.calls[index]!,
                controller.signal,
                batch.act.calls[index]!.timeoutMs,
              );
            } catch (error) {
              running = Promise.reject(error);
            }
            const call = effects.of(runId, index);
            call.execution = { controller, running, settled: false };
            const settle = (
              event: { type: 'TOOL_DONE'; output: unknown } | { type: 'TOOL_FAILED'; error: unknown },
            ) => {
              call.execution!.settled = true;
              // An abandoned execution's answer is dropped: the call has moved on.
              if (!controller.signal.aborted) self.send(event);
            };
            running.then(
              (output) => settle({ type: 'TOOL_DONE', output }),
              (error: unknown) => settle({ type: 'TOOL_FAILED', error }),
            );
          },
          abandonExecution: (_, { runId, index }) => effects.abandon(runId, index),
        },
        actors: {
          requestApproval: fromPromise(async ({ input, signal }) => {
            const batch = batchOf(input.runId);
            return batch.service.approve(batch.calls[input.index]!, signal);
          }),
        },
      }),
    },
  });
  return { machine, abandonRun: (runId: string) => effects.abandonRun(runId) };
}

/** What a call holds between its exit actions: its claim ticket and its execution. */
interface CallHold {
  ticket?: ClaimTicket;
  execution?: { controller: AbortController; running: Promise<unknown>; settled: boolean };
}

/**
 * The claims and executions of open calls, by run. Exit actions give them back; a run whose
 * actor was stopped (no exit actions run) gives back all of its own at once.
 */
class CallEffects {
  private readonly runs = new Map<string, Map<number, CallHold>>();

  of(runId: string, index: number): CallHold {
    let calls = this.runs.get(runId);
    if (!calls) this.runs.set(runId, (calls = new Map()));
    let hold = calls.get(index);
    if (!hold) calls.set(index, (hold = {}));
    return hold;
  }

  /** The call left `execute` before its tool answered: abort the execution (its claim waits for it to stop). */
  abandon(runId: string, index: number): void {
    const execution = this.runs.get(runId)?.get(index)?.execution;
    if (execution && !execution.settled) execution.controller.abort();
  }

  /** The call left `holding`: its claim is given back once its tool, if it ran, has stopped. */
  release(runId: string, index: number): void {
    const calls = this.runs.get(runId);
    const hold = calls?.get(index);
    if (!calls || !hold) return;
    calls.delete(index);
    if (calls.size === 0) this.runs.delete(runId);
    const ticket = hold.ticket;
    if (!ticket) return;
    const execution = hold.execution;
    if (execution && !execution.settled) {
      const release = () => ticket.release();
      void execution.running.then(release, release);
    } else ticket.release();
  }

  abandonRun(runId: string): void {
    for (const index of [...(this.runs.get(runId)?.keys() ?? [])]) {
      this.abandon(runId, index);
      this.release(runId, index);
    }
  }
}

/** A batch's results, in model order, become the tool messages of the conversation. */
export function recordResults(handle: RunHandle, output: ActOutput): void {
  const calls = handle.batch?.calls ?? [];
  handle.inbox.push(...output.results.map((result, i) => toolMessage(calls[i]?.callId ?? `call_${i}`, result)));
  handle.batch = undefined;
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
