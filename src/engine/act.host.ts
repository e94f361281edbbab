/*
 * Hosts machines/act.machine.ts and the machines/tool-call.machine.ts it invokes: a tool
 * batch's calls announced on the run's log as they start and finish, approvals and
 * executions through the run's ToolService, and the batch's results turned into the tool
 * messages of the conversation.
 */
import { fromCallback, fromPromise, type EventObject } from 'xstate';
import { actMachine, type ActOutput } from '../../machines/act.machine.js';
import { toolCallMachine, type ToolCallOutcome } from '../../machines/tool-call.machine.js';
import { holdsAcrossRuns, type ClaimRegistry } from '../concurrency/index.js';
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
 * const act = provideActMachine({ table, ledger, clock }); // the run machine's `act` actor
 */
export function provideActMachine({ table, ledger, clock, claims, crossRunClaims }: ActHostDeps) {
  /** Tool executions still settling, by call: a call cancelled mid-execution keeps its claim until its tool has stopped. */
  const executing = new Map<string, Promise<unknown>>();
  const callKey = (runId: string, index: number) => `${runId}\u0000${index}`;
  const batchOf = (runId: string) => {
    const batch = table.get(runId)?.batch;
    if (!batch) throw new Error(`run ${runId} has no tool batch`);
    return batch;
  };
  return actMachine.provide({
    actions: {
      callStarted: ({ context }, { index }) => {
        const handle = table.get(context.runId);
        const call = handle?.batch?.calls[index];
        if (!handle || !call) return;
        handle.batch!.startedAt[index] = nowOf(clock);
        ledger.append(handle, 'tool.started', { callId: call.callId, tool: call.tool, args: call.args });
      },
      callWaiting: ({ context }, { index, blockedBy, resource }) => {
        const handle = table.get(context.runId);
        const call = handle?.batch?.calls[index];
        if (handle && call) ledger.append(handle, 'tool.waiting', { callId: call.callId, blockedBy, resource });
      },
      callFinished: ({ context }, { index, result }) => {
        const handle = table.get(context.runId);
        const call = handle?.batch?.calls[index];
        if (!handle || !call) return;
        const startedAt = handle.batch!.startedAt[index];
        if (!result.ok && result.error && REFUSALS.has(result.error.code)) {
          (handle.status.denied ??= []).push({ callId: call.callId, tool: call.tool, code: result.error.code, message: result.error.message });
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
        actors: {
          requestApproval: fromPromise(async ({ input, signal }) => {
            const batch = batchOf(input.runId);
            return batch.service.approve(batch.calls[input.index]!, signal);
          }),
          // The claim is held for as long as the call's `holding` state lasts (a call stopped mid-execution:
          // until its tool has stopped too); stopping this actor gives it back.
          holdClaim: fromCallback<EventObject, { runId: string; index: number }>(({ input, sendBack }) => {
            const batch = batchOf(input.runId);
            const call = batch.calls[input.index]!;
            if (!crossRunClaims() || !holdsAcrossRuns(call.claim)) {
              sendBack({ type: 'CLAIM_HELD' });
              return undefined;
            }
            const ticket = claims.acquire(
              { workspace: batch.service.workspace, runId: input.runId, callId: call.callId, tool: call.tool, claim: call.claim },
              { waiting: (block) => sendBack({ type: 'CLAIM_WAITING', ...block }), held: () => sendBack({ type: 'CLAIM_HELD' }) },
            );
            return () => {
              const running = executing.get(callKey(input.runId, input.index));
              const release = () => ticket.release();
              if (running) void running.then(release, release);
              else release();
            };
          }),
          executeTool: fromPromise(async ({ input, signal }) => {
            const batch = batchOf(input.runId);
            const call = batch.calls[input.index]!;
            const key = callKey(input.runId, input.index);
            const running = batch.service.execute(call, signal, batch.act.calls[input.index]!.timeoutMs);
            executing.set(key, running);
            const forget = () => {
              if (executing.get(key) === running) executing.delete(key);
            };
            running.then(forget, forget);
            return running;
          }),
        },
      }),
    },
  });
}

/** A batch's results, in model order, become the tool messages of the conversation. */
export function recordResults(handle: RunHandle, output: ActOutput): void {
  const calls = handle.batch?.calls ?? [];
  handle.inbox.push(...output.results.map((result, i) => toolMessage(calls[i]?.callId ?? `call_${i}`, result)));
  handle.batch = undefined;
}

function toolMessage(callId: string, result: ToolCallOutcome) {
  const body = result.ok ? result.output : { error: result.error, ...(result.output !== undefined ? { output: result.output } : {}) };
  return { role: 'tool' as const, toolCallId: callId, content: typeof body === 'string' ? body : JSON.stringify(body ?? null) };
}
