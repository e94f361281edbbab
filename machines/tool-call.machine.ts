/*
 * One tool call: waiting (until the batch starts it) -> validate -> claim -> approval ->
 * execute -> finished | failed | cancelled | deferred. Validation and the claim were decided
 * when the batch was planned and are carried in the input; approval and execution are
 * actors that src/ provides. The call's own timeout is a named delay on the actor clock.
 * Every final state reports its result to the batch (CALL_DONE). Pure.
 */
import { assign, fromPromise, sendParent, setup } from 'xstate';

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

export interface ToolCallInput {
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

export interface ToolCallContext extends ToolCallInput {
  result: ToolCallOutcome | undefined;
}

export type ToolCallEvent =
  | { type: 'START' }
  | { type: 'DEFER' }
  | { type: 'CANCEL'; message: string }
  | { type: 'ABORT'; message: string }
  | { type: 'REUSE'; result: ToolCallOutcome };

export interface CallDoneEvent {
  type: 'CALL_DONE';
  index: number;
  result: ToolCallOutcome;
}

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
  },
  delays: {
    callTimeout: ({ context }) => context.timeoutMs,
  },
  actions: {
    setResult: assign((_, result: ToolCallOutcome) => ({ result })),
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
  },
}).createMachine({
  id: 'toolCall',
  context: ({ input }) => ({ ...input, result: undefined }),
  initial: 'waiting',
  states: {
    waiting: {
      on: {
        START: 'validate',
        DEFER: {
          target: 'deferred',
          actions: { type: 'setResult', params: { ok: false, output: { deferred: true }, error: { code: 'deferred', message: 'deferred: a new user message arrived; see it before acting' }, synthetic: true } },
        },
        CANCEL: {
          target: 'cancelled',
          actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: { code: 'cancelled', message: event.message }, synthetic: true }) },
        },
        REUSE: { target: 'finished', actions: { type: 'setResult', params: ({ event }) => event.result } },
        ABORT: {
          target: 'failed',
          actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: { code: 'aborted', message: event.message }, synthetic: true }) },
        },
      },
    },
    validate: {
      always: [
        { guard: 'plannedValid', target: 'claim' },
        { target: 'failed', actions: { type: 'setResult', params: ({ context }) => ({ ok: false, error: context.invalid }) } },
      ],
    },
    // The claim was computed once, from the admitted arguments, when the batch was planned.
    claim: { always: 'running' },
    running: {
      on: {
        CANCEL: {
          target: 'cancelled',
          actions: { type: 'setResult', params: ({ event }) => ({ ok: false, error: { code: 'cancelled', message: event.message } }) },
        },
      },
      initial: 'approval',
      states: {
        approval: {
          initial: 'deciding',
          states: {
            deciding: { always: [{ guard: 'approvalNeeded', target: 'asking' }, { target: '#toolCall.running.execute' }] },
            asking: {
              invoke: {
                src: 'requestApproval',
                input: ({ context }) => ({ runId: context.runId, index: context.index }),
                onDone: [
                  { guard: { type: 'approved', params: ({ event }) => event.output }, target: '#toolCall.running.execute' },
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
    finished: { type: 'final', entry: 'report' },
    failed: { type: 'final', entry: 'report' },
    cancelled: { type: 'final', entry: 'report' },
    deferred: { type: 'final', entry: 'report' },
  },
});
