/*
 * One run: queued (waiting for limiter permits) -> running { thinking -> acting -> boundary }
 * -> exactly one of completed | cancelled | failed. Every way out of `live` passes through
 * its exit actions, in this order: append the terminal event, hand unconsumed steers back,
 * release the session slot, release the permits — so no path leaves a session busy or a
 * permit held, and a successor never starts before its predecessor's terminal event.
 * A run that must start by a time and is still queued then fails `deadline_unmeetable`; a
 * steer with a deadline that is still unread then escalates: it cancels the run (and runs
 * next, as the follow-up of the unread steers) or leaves it for the lane.
 * Pure: time comes from the actor clock (the deadlines are delays), effects are named
 * actions and actors that src/ provides.
 */
import { assign, cancel, enqueueActions, sendTo, setup } from 'xstate';
import { actMachine, type ActInput, type ActOutput } from './act.machine.js';
import { errorOf, type CodedError } from './vocabulary.js';

export interface ToolCallRequest {
  id: string;
  name: string;
  args: unknown;
}

export interface ModelReply {
  text: string;
  toolCalls: ToolCallRequest[];
}

export type SteerEscalation = 'interrupt' | 'queue';

export interface PendingSteer {
  steerId: string;
  text: string;
  /** How long it may wait for a turn boundary, from its delivery; none: as long as the run takes. */
  deadlineMs?: number;
  /** What happens when the deadline passes first (default interrupt). */
  escalation?: SteerEscalation;
}

export type RunOutcome =
  | { state: 'completed'; output: string }
  | { state: 'cancelled'; reason: string }
  | { state: 'failed'; error: CodedError };

export interface RunInput {
  runId: string;
  sessionId: string;
  agentId: string;
  timeoutMs: number;
  maxIterations: number;
  /** The run must leave `queued` within this many ms (its startBy), or it fails `deadline_unmeetable`. */
  startWithinMs?: number;
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

export type RunChartEvent =
  | { type: 'GRANTED' }
  | { type: 'STEER'; steer: PendingSteer }
  | { type: 'CANCEL'; reason: string }
  /** Raised by the run itself when a steer's deadline passes. */
  | { type: 'STEER_DUE'; steerId: string }
  /** Raised by the run itself when its start deadline passes. */
  | { type: 'START_DUE' }
  /** The model's answer to the turn `requestReply` asked for. */
  | { type: 'MODEL_REPLY'; reply: ModelReply }
  /** The turn `requestReply` asked for failed. */
  | { type: 'MODEL_FAILED'; error: unknown };

export interface ModelTurnInput {
  runId: string;
  turn: number;
}

function steerOf(context: RunContext, steerId: string): PendingSteer {
  return context.pendingSteers.find((s) => s.steerId === steerId)!;
}

const steerTimerId = (steerId: string) => `steer:${steerId}`;
const START_TIMER_ID = 'startBy';

/** Why a batch is closed early: the run was cancelled or its deadline expired. */
function closeReasonOf(event: { type: string; reason?: unknown }): CodedError {
  if (event.type === 'CANCEL') return { code: 'cancelled', message: `run cancelled (${String(event.reason)})` };
  if (event.type === 'STEER_DUE') return { code: 'cancelled', message: 'run cancelled (steer_escalated)' };
  if (event.type.startsWith('xstate.after.')) return { code: 'timeout', message: 'run deadline expired' };
  return { code: 'aborted', message: 'batch closed' };
}

const runSetup = setup({
  types: {
    context: {} as RunContext,
    events: {} as RunChartEvent,
    input: {} as RunInput,
  },
  actors: {
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
    /**
     * Asks the model for the turn's reply; the answer comes back as MODEL_REPLY or MODEL_FAILED.
     * An event rather than an invoked promise actor: a turn is the hot path, and an actor per
     * turn cost more than the rest of the turn's bookkeeping (bench/admission.bench.ts).
     */
    requestReply: (_, _params: ModelTurnInput) => {},
    /** The turn is over (answered, cancelled or out of time): a reply still on its way is dropped. */
    abandonReply: (_, _params: ModelTurnInput) => {},
    finishTurn: (_, _params: { turn: number }) => {},
    /** Plans the batch of the last reply (validation, claims, groups) into context.batch. */
    planBatch: () => {},
    announceSchedule: () => {},
    recordToolResults: (_, _params: ActOutput) => {},
    closeBatch: (_, _params: CodedError) => {},
    appendTerminalEvent: (_, _params: { outcome: RunOutcome | undefined; turns: number; toolCalls: number }) => {},
    handOverSteers: (_, _params: { steers: PendingSteer[]; outcome: RunOutcome | undefined }) => {},
    /** A steer's deadline passed unread: announce it; for `queue`, also move the steer to the lane. */
    escalateSteer: (_, _params: { steer: PendingSteer; to: SteerEscalation }) => {},
    releaseSlot: () => {},
    releasePermits: () => {},
    // Pure bookkeeping.
    addSteer: assign({
      pendingSteers: ({ context, event }) =>
        event.type === 'STEER' ? [...context.pendingSteers, event.steer] : context.pendingSteers,
    }),
    clearSteers: assign({ pendingSteers: [] }),
    dropSteer: assign({
      pendingSteers: ({ context, event }) =>
        context.pendingSteers.filter((s) => event.type !== 'STEER_DUE' || s.steerId !== event.steerId),
    }),
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
    modelIsDone: ({ context }) =>
      (context.lastReply?.toolCalls.length ?? 0) === 0 && context.pendingSteers.length === 0,
    iterationCapReached: ({ context }) => context.turn >= context.maxIterations,
    outcomeIs: ({ context }, state: RunOutcome['state']) => context.outcome?.state === state,
    batchFailedFatally: (_, output: ActOutput) => output.fatal !== undefined,
    steerDueTo: ({ context, event }, to: SteerEscalation) => {
      if (event.type !== 'STEER_DUE') return false;
      const steer = context.pendingSteers.find((s) => s.steerId === event.steerId);
      return steer !== undefined && (steer.escalation ?? 'interrupt') === to;
    },
  },
});

/** Effects and bookkeeping above; the timers of the deadlines below, so the chart can name them. */
const startSteerDeadline = runSetup.createAction(
  enqueueActions(({ event, enqueue }) => {
    if (event.type !== 'STEER' || event.steer.deadlineMs === undefined) return;
    enqueue.raise(
      { type: 'STEER_DUE', steerId: event.steer.steerId },
      { delay: event.steer.deadlineMs, id: steerTimerId(event.steer.steerId) },
    );
  }),
);

/** The steers are read now: their deadlines no longer matter. */
const cancelSteerDeadlines = runSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const steer of context.pendingSteers)
      if (steer.deadlineMs !== undefined) enqueue.cancel(steerTimerId(steer.steerId));
  }),
);

const startStartDeadline = runSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    if (context.startWithinMs !== undefined)
      enqueue.raise({ type: 'START_DUE' }, { delay: context.startWithinMs, id: START_TIMER_ID });
  }),
);

export const runMachine = runSetup.createMachine({
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
          params: ({ context }) => ({
            outcome: context.outcome,
            turns: context.turn,
            toolCalls: context.toolCallCount,
          }),
        },
        {
          type: 'handOverSteers',
          params: ({ context }) => ({ steers: context.pendingSteers, outcome: context.outcome }),
        },
        'releaseSlot',
        'releasePermits',
      ],
      on: {
        STEER: { actions: ['addSteer', startSteerDeadline] },
        CANCEL: {
          target: '.ending',
          actions: {
            type: 'setOutcome',
            params: ({ event }) => ({ state: 'cancelled' as const, reason: event.reason }),
          },
        },
        STEER_DUE: [
          {
            guard: { type: 'steerDueTo', params: 'interrupt' },
            target: '.ending',
            actions: [
              {
                type: 'escalateSteer',
                params: ({ context, event }) => ({ steer: steerOf(context, event.steerId), to: 'interrupt' as const }),
              },
              { type: 'setOutcome', params: { state: 'cancelled' as const, reason: 'steer_escalated' } },
            ],
          },
          {
            guard: { type: 'steerDueTo', params: 'queue' },
            actions: [
              {
                type: 'escalateSteer',
                params: ({ context, event }) => ({ steer: steerOf(context, event.steerId), to: 'queue' as const }),
              },
              'dropSteer',
            ],
          },
        ],
      },
      states: {
        queued: {
          entry: ['requestPermits', startStartDeadline],
          exit: cancel(START_TIMER_ID),
          on: {
            GRANTED: 'running',
            START_DUE: {
              target: 'ending',
              actions: {
                type: 'setOutcome',
                params: {
                  state: 'failed' as const,
                  error: {
                    code: 'deadline_unmeetable',
                    message: 'the run could not start by its startBy time (no permit came free in time); it never ran',
                  },
                },
              },
            },
          },
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
                {
                  type: 'consumeSteers',
                  params: ({ context }) => ({ steers: context.pendingSteers, turn: context.turn }),
                },
                cancelSteerDeadlines,
                'clearSteers',
                { type: 'startTurn', params: ({ context }) => ({ turn: context.turn }) },
                { type: 'requestReply', params: ({ context }) => ({ runId: context.runId, turn: context.turn }) },
              ],
              exit: { type: 'abandonReply', params: ({ context }) => ({ runId: context.runId, turn: context.turn }) },
              on: {
                MODEL_REPLY: [
                  {
                    guard: { type: 'replyHasToolCalls', params: ({ event }) => event.reply },
                    target: 'acting',
                    actions: { type: 'recordReply', params: ({ event }) => event.reply },
                  },
                  { target: 'boundary', actions: { type: 'recordReply', params: ({ event }) => event.reply } },
                ],
                MODEL_FAILED: {
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
              on: { STEER: { actions: ['addSteer', startSteerDeadline, 'tellBatchOfSteer'] } },
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
                      error: {
                        code: 'max_iterations',
                        message: `run reached its cap of ${context.maxIterations} model turns`,
                      },
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
