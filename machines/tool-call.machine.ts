/*
 * One tool call: waiting (spawned when the batch gets to it) -> waitingForClaim (-> blocked) ->
 * approval -> execute -> finished | failed | cancelled | deferred. Validation and the claim
 * were decided when the batch was planned and are carried in the input; each step is one
 * transition, so a call costs few microsteps. The claim is held against other runs by an
 * invoked actor (`holdClaim`) for as long as the call is in `holding`: it says when the call
 * must wait and when it holds, and gives the claim back when the call leaves, however it
 * leaves. Approval and execution are actors that src/ provides. Waiting for a claim another
 * run holds (`blocked`) and executing are each bounded by the call's timeout, a named delay
 * on the actor clock. The call tells the batch when it starts (CALL_STARTED: it holds its
 * claim) and when it must wait (CALL_WAITING); every final state reports its result
 * (CALL_DONE). Pure.
 */
import { assign, fromCallback, fromPromise, sendParent, setup, type EventObject } from 'xstate';

export interface ToolCallError {
  code: string;
  message: string;
}

export interface ToolCallOutcome {
  ok: boolean;
  output?: unknown;
  error?: ToolCallError;
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
  invalid?: ToolCallError;
  /** Milliseconds this call may take: the tool timeout clipped to the run's deadline. */
  timeoutMs: number;
  /** Decided at planning from the tier, the tool and its arguments: ask someone first. */
  needsApproval: boolean;
}

export type ApprovalVerdict = { allowed: true } | { allowed: false; error: ToolCallError };

/** Who holds what a waiting call needs (machines stay free of src/, so this mirrors src/concurrency's ClaimBlock). */
export interface ClaimWait {
  blockedBy: { runId: string; callId: string; tool: string };
  resource: string;
}

export interface ToolCallContext extends ToolCallInput {
  result: ToolCallOutcome | undefined;
  /** Set while the call waits for a claim another run holds. */
  wait: ClaimWait | undefined;
}

export type ToolCallEvent = ({ type: 'CLAIM_WAITING' } & ClaimWait) | { type: 'CLAIM_HELD' } | { type: 'CANCEL'; message: string };

export interface CallDoneEvent {
  type: 'CALL_DONE';
  index: number;
  result: ToolCallOutcome;
}

/** The call holds its claim and goes on (or was refused at planning): the batch announces its start. */
export interface CallStartedEvent {
  type: 'CALL_STARTED';
  index: number;
}

/** The call waits for a claim another run holds. */
export type CallWaitingEvent = { type: 'CALL_WAITING'; index: number } & ClaimWait;

const notProvided = (name: string) => () => Promise.reject(new Error(`tool-call machine: actor ${name} was not provided`));

function errorOf(error: unknown): ToolCallError {
  const code = (error as { code?: unknown } | null)?.code;
  return { code: typeof code === 'string' ? code : 'tool_error', message: error instanceof Error ? error.message : String(error) };
}

export const toolCallMachine = setup({
  types: {
    context: {} as ToolCallContext,
    events: {} as ToolCallEvent,
    input: {} as ToolCallInput,
  },
  actors: {
    requestApproval: fromPromise<ApprovalVerdict, { runId: string; index: number }>(notProvided('requestApproval')),
    executeTool: fromPromise<unknown, { runId: string; index: number }>(notProvided('executeTool')),
    /** Without a registry there is nobody else to wait for: the claim is held at once. */
    holdClaim: fromCallback<EventObject, { runId: string; index: number }>(({ sendBack }) => sendBack({ type: 'CLAIM_HELD' })),
  },
  delays: {
    callTimeout: ({ context }) => context.timeoutMs,
  },
  actions: {
    setResult: assign((_, result: ToolCallOutcome) => ({ result })),
    recordWait: assign((_, wait: ClaimWait) => ({ wait })),
    announceStarted: sendParent(({ context }): CallStartedEvent => ({ type: 'CALL_STARTED', index: context.index })),
    announceWaiting: sendParent(({ context }, wait: ClaimWait): CallWaitingEvent => ({ type: 'CALL_WAITING', index: context.index, ...wait })),
    report: sendParent(({ context }): CallDoneEvent => ({
      type: 'CALL_DONE',
      index: context.index,
      result: context.result ?? { ok: false, error: { code: 'internal', message: 'call ended without a result' } },
    })),
  },
  guards: {
    plannedValid: ({ context }) => context.invalid === undefined,
    approvalNeeded: ({ context }) => context.needsApproval,
    approved: (_, verdict: ApprovalVerdict) => verdict.allowed,
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
          actions: { type: 'setResult', params: { ok: false, output: { deferred: true }, error: { code: 'deferred', message: 'deferred: a new user message arrived; see it before acting' }, synthetic: true } },
        },
        {
          guard: { type: 'begins', params: 'ABORT' },
          target: 'failed',
          actions: {
            type: 'setResult',
            params: ({ context }) => ({ ok: false, error: { code: 'aborted', message: context.begin.type === 'ABORT' ? context.begin.message : 'aborted' }, synthetic: true }),
          },
        },
        {
          guard: { type: 'begins', params: 'REUSE' },
          target: 'finished',
          actions: { type: 'setResult', params: ({ context }) => (context.begin.type === 'REUSE' ? context.begin.result : { ok: false }) },
        },
        { guard: 'plannedValid', target: 'holding' },
        { target: 'failed', actions: ['announceStarted', { type: 'setResult', params: ({ context }) => ({ ok: false, error: context.invalid }) }] },
      ],
    },
    // The claim was computed once, from the admitted arguments, when the batch was planned; here
    // it is held against the calls of other runs for as long as the call is in this state.
    holding: {
      invoke: { src: 'holdClaim', input: ({ context }) => ({ runId: context.runId, index: context.index }) },
      on: {
        CANCEL: {
          target: 'cancelled',
          actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: { code: 'cancelled', message: event.message } }) },
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
                { type: 'recordWait', params: ({ event }) => ({ blockedBy: event.blockedBy, resource: event.resource }) },
                { type: 'announceWaiting', params: ({ event }) => ({ blockedBy: event.blockedBy, resource: event.resource }) },
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
                { type: 'recordWait', params: ({ event }) => ({ blockedBy: event.blockedBy, resource: event.resource }) },
                { type: 'announceWaiting', params: ({ event }) => ({ blockedBy: event.blockedBy, resource: event.resource }) },
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
                  error: {
                    code: 'timeout',
                    message: `tool call waited its whole timeout of ${context.timeoutMs} ms for ${context.wait?.resource ?? 'its claim'}, held by ${context.wait?.blockedBy.tool ?? 'a call'} of run ${context.wait?.blockedBy.runId ?? '?'}; it was not run`,
                  },
                }),
              },
            },
          },
        },
        running: {
          entry: 'announceStarted',
          initial: 'approval',
          states: {
            approval: {
              invoke: {
                src: 'requestApproval',
                input: ({ context }) => ({ runId: context.runId, index: context.index }),
                onDone: [
                  { guard: { type: 'approved', params: ({ event }) => event.output }, target: 'execute' },
                  {
                    target: '#toolCall.failed',
                    actions: {
                      type: 'setResult',
                      params: ({ event }) => ({ ok: false, error: event.output.allowed ? undefined : event.output.error }),
                    },
                  },
                ],
                onError: {
                  target: '#toolCall.failed',
                  actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: errorOf(event.error) }) },
                },
              },
            },
            execute: {
              after: {
                callTimeout: {
                  target: '#toolCall.failed',
                  actions: {
                    type: 'setResult',
                    params: ({ context }) => ({ ok: false, error: { code: 'timeout', message: `tool call exceeded its timeout of ${context.timeoutMs} ms` } }),
                  },
                },
              },
              invoke: {
                src: 'executeTool',
                input: ({ context }) => ({ runId: context.runId, index: context.index }),
                onDone: { target: '#toolCall.finished', actions: { type: 'setResult', params: ({ event }) => ({ ok: true, output: event.output }) } },
                onError: { target: '#toolCall.failed', actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: errorOf(event.error) }) } },
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
