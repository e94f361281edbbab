/*
 * One tool call: waiting (spawned when the batch gets to it) -> waitingForClaim (-> blocked) ->
 * approval -> execute -> finished | failed | cancelled | deferred. Validation and the claim
 * were decided when the batch was planned and are carried in the input; each step is one
 * transition, so a call costs few microsteps. The claim is held against other runs for as
 * long as the call is in `holding`: `holdClaim` asks for it on entry (the host answers
 * CLAIM_WAITING / CLAIM_HELD) and `releaseClaim` gives it back on exit, however the call
 * leaves. Approval and execution, the call's async work, are each asked for with an entry
 * action, abandoned with an exit action, and answered by events (APPROVED / DENIED /
 * APPROVAL_FAILED, TOOL_DONE / TOOL_FAILED), like the run's model turn: an invoked actor per
 * call cost more than the rest of a call's bookkeeping (bench/invoke-cost.bench.ts). A call
 * stopped without its exit actions (its run's actor was stopped) is cleaned up by the host.
 * Waiting for a claim another
 * run holds (`blocked`) and executing are each bounded by the call's timeout, a named delay
 * on the actor clock. The call announces its start itself (`announceStarted`: it holds its
 * claim) and when it must wait (`announceWaiting`) — an effect rather than an event to the
 * batch, which has nothing to decide then; every final state reports its result to the batch
 * (CALL_DONE). Pure.
 */
import { assign, sendParent, setup } from 'xstate';
import { errorOf, type ClaimBlock, type CodedError } from './vocabulary.js';

export interface ToolCallOutcome {
  ok: boolean;
  output?: unknown;
  error?: CodedError;
  /** Closed by the engine without executing (deferred, cancelled, aborted, deduplicated). */
  synthetic?: boolean;
}

/** What the batch tells a call as it spawns it: go, reuse a result, or close it without running. */
export type ToolCallBegin =
  | { type: 'START' }
  | { type: 'DEFER' }
  | { type: 'ABORT'; message: string }
  | { type: 'REUSE'; result: ToolCallOutcome };

export interface ToolCallInput {
  /** Decided by the batch when it got to this call; the call acts on it as it is created. */
  begin: ToolCallBegin;
  runId: string;
  index: number;
  callId: string;
  tool: string;
  /** Set when planning refused the call (unknown tool, invalid arguments). */
  invalid?: CodedError;
  /** Milliseconds this call may take: the tool timeout clipped to the run's deadline. */
  timeoutMs: number;
  /** Decided at planning from the tier, the tool and its arguments: ask someone first. */
  needsApproval: boolean;
}

export type ApprovalVerdict = { allowed: true } | { allowed: false; error: CodedError };

export interface ToolCallContext extends ToolCallInput {
  result: ToolCallOutcome | undefined;
  /** Set while the call waits for a claim another run holds. */
  wait: ClaimBlock | undefined;
}

export type ToolCallEvent =
  | ({ type: 'CLAIM_WAITING' } & ClaimBlock)
  | { type: 'CLAIM_HELD' }
  | { type: 'CANCEL'; message: string }
  /** The approval `requestApproval` asked for was given. */
  | { type: 'APPROVED' }
  /** The approval `requestApproval` asked for was refused (denied, timed out, no approver). */
  | { type: 'DENIED'; error: CodedError }
  /** Asking for the approval threw. */
  | { type: 'APPROVAL_FAILED'; error: unknown }
  /** The execution `startExecution` asked for returned this output. */
  | { type: 'TOOL_DONE'; output: unknown }
  /** The execution `startExecution` asked for threw. */
  | { type: 'TOOL_FAILED'; error: unknown };

/** Which call an effect is about. */
export interface CallRef {
  runId: string;
  index: number;
}

export interface CallDoneEvent {
  type: 'CALL_DONE';
  index: number;
  result: ToolCallOutcome;
}

export const toolCallMachine = setup({
  types: {
    context: {} as ToolCallContext,
    events: {} as ToolCallEvent,
    input: {} as ToolCallInput,
  },
  delays: {
    callTimeout: ({ context }) => context.timeoutMs,
  },
  actions: {
    // Effects, provided by the engine. Without a registry there is nobody else to wait for:
    // the claim is held at once.
    holdClaim: ({ self }, _params: CallRef) => self.send({ type: 'CLAIM_HELD' }),
    releaseClaim: (_, _params: CallRef) => {},
    requestApproval: ({ self }, _params: CallRef) =>
      self.send({ type: 'APPROVAL_FAILED', error: new Error('tool-call machine: requestApproval was not provided') }),
    /** The call left `approval` before it was answered (cancelled): the request is withdrawn, its answer dropped. */
    abandonApproval: (_, _params: CallRef) => {},
    startExecution: ({ self }, _params: CallRef) =>
      self.send({ type: 'TOOL_FAILED', error: new Error('tool-call machine: startExecution was not provided') }),
    /** The call left `execute` before its tool answered: the execution is aborted, its answer dropped. */
    abandonExecution: (_, _params: CallRef) => {},
    setResult: assign((_, result: ToolCallOutcome) => ({ result })),
    recordWait: assign((_, wait: ClaimBlock) => ({ wait })),
    /** The call holds its claim and goes on (or was refused at planning): its start is logged. */
    announceStarted: (_, _params: CallRef) => {},
    /** The call waits for a claim another run holds. */
    announceWaiting: (_, _params: CallRef & ClaimBlock) => {},
    report: sendParent(({ context }): CallDoneEvent => ({
      type: 'CALL_DONE',
      index: context.index,
      result: context.result ?? { ok: false, error: { code: 'internal', message: 'call ended without a result' } },
    })),
  },
  guards: {
    plannedValid: ({ context }) => context.invalid === undefined,
    approvalNeeded: ({ context }) => context.needsApproval,
    begins: ({ context }, type: ToolCallBegin['type']) => context.begin.type === type,
  },
}).createMachine({
  id: 'toolCall',
  context: ({ input }) => ({ ...input, result: undefined, wait: undefined }),
  initial: 'waiting',
  states: {
    // The batch spawns a call only when it gets to it, with what to do: the call acts on it at
    // once, in the macrostep that creates it. A call planning refused fails at once (announced
    // as started, so its refusal is logged in order).
    waiting: {
      always: [
        {
          guard: { type: 'begins', params: 'DEFER' },
          target: 'deferred',
          actions: {
            type: 'setResult',
            params: {
              ok: false,
              output: { deferred: true },
              error: { code: 'deferred', message: 'deferred: a new user message arrived; see it before acting' },
              synthetic: true,
            },
          },
        },
        {
          guard: { type: 'begins', params: 'ABORT' },
          target: 'failed',
          actions: {
            type: 'setResult',
            params: ({ context }) => ({
              ok: false,
              error: { code: 'aborted', message: context.begin.type === 'ABORT' ? context.begin.message : 'aborted' },
              synthetic: true,
            }),
          },
        },
        {
          guard: { type: 'begins', params: 'REUSE' },
          target: 'finished',
          actions: {
            type: 'setResult',
            params: ({ context }) => (context.begin.type === 'REUSE' ? context.begin.result : { ok: false }),
          },
        },
        { guard: 'plannedValid', target: 'holding' },
        {
          target: 'failed',
          actions: [
            { type: 'announceStarted', params: ({ context }) => ({ runId: context.runId, index: context.index }) },
            { type: 'setResult', params: ({ context }) => ({ ok: false, error: context.invalid }) },
          ],
        },
      ],
    },
    // The claim was computed once, from the admitted arguments, when the batch was planned; here
    // it is held against the calls of other runs for as long as the call is in this state.
    holding: {
      entry: { type: 'holdClaim', params: ({ context }) => ({ runId: context.runId, index: context.index }) },
      exit: { type: 'releaseClaim', params: ({ context }) => ({ runId: context.runId, index: context.index }) },
      on: {
        CANCEL: {
          target: 'cancelled',
          actions: {
            type: 'setResult',
            params: ({ event }) => ({ ok: false, error: { code: 'cancelled', message: event.message } }),
          },
        },
      },
      initial: 'waitingForClaim',
      states: {
        // Most calls hold their claim at once and need no timer: the wait is bounded from the moment another
        // run's call is in the way, which the registry says synchronously as the call enters this state.
        waitingForClaim: {
          on: {
            CLAIM_WAITING: {
              target: 'blocked',
              actions: [
                {
                  type: 'recordWait',
                  params: ({ event }) => ({ blockedBy: event.blockedBy, resource: event.resource }),
                },
                {
                  type: 'announceWaiting',
                  params: ({ context, event }) => ({
                    runId: context.runId,
                    index: context.index,
                    blockedBy: event.blockedBy,
                    resource: event.resource,
                  }),
                },
              ],
            },
            CLAIM_HELD: [{ guard: 'approvalNeeded', target: 'running.approval' }, { target: 'running.execute' }],
          },
        },
        blocked: {
          on: {
            // A later holder in the way: noted, the wait's bound stays the first one.
            CLAIM_WAITING: {
              actions: [
                {
                  type: 'recordWait',
                  params: ({ event }) => ({ blockedBy: event.blockedBy, resource: event.resource }),
                },
                {
                  type: 'announceWaiting',
                  params: ({ context, event }) => ({
                    runId: context.runId,
                    index: context.index,
                    blockedBy: event.blockedBy,
                    resource: event.resource,
                  }),
                },
              ],
            },
            CLAIM_HELD: [{ guard: 'approvalNeeded', target: 'running.approval' }, { target: 'running.execute' }],
          },
          after: {
            callTimeout: {
              target: '#toolCall.failed',
              actions: {
                type: 'setResult',
                params: ({ context }) => ({
                  ok: false,
                  // Made by the engine: the call never ran.
                  synthetic: true,
                  error: {
                    code: 'timeout',
                    message:
                      `tool call waited its whole timeout of ${context.timeoutMs} ms for ` +
                      `${context.wait?.resource ?? 'its claim'}, held by ${context.wait?.blockedBy.tool ?? 'a call'} ` +
                      `of run ${context.wait?.blockedBy.runId ?? '?'}; it was not run`,
                  },
                }),
              },
            },
          },
        },
        running: {
          entry: { type: 'announceStarted', params: ({ context }) => ({ runId: context.runId, index: context.index }) },
          initial: 'approval',
          states: {
            approval: {
              entry: {
                type: 'requestApproval',
                params: ({ context }) => ({ runId: context.runId, index: context.index }),
              },
              exit: {
                type: 'abandonApproval',
                params: ({ context }) => ({ runId: context.runId, index: context.index }),
              },
              on: {
                APPROVED: { target: 'execute' },
                DENIED: {
                  target: '#toolCall.failed',
                  actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: event.error }) },
                },
                APPROVAL_FAILED: {
                  target: '#toolCall.failed',
                  actions: {
                    type: 'setResult',
                    params: ({ event }) => ({ ok: false, error: errorOf(event.error, 'tool_error') }),
                  },
                },
              },
            },
            execute: {
              entry: {
                type: 'startExecution',
                params: ({ context }) => ({ runId: context.runId, index: context.index }),
              },
              exit: {
                type: 'abandonExecution',
                params: ({ context }) => ({ runId: context.runId, index: context.index }),
              },
              after: {
                callTimeout: {
                  target: '#toolCall.failed',
                  actions: {
                    type: 'setResult',
                    params: ({ context }) => ({
                      ok: false,
                      error: { code: 'timeout', message: `tool call exceeded its timeout of ${context.timeoutMs} ms` },
                    }),
                  },
                },
              },
              on: {
                TOOL_DONE: {
                  target: '#toolCall.finished',
                  actions: { type: 'setResult', params: ({ event }) => ({ ok: true, output: event.output }) },
                },
                TOOL_FAILED: {
                  target: '#toolCall.failed',
                  actions: {
                    type: 'setResult',
                    params: ({ event }) => ({ ok: false, error: errorOf(event.error, 'tool_error') }),
                  },
                },
              },
            },
          },
        },
      },
    },
    finished: { type: 'final', entry: 'report' },
    failed: { type: 'final', entry: 'report' },
    cancelled: { type: 'final', entry: 'report' },
    deferred: { type: 'final', entry: 'report' },
  },
});
