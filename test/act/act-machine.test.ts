/*
 * The Act statechart on its own (docs/claims.md, "Dispatch rules of the Act phase"): nextStep() as
 * a table of rules, then real batch actors whose tool calls the test settles — order of starts and
 * finishes, the checkpoint rules, CLOSE, and the fatal path (a tool-call actor that crashes), also
 * through the run machine, which ends the run failed with tool_fatal.
 */
import { describe, expect, it } from 'vitest';
import { assign, createActor, SimulatedClock } from 'xstate';
import { actMachine, nextStep } from '../../machines/act.machine.js';
import type { ActContext, ActInput, ActOutput, PlannedCall } from '../../machines/act.machine.js';
import { runMachine } from '../../machines/run.machine.js';
import type { RunOutcome } from '../../machines/run.machine.js';
import type { ToolCallOutcome } from '../../machines/tool-call.machine.js';
import { toolCallMachine } from '../../machines/tool-call.machine.js';
import { deferred, type Deferred } from '../support/deferred.js';
import { settle } from '../support/settle.js';

// ---------------------------------------------------------------------------------------------
// nextStep: the rules as a table

type Status = ActContext['status'][number];

function planned(index: number, deps: number[], checkpoint: boolean, extra: Partial<PlannedCall> = {}): PlannedCall {
  return {
    index,
    callId: `c${index}`,
    tool: 'probe',
    deps,
    checkpoint,
    timeoutMs: 60_000,
    needsApproval: false,
    ...extra,
  };
}

/** Groups mode: `groups` as sizes, e.g. [2, 1] = [0,2),[2,3). */
function groupsBatch(sizes: number[]): PlannedCall[] {
  const calls: PlannedCall[] = [];
  let previous: number[] = [];
  for (const size of sizes) {
    const group = Array.from({ length: size }, (_, k) => calls.length + k);
    for (const index of group) calls.push(planned(index, previous, index === group[0]));
    previous = group;
  }
  return calls;
}

function dagBatch(deps: number[][]): PlannedCall[] {
  return deps.map((d, index) => planned(index, d, true));
}

const ok = (output: unknown): ToolCallOutcome => ({ ok: true, output });

function context(calls: PlannedCall[], over: Partial<ActContext> & { status?: Status[] } = {}): ActContext {
  const status = over.status ?? calls.map((): Status => 'waiting');
  return {
    runId: 'r',
    turn: 0,
    calls,
    concurrency: 8,
    inOrder: true,
    steerPending: false,
    results: calls.map((_, i) => (status[i] === 'done' ? ok(`out${i}`) : undefined)),
    running: status.filter((s) => s === 'running').length,
    finished: status.filter((s) => s === 'done').length,
    firstWaiting: 0,
    fatal: undefined,
    ...over,
    status,
  };
}

const W: Status = 'waiting';
const R: Status = 'running';
const D: Status = 'done';
const fatal = { code: 'tool_fatal', message: 'crashed' };
const step = (
  start: number[] = [],
  reuse: { index: number; result: ToolCallOutcome }[] = [],
  close: { index: number; event: 'DEFER' | 'ABORT' }[] = [],
) => ({
  start,
  reuse,
  close,
});
const closeAll = (indices: number[], event: 'DEFER' | 'ABORT') =>
  step(
    [],
    [],
    indices.map((index) => ({ index, event })),
  );

const rules: [rule: string, ctx: ActContext, expected: ReturnType<typeof nextStep>][] = [
  ['an empty batch does nothing', context([]), step()],
  ['a group starts all its calls, in model order, up to the cap', context(groupsBatch([3])), step([0, 1, 2])],
  ['the cap bounds a group: cap 2 starts two of five', context(groupsBatch([5]), { concurrency: 2 }), step([0, 1])],
  [
    'a running call counts against the cap',
    context(groupsBatch([3]), { concurrency: 2, status: [R, W, W] }),
    step([1]),
  ],
  ['at the cap nothing starts', context(groupsBatch([3]), { concurrency: 2, status: [R, R, W] }), step()],
  [
    'the next group waits for every call of the previous one',
    context(groupsBatch([2, 1]), { status: [D, R, W] }),
    step(),
  ],
  [
    'the next group starts once the previous one is done',
    context(groupsBatch([2, 2]), { status: [D, D, W, W] }),
    step([2, 3]),
  ],
  [
    'groups mode never starts a call past one that is not ready',
    context([planned(0, [], true), planned(1, [0], true), planned(2, [], true)], { status: [R, W, W] }),
    step(),
  ],
  [
    'dag mode starts any ready call, past ones that wait',
    context(dagBatch([[], [0], []]), { inOrder: false, status: [R, W, W] }),
    step([2]),
  ],
  [
    'dag mode still honours the cap',
    context(dagBatch([[], [], [], []]), { inOrder: false, concurrency: 3, status: [R, W, W, W] }),
    step([1, 2]),
  ],
  [
    'dag mode starts a call whose conflicting predecessor is done',
    context(dagBatch([[], [0], [1]]), { inOrder: false, status: [D, W, W] }),
    step([1]),
  ],
  [
    'a pending steer defers every call not yet started at a checkpoint',
    context(groupsBatch([1, 2]), { steerPending: true, status: [D, W, W] }),
    closeAll([1, 2], 'DEFER'),
  ],
  [
    'a pending steer at the start of a batch defers all of it',
    context(groupsBatch([2, 1]), { steerPending: true }),
    closeAll([0, 1, 2], 'DEFER'),
  ],
  [
    'a pending steer waits for running calls before the checkpoint',
    context(groupsBatch([1, 1]), { steerPending: true, status: [R, W] }),
    step(),
  ],
  [
    'a pending steer does not stop a group that already began',
    context(groupsBatch([3]), { steerPending: true, concurrency: 1, status: [D, W, W] }),
    step([1]),
  ],
  [
    'dag mode checks the steer before every call',
    context(dagBatch([[], [], [0]]), { inOrder: false, steerPending: true, status: [R, W, W] }),
    closeAll([1, 2], 'DEFER'),
  ],
  [
    'a fatal error aborts every call not yet started at a checkpoint',
    context(groupsBatch([1, 2]), { fatal, status: [D, W, W] }),
    closeAll([1, 2], 'ABORT'),
  ],
  [
    'fatal wins over a pending steer',
    context(groupsBatch([1, 1]), { fatal, steerPending: true, status: [D, W] }),
    closeAll([1], 'ABORT'),
  ],
  [
    'a duplicate reuses its original’s result (synthetic) once the original is done; what follows waits for it to finish',
    context([planned(0, [], true), planned(1, [0], true, { duplicateOf: 0 }), planned(2, [1], true)], {
      concurrency: 1,
      status: [D, W, W],
    }),
    step([], [{ index: 1, result: { ok: true, output: 'out0', synthetic: true } }]),
  ],
  [
    'a duplicate whose original failed reuses the failure',
    context([planned(0, [], true), planned(1, [0], true, { duplicateOf: 0 })], {
      concurrency: 1,
      status: [D, W],
      results: [{ ok: false, error: { code: 'tool_error', message: 'boom' } }, undefined],
    }),
    step([], [{ index: 1, result: { ok: false, error: { code: 'tool_error', message: 'boom' }, synthetic: true } }]),
  ],
  [
    'a duplicate does not use a slot of the cap',
    context([planned(0, [], true), planned(1, [], true, { duplicateOf: 0 })], {
      concurrency: 1,
      status: [D, W],
      running: 1,
    }),
    step([], [{ index: 1, result: { ok: true, output: 'out0', synthetic: true } }]),
  ],
  ['running and done calls are left alone', context(groupsBatch([3]), { status: [D, R, D] }), step()],
  [
    'the search starts at the first call still waiting',
    context(groupsBatch([2, 2]), { status: [D, D, W, W], firstWaiting: 2 }),
    step([2, 3]),
  ],
];

describe('nextStep', () => {
  it.each(rules)('%s', (_rule, ctx, expected) => {
    expect(nextStep(ctx)).toEqual(expected);
  });

  it('is pure: it never changes the context it reads', () => {
    const ctx = context(groupsBatch([2, 2]), { status: [D, D, W, W] });
    const copy = structuredClone(ctx);
    nextStep(ctx);
    expect(ctx).toEqual(copy);
  });
});

// ---------------------------------------------------------------------------------------------
// The batch actor, with tool calls the test settles

interface Harness {
  actor: ReturnType<typeof createActor<typeof actMachine>>;
  log: string[];
  executions: Map<number, Deferred<unknown>>;
  signals: Map<number, AbortSignal>;
  finished: Map<number, ToolCallOutcome>;
}

/** A batch actor whose tool calls wait for the test; `crashAt` makes that call's actor crash. */
function batchActor(input: ActInput, crashAt: number[] = []): Harness {
  const log: string[] = [];
  const executions = new Map<number, Deferred<unknown>>();
  const signals = new Map<number, AbortSignal>();
  const controllers = new Map<number, AbortController>();
  const finished = new Map<number, ToolCallOutcome>();
  const machine = actMachine.provide({
    actions: {
      callStarted: (_, { index }) => log.push(`started ${index}`),
      callFinished: (_, { index, result }) => {
        finished.set(index, result);
        log.push(`finished ${index}`);
      },
    },
    actors: {
      toolCall: toolCallMachine.provide({
        actions: {
          announceStarted: (_, { index }) => log.push(`started ${index}`),
          // The test settles each execution; a call that leaves `execute` first aborts it.
          startExecution: ({ self }, call) => {
            const gate = deferred<unknown>();
            const controller = new AbortController();
            executions.set(call.index, gate);
            signals.set(call.index, controller.signal);
            controllers.set(call.index, controller);
            const settle = (
              event: { type: 'TOOL_DONE'; output: unknown } | { type: 'TOOL_FAILED'; error: unknown },
            ) => {
              controllers.delete(call.index);
              if (!controller.signal.aborted) self.send(event);
            };
            gate.promise.then(
              (output) => settle({ type: 'TOOL_DONE', output }),
              (error: unknown) => settle({ type: 'TOOL_FAILED', error }),
            );
          },
          abandonExecution: (_, call) => controllers.get(call.index)?.abort(),
          requestApproval: ({ self }) => self.send({ type: 'APPROVED' }),
        },
        guards: {
          // A dispatcher bug: the guard throws, so the tool-call actor crashes (errors) instead of reporting.
          plannedValid: ({ context }) => {
            if (crashAt.includes(context.index)) throw new Error(`call ${context.index} crashed`);
            return context.invalid === undefined;
          },
        },
      }),
    },
  });
  const actor = createActor(machine, { input, clock: new SimulatedClock() });
  actor.start();
  return { actor, log, executions, signals, finished };
}

const actInput = (calls: PlannedCall[], over: Partial<ActInput> = {}): ActInput => ({
  runId: 'r',
  turn: 0,
  calls,
  concurrency: 8,
  inOrder: true,
  steerPending: false,
  ...over,
});

describe('the batch actor', () => {
  it('starts in model order, reports in completion order and outputs results in input order', async () => {
    const h = batchActor(actInput(groupsBatch([3])));
    expect(h.log).toEqual(['started 0', 'started 1', 'started 2']);
    await settle();
    h.executions.get(2)!.resolve('two');
    await settle();
    h.executions.get(0)!.resolve('zero');
    await settle();
    h.executions.get(1)!.resolve('one');
    await settle();
    expect(h.log.slice(3)).toEqual(['finished 2', 'finished 0', 'finished 1']);
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.actor.getSnapshot().output).toEqual({ results: [ok('zero'), ok('one'), ok('two')] } satisfies ActOutput);
  });

  it('keeps at most `concurrency` calls running inside a group', async () => {
    const h = batchActor(actInput(groupsBatch([5]), { concurrency: 2 }));
    await settle();
    for (let k = 0; k < 5; k++) {
      const runningNow = [...h.executions.keys()].filter((i) => !h.finished.has(i));
      expect(runningNow.length).toBeLessThanOrEqual(2);
      h.executions.get(runningNow[0]!)!.resolve(k);
      await settle();
    }
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.log.filter((l) => l.startsWith('started'))).toEqual([
      'started 0',
      'started 1',
      'started 2',
      'started 3',
      'started 4',
    ]);
  });

  it('a steer defers the calls not yet started; running calls finish normally', async () => {
    const h = batchActor(actInput(groupsBatch([2, 2])));
    await settle();
    h.actor.send({ type: 'STEER_PENDING' });
    h.executions.get(0)!.resolve('a');
    h.executions.get(1)!.resolve('b');
    await settle();
    const output = h.actor.getSnapshot().output!;
    expect(output.results.slice(0, 2)).toEqual([ok('a'), ok('b')]);
    for (const result of output.results.slice(2)) {
      expect(result).toMatchObject({
        ok: false,
        output: { deferred: true },
        error: { code: 'deferred' },
        synthetic: true,
      });
    }
    expect(h.executions.has(2)).toBe(false);
  });

  it('CLOSE ends every open call at once: running ones are cancelled, waiting ones never start', async () => {
    const h = batchActor(actInput(groupsBatch([1, 2])));
    await settle();
    h.actor.send({ type: 'CLOSE', code: 'cancelled', message: 'run cancelled (stop)' });
    expect(h.signals.get(0)?.aborted).toBe(true);
    const output = h.actor.getSnapshot().output!;
    expect(output.results).toEqual([
      { ok: false, error: { code: 'cancelled', message: 'run cancelled (stop) during this call' }, synthetic: true },
      {
        ok: false,
        error: { code: 'cancelled', message: 'run cancelled (stop) before this call started' },
        synthetic: true,
      },
      {
        ok: false,
        error: { code: 'cancelled', message: 'run cancelled (stop) before this call started' },
        synthetic: true,
      },
    ]);
    expect(h.log).toEqual(['started 0', 'finished 0', 'finished 1', 'finished 2']);
  });

  it('a crashed tool-call actor is fatal: the rest of the batch is aborted and the output carries tool_fatal', async () => {
    const h = batchActor(actInput(groupsBatch([2, 2])), [1]);
    await settle();
    // Call 1 crashed before it held its claim, so it never announced its start; it still gets its result.
    expect(h.log).toEqual(['started 0', 'finished 1']);
    // The group's other call finishes normally; the next group is aborted, not started.
    h.executions.get(0)!.resolve('a');
    await settle();
    const snapshot = h.actor.getSnapshot();
    expect(snapshot.status).toBe('done');
    const output = snapshot.output!;
    expect(output.fatal).toMatchObject({ code: 'tool_fatal', message: expect.stringContaining('call 1 crashed') });
    expect(output.results[0]).toEqual(ok('a'));
    expect(output.results[1]).toMatchObject({ ok: false, error: { code: 'tool_fatal' } });
    for (const result of output.results.slice(2)) {
      expect(result).toMatchObject({
        ok: false,
        error: { code: 'aborted', message: expect.stringContaining('failed fatally') },
        synthetic: true,
      });
    }
    expect(h.executions.has(2)).toBe(false);
    expect(h.executions.has(3)).toBe(false);
  });

  it('a crash of the only call still ends the batch', async () => {
    const h = batchActor(actInput(groupsBatch([1])), [0]);
    await settle();
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.actor.getSnapshot().output).toMatchObject({
      results: [{ ok: false, error: { code: 'tool_fatal' } }],
      fatal: { code: 'tool_fatal' },
    });
  });

  it('dag mode: a crash aborts every call not yet started at the next checkpoint', async () => {
    const h = batchActor(actInput(dagBatch([[], [], [0]]), { inOrder: false }), [1]);
    await settle();
    h.executions.get(0)!.resolve('a');
    await settle();
    const output = h.actor.getSnapshot().output!;
    expect(output.fatal?.code).toBe('tool_fatal');
    expect(output.results.map((r) => r.error?.code ?? 'ok')).toEqual(['ok', 'tool_fatal', 'aborted']);
  });
});

describe('the fatal path through the run machine', () => {
  it('ends the run failed with tool_fatal and hands every call a result', async () => {
    const batch = actInput(groupsBatch([1, 2]));
    const recorded: ActOutput[] = [];
    const outcomes: (RunOutcome | undefined)[] = [];
    const crashing = batchActor(batch, [0]);
    crashing.actor.stop();
    const machine = runMachine.provide({
      actions: {
        requestPermits: ({ self }) => self.send({ type: 'GRANTED' }),
        requestReply: ({ self }) => {
          const reply = { text: '', toolCalls: batch.calls.map((c) => ({ id: c.callId, name: c.tool, args: {} })) };
          void Promise.resolve().then(() => self.send({ type: 'MODEL_REPLY', reply }));
        },
        planBatch: assign({ batch }),
        recordToolResults: (_, output) => {
          recorded.push(output);
        },
        appendTerminalEvent: (_, { outcome }) => {
          outcomes.push(outcome);
        },
      },
      actors: {
        act: crashing.actor.logic,
      },
    });
    const run = createActor(machine, {
      input: { runId: 'r', sessionId: 's', agentId: 'main', timeoutMs: 60_000, maxIterations: 4 },
      clock: new SimulatedClock(),
    });
    run.start();
    await settle();
    expect(run.getSnapshot().value).toBe('failed');
    expect(outcomes).toEqual([{ state: 'failed', error: expect.objectContaining({ code: 'tool_fatal' }) }]);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]!.results.map((r) => r.error?.code)).toEqual(['tool_fatal', 'aborted', 'aborted']);
  });
});
