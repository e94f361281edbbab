/*
 * One run: queued (waiting for limiter permits) -> running { thinking -> acting -> boundary }
 * -> exactly one of completed | cancelled | failed. Every way out of `live` passes through
 * its exit actions, in this order: append the terminal event, hand unconsumed steers back,
 * release the session slot, release the permits — so no path leaves a session busy or a
 * permit held, and a successor never starts before its predecessor's terminal event.
 * Pure: time comes from the actor clock (the deadline is a named delay), effects are named
 * actions and actors that src/ provides.
 */
import { assign, fromPromise, sendTo, setup } from 'xstate';
import { actMachine, type ActInput, type ActOutput } from './act.machine.js';

export interface ToolCallRequest {
  id: string;
  name: string;
  args: unknown;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCallRequest[];
}

export interface PendingSteer {
  steerId: string;
  text: string;
}

export type RunOutcome =
  | { state: 'completed'; output: string }
  | { state: 'cancelled'; reason: string }
  | { state: 'failed'; error: { code: string; message: string } };

export interface RunInput {
  runId: string;
  sessionId: string;
  agentId: string;
  timeoutMs: number;
  maxIterations: number;
}

export interface RunContext extends RunInput {
  /** Index of the current (or next) model turn, from 0. */
  turn: number;
  pendingSteers: PendingSteer[];
  lastReply: ModelReply | undefined;
  toolCallCount: number;
  /** The current tool batch, planned on entering `acting`. */
  batch: ActInput | undefined;
  outcome: RunOutcome | undefined;
}

export type RunEvent =
  | { type: 'GRANTED' }
  | { type: 'STEER'; steer: PendingSteer }
  | { type: 'CANCEL'; reason: string };

export interface ModelTurnInput {
  runId: string;
  turn: number;
}

/** Why a batch is closed early: the run was cancelled or its deadline expired. */
export interface BatchCloseReason {
  code: string;
  message: string;
}

const notProvided = (name: string) => () => Promise.reject(new Error(`run machine: actor ${name} was not provided`));

function errorOf(error: unknown, code: string): { code: string; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  const ownCode = (error as { code?: unknown } | null)?.code;
  return { code: typeof ownCode === 'string' ? ownCode : code, message };
}

function closeReasonOf(event: { type: string; reason?: unknown }): BatchCloseReason {
  if (event.type === 'CANCEL') return { code: 'cancelled', message: `run cancelled (${String(event.reason)})` };
  if (event.type.startsWith('xstate.after.')) return { code: 'timeout', message: 'run deadline expired' };
  return { code: 'aborted', message: 'batch closed' };
}

export const runMachine = setup({
  types: {
    context: {} as RunContext,
    events: {} as RunEvent,
    input: {} as RunInput,
  },
  actors: {
    modelTurn: fromPromise<ModelReply, ModelTurnInput>(notProvided('modelTurn')),
    act: actMachine,
  },
  delays: {
    runDeadline: ({ context }) => context.timeoutMs,
  },
  actions: {
    // Effects, provided by the engine.
    requestPermits: () => {},
    announceStarted: () => {},
    consumeSteers: (_, _params: { steers: PendingSteer[]; turn: number }) => {},
    startTurn: (_, _params: { turn: number }) => {},
    finishTurn: (_, _params: { turn: number }) => {},
    /** Plans the batch of the last reply (validation, claims, groups) into context.batch. */
    planBatch: () => {},
    announceSchedule: () => {},
    recordToolResults: (_, _params: ActOutput) => {},
    closeBatch: (_, _params: BatchCloseReason) => {},
    appendTerminalEvent: (_, _params: { outcome: RunOutcome | undefined; turns: number; toolCalls: number }) => {},
    handOverSteers: (_, _params: { steers: PendingSteer[]; outcome: RunOutcome | undefined }) => {},
    releaseSlot: () => {},
    releasePermits: () => {},
    // Pure bookkeeping.
    addSteer: assign({
      pendingSteers: ({ context, event }) => (event.type === 'STEER' ? [...context.pendingSteers, event.steer] : context.pendingSteers),
    }),
    clearSteers: assign({ pendingSteers: [] }),
    recordReply: assign(({ context }, reply: ModelReply) => ({
      lastReply: reply,
      toolCallCount: context.toolCallCount + reply.toolCalls.length,
    })),
    nextTurn: assign({ turn: ({ context }) => context.turn + 1 }),
    setOutcome: assign((_, outcome: RunOutcome) => ({ outcome })),
    tellBatchOfSteer: sendTo('act', { type: 'STEER_PENDING' }),
  },
  guards: {
    replyHasToolCalls: (_, reply: ModelReply) => reply.toolCalls.length > 0,
    modelIsDone: ({ context }) => (context.lastReply?.toolCalls.length ?? 0) === 0 && context.pendingSteers.length === 0,
    iterationCapReached: ({ context }) => context.turn >= context.maxIterations,
    outcomeIs: ({ context }, state: RunOutcome['state']) => context.outcome?.state === state,
    batchFailedFatally: (_, output: ActOutput) => output.fatal !== undefined,
  },
}).createMachine({
  id: 'run',
  context: ({ input }) => ({
    ...input,
    turn: 0,
    pendingSteers: [],
    lastReply: undefined,
    toolCallCount: 0,
    batch: undefined,
    outcome: undefined,
  }),
  initial: 'live',
  states: {
    live: {
      initial: 'queued',
      exit: [
        {
          type: 'appendTerminalEvent',
          params: ({ context }) => ({ outcome: context.outcome, turns: context.turn, toolCalls: context.toolCallCount }),
        },
        { type: 'handOverSteers', params: ({ context }) => ({ steers: context.pendingSteers, outcome: context.outcome }) },
        'releaseSlot',
        'releasePermits',
      ],
      on: {
        STEER: { actions: 'addSteer' },
        CANCEL: {
          target: '.ending',
          actions: { type: 'setOutcome', params: ({ event }) => ({ state: 'cancelled' as const, reason: event.reason }) },
        },
      },
      states: {
        queued: {
          entry: 'requestPermits',
          on: { GRANTED: 'running' },
        },
        running: {
          entry: 'announceStarted',
          after: {
            runDeadline: {
              target: 'ending',
              actions: {
                type: 'setOutcome',
                params: ({ context }) => ({
                  state: 'failed' as const,
                  error: { code: 'timeout', message: `run exceeded its deadline of ${context.timeoutMs} ms` },
                }),
              },
            },
          },
          initial: 'thinking',
          states: {
            thinking: {
              entry: [
                { type: 'consumeSteers', params: ({ context }) => ({ steers: context.pendingSteers, turn: context.turn }) },
                'clearSteers',
                { type: 'startTurn', params: ({ context }) => ({ turn: context.turn }) },
              ],
              invoke: {
                src: 'modelTurn',
                input: ({ context }) => ({ runId: context.runId, turn: context.turn }),
                onDone: [
                  {
                    guard: { type: 'replyHasToolCalls', params: ({ event }) => event.output },
                    target: 'acting',
                    actions: { type: 'recordReply', params: ({ event }) => event.output },
                  },
                  { target: 'boundary', actions: { type: 'recordReply', params: ({ event }) => event.output } },
                ],
                onError: {
                  target: '#run.live.ending',
                  actions: {
                    type: 'setOutcome',
                    params: ({ event }) => ({ state: 'failed' as const, error: errorOf(event.error, 'model_error') }),
                  },
                },
              },
            },
            acting: {
              entry: ['planBatch', 'announceSchedule'],
              exit: { type: 'closeBatch', params: ({ event }) => closeReasonOf(event) },
              on: { STEER: { actions: ['addSteer', 'tellBatchOfSteer'] } },
              invoke: {
                id: 'act',
                src: 'act',
                input: ({ context }) => context.batch!,
                onDone: [
                  {
                    guard: { type: 'batchFailedFatally', params: ({ event }) => event.output },
                    target: '#run.live.ending',
                    actions: [
                      { type: 'recordToolResults', params: ({ event }) => event.output },
                      {
                        type: 'setOutcome',
                        params: ({ event }) => ({ state: 'failed' as const, error: event.output.fatal! }),
                      },
                    ],
                  },
                  { target: 'boundary', actions: { type: 'recordToolResults', params: ({ event }) => event.output } },
                ],
                onError: {
                  target: '#run.live.ending',
                  actions: {
                    type: 'setOutcome',
                    params: ({ event }) => ({ state: 'failed' as const, error: errorOf(event.error, 'internal') }),
                  },
                },
              },
            },
            boundary: {
              entry: [{ type: 'finishTurn', params: ({ context }) => ({ turn: context.turn }) }, 'nextTurn'],
              always: [
                {
                  guard: 'modelIsDone',
                  target: '#run.live.ending',
                  actions: {
                    type: 'setOutcome',
                    params: ({ context }) => ({ state: 'completed' as const, output: context.lastReply?.text ?? '' }),
                  },
                },
                {
                  guard: 'iterationCapReached',
                  target: '#run.live.ending',
                  actions: {
                    type: 'setOutcome',
                    params: ({ context }) => ({
                      state: 'failed' as const,
                      error: { code: 'max_iterations', message: `run reached its cap of ${context.maxIterations} model turns` },
                    }),
                  },
                },
                { target: 'thinking' },
              ],
            },
          },
        },
        ending: { type: 'final' },
      },
      onDone: [
        { guard: { type: 'outcomeIs', params: 'completed' }, target: 'completed' },
        { guard: { type: 'outcomeIs', params: 'cancelled' }, target: 'cancelled' },
        { target: 'failed' },
      ],
    },
    completed: { type: 'final' },
    cancelled: { type: 'final' },
    failed: { type: 'final' },
  },
});
