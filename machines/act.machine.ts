/*
 * The Act phase: one batch of tool calls. A call becomes a tool-call actor when the batch
 * gets to it; the batch starts calls as their dependencies finish, at most `concurrency` at
 * once. In groups mode a call depends on every call of the earlier groups and calls start
 * strictly in model order; in dag mode a call depends only on the earlier calls it conflicts
 * with. Before a checkpoint call starts (a group's first call; every call in dag mode): a
 * pending steer defers every call not yet started, a fatal error aborts them. A started call
 * may still wait for a claim another run holds; the call itself announces that and its start
 * once it holds it. CLOSE (the run was cancelled or timed out) ends every
 * open call at once. Pure.
 */
import { assign, enqueueActions, setup } from 'xstate';
import type { CallDoneEvent, ToolCallBegin, ToolCallInput, ToolCallOutcome } from './tool-call.machine.js';
import { toolCallMachine } from './tool-call.machine.js';
import type { CodedError } from './vocabulary.js';

export interface PlannedCall {
  index: number;
  callId: string;
  tool: string;
  /** Earlier calls that must finish before this one starts. */
  deps: number[];
  /** Steer and fatal checks happen before this call starts. */
  checkpoint: boolean;
  /** A repeat of an identical earlier call: it gets that call's result without executing. */
  duplicateOf?: number;
  invalid?: CodedError;
  timeoutMs: number;
  needsApproval: boolean;
}

export interface ActInput {
  runId: string;
  turn: number;
  calls: PlannedCall[];
  concurrency: number;
  /** Groups mode: never start a call before an earlier one. */
  inOrder: boolean;
  steerPending: boolean;
}

type CallStatus = 'waiting' | 'running' | 'done';

export interface ActContext extends ActInput {
  status: CallStatus[];
  results: (ToolCallOutcome | undefined)[];
  running: number;
  /** Calls done so far: the batch is over when all are. */
  finished: number;
  /** Every call before this index has started: where the search for the next one begins. */
  firstWaiting: number;
  fatal: CodedError | undefined;
}

export interface ActOutput {
  results: ToolCallOutcome[];
  fatal?: CodedError;
}

export type ActEvent =
  | CallDoneEvent
  | { type: 'STEER_PENDING' }
  | ({ type: 'CLOSE' } & CodedError)
  | { type: 'xstate.error.actor.*'; error: unknown };

const childId = (index: number) => `call-${index}`;

interface Step {
  start: number[];
  reuse: { index: number; result: ToolCallOutcome }[];
  close: { index: number; event: 'DEFER' | 'ABORT' }[];
}

/** What to do next, given the batch's state: pure, so the rules read in one place. */
export function nextStep(ctx: ActContext): Step {
  const step: Step = { start: [], reuse: [], close: [] };
  let running = ctx.running;
  // A repeat reused in this very step has not finished yet: what depends on it waits for its CALL_DONE.
  const done = (i: number) => ctx.status[i] === 'done';
  for (let i = ctx.firstWaiting; i < ctx.calls.length; i++) {
    const call = ctx.calls[i]!;
    if (ctx.status[call.index] !== 'waiting') continue;
    const ready = call.deps.every(done);
    if (!ready) {
      if (ctx.inOrder) break;
      continue;
    }
    if (call.checkpoint && (ctx.steerPending || ctx.fatal)) {
      const event = ctx.fatal ? 'ABORT' : 'DEFER';
      for (let j = i; j < ctx.calls.length; j++) if (ctx.status[j] === 'waiting') step.close.push({ index: j, event });
      return step;
    }
    if (call.duplicateOf !== undefined) {
      const original = ctx.results[call.duplicateOf];
      if (original) step.reuse.push({ index: call.index, result: { ...original, synthetic: true } });
      continue;
    }
    if (running >= ctx.concurrency) break;
    step.start.push(call.index);
    running += 1;
  }
  return step;
}

/** Effects and simple bookkeeping first, so the batch actions below can name them. */
const actSetup = setup({
  types: {
    context: {} as ActContext,
    events: {} as ActEvent,
    input: {} as ActInput,
    output: {} as ActOutput,
  },
  actors: {
    toolCall: toolCallMachine,
  },
  actions: {
    // Effects, provided by the engine.
    /** A repeat's start (it gets its original's result): the calls that run announce their own. */
    callStarted: (_, _params: { index: number }) => {},
    callFinished: (_, _params: { index: number; result: ToolCallOutcome }) => {},
    // Pure.
    markSteerPending: assign({ steerPending: true }),
    markFatal: assign({
      fatal: ({ event }) => ({
        code: 'tool_fatal',
        message: `a tool call crashed the dispatcher: ${String((event as { error?: unknown }).error)}`,
      }),
    }),
  },
  guards: {
    allDone: ({ context }) => context.finished === context.calls.length,
  },
});

/** The input of a call's actor; it is spawned when the batch gets to it, not before, told what to do. */
function callInput(runId: string, call: PlannedCall, begin: ToolCallBegin): ToolCallInput {
  return {
    begin,
    runId,
    index: call.index,
    callId: call.callId,
    tool: call.tool,
    timeoutMs: call.timeoutMs,
    needsApproval: call.needsApproval,
    ...(call.invalid ? { invalid: call.invalid } : {}),
  };
}

/** The bookkeeping an event changes; `advance` applies it together with the next step, in one assign. */
type Tally = Pick<ActContext, 'status' | 'results' | 'running' | 'finished'>;

/** The batch as a finished call leaves it (status and results copied once, for this event). */
function withDone(context: ActContext, index: number, result: ToolCallOutcome): Tally {
  const status = [...context.status];
  const results = [...context.results];
  status[index] = 'done';
  results[index] = result;
  return { status, results, running: Math.max(0, context.running - 1), finished: context.finished + 1 };
}

/** The call whose actor crashed (it never reports), unless it already has its result. */
function crashedCall(context: ActContext, eventType: string): number | undefined {
  const prefix = 'xstate.error.actor.';
  if (!eventType.startsWith(prefix) || !context.fatal) return undefined;
  const crashed = context.calls.find((call) => eventType === `${prefix}${childId(call.index)}`);
  return crashed && context.status[crashed.index] !== 'done' ? crashed.index : undefined;
}

/**
 * The batch moves on: a reported call (CALL_DONE) or a crashed one is recorded, then what
 * nextStep says is started, reused or closed; the bookkeeping goes in one assign per event.
 */
const advance = actSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    let tally: Tally = context;
    if (event.type === 'CALL_DONE') {
      if (context.status[event.index] === 'done') return;
      tally = withDone(context, event.index, event.result);
      enqueue({ type: 'callFinished', params: { index: event.index, result: event.result } });
      // A finished call leaves the batch's children at once: the set stays as small as the cap.
      enqueue.stopChild(childId(event.index));
    } else {
      // A crashed tool-call actor never reports: its call ends here with the fatal error, so the batch can finish.
      const crashed = crashedCall(context, event.type);
      if (crashed !== undefined) {
        const result: ToolCallOutcome = { ok: false, error: context.fatal! };
        tally = withDone(context, crashed, result);
        enqueue({ type: 'callFinished', params: { index: crashed, result } });
      }
    }
    const step = nextStep({ ...context, ...tally });
    const moved = step.start.length + step.reuse.length + step.close.length;
    if (moved === 0) {
      if (tally !== context) enqueue.assign(tally);
      return;
    }
    const status = tally === context ? [...context.status] : tally.status;
    const spawn = (index: number, begin: ToolCallBegin) => {
      status[index] = 'running';
      enqueue.spawnChild('toolCall', {
        id: childId(index),
        input: callInput(context.runId, context.calls[index]!, begin),
      });
    };
    // A started call announces itself once it holds its claim.
    for (const index of step.start) spawn(index, { type: 'START' });
    for (const { index, result } of step.reuse) {
      spawn(index, { type: 'REUSE', result });
      enqueue({ type: 'callStarted', params: { index } });
    }
    for (const { index, event: close } of step.close) {
      spawn(
        index,
        close === 'ABORT'
          ? { type: 'ABORT', message: 'aborted: an earlier call of this batch failed fatally' }
          : { type: 'DEFER' },
      );
    }
    let firstWaiting = context.firstWaiting;
    while (firstWaiting < status.length && status[firstWaiting] !== 'waiting') firstWaiting += 1;
    enqueue.assign({ ...tally, status, running: tally.running + moved, firstWaiting });
  }),
);

/** The run ends mid-batch: every open call gets its synthetic result now, running ones are cancelled. */
const closeOpenCalls = actSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (event.type !== 'CLOSE') return;
    const status = [...context.status];
    const results = [...context.results];
    for (const call of context.calls) {
      if (status[call.index] === 'done') continue;
      const started = status[call.index] === 'running';
      const message = started ? `${event.message} during this call` : `${event.message} before this call started`;
      const result: ToolCallOutcome = { ok: false, error: { code: event.code, message }, synthetic: true };
      status[call.index] = 'done';
      results[call.index] = result;
      enqueue({ type: 'callFinished', params: { index: call.index, result } });
      if (started) enqueue.sendTo(childId(call.index), { type: 'CANCEL', message });
    }
    enqueue.assign({ status, results, running: 0, finished: context.calls.length, firstWaiting: context.calls.length });
  }),
);

export const actMachine = actSetup.createMachine({
  id: 'act',
  context: ({ input }) => ({
    ...input,
    status: input.calls.map((): CallStatus => 'waiting'),
    results: input.calls.map(() => undefined),
    running: 0,
    finished: 0,
    firstWaiting: 0,
    fatal: undefined,
  }),
  initial: 'dispatching',
  states: {
    dispatching: {
      entry: advance,
      always: { guard: 'allDone', target: 'done' },
      on: {
        CALL_DONE: { actions: advance },
        STEER_PENDING: { actions: ['markSteerPending', advance] },
        'xstate.error.actor.*': { actions: ['markFatal', advance] },
        CLOSE: { target: 'done', actions: closeOpenCalls },
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => ({
    results: context.results.map((r) => r ?? { ok: false, error: { code: 'internal', message: 'no result' } }),
    ...(context.fatal ? { fatal: context.fatal } : {}),
  }),
});
