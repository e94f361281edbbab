/*
 * The run statechart (docs/runs.md, "The states of a run", "Deadlines and cancellation") as a
 * model: every path xstate/graph finds is replayed on a real actor with recording effects, and
 * every path that ends checks the release-by-construction contract. Explicit tests below pin the
 * rules a path walk cannot name (deadline, cap, steers, steer and start deadlines).
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock } from 'xstate';
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import type { StatePath } from 'xstate/graph';
import { runMachine } from '../../machines/run.machine.js';
import type { ActInput, ActOutput, actMachine } from '../../machines/act.machine.js';
import type {
  ModelReply,
  ModelTurnInput,
  PendingSteer,
  RunChartEvent,
  RunInput,
  RunOutcome,
} from '../../machines/run.machine.js';

const input: RunInput = { runId: 'r1', sessionId: 's1', agentId: 'main', timeoutMs: 60_000, maxIterations: 2 };

// Read from the definition, never guessed: XState names invocations and delayed events itself.
const actingId = runMachine.getStateNodeById('run.live.running.acting').invoke[0]!.id;
const deadlineEvent = runMachine.getStateNodeById('run.live.running').after[0]!.eventType;

const EXIT_ACTIONS = ['appendTerminalEvent', 'handOverSteers', 'releaseSlot', 'releasePermits'] as const;

/** The effect placeholders the engine provides; the harness records each of them. */
const EFFECTS = [
  'requestPermits',
  'announceStarted',
  'consumeSteers',
  'startTurn',
  'requestReply',
  'abandonReply',
  'finishTurn',
  'planBatch',
  'announceSchedule',
  'recordToolResults',
  'closeBatch',
  'escalateSteer',
  ...EXIT_ACTIONS,
] as const;

// ---------------------------------------------------------------------------------------------
// A real actor with recording effects and invoked actors that never settle on their own: the
// test settles them by sending their done/error events, exactly as XState would deliver them.

interface Recorded {
  name: string;
  params: unknown;
}

/** XState-internal events (done/error of invocations, the delayed deadline) the machine accepts at runtime. */
type InternalEvent = { type: string; output?: unknown; error?: unknown };
type ExploredEvent = RunChartEvent | InternalEvent;

function harness(runInput: RunInput = input) {
  const log: Recorded[] = [];
  const modelCalls: ModelTurnInput[] = [];
  const batches: (ActInput | undefined)[] = [];
  const record = (name: string) => (_: unknown, params: unknown) => {
    log.push({ name, params });
  };
  const pending = <T>() => new Promise<T>(() => {});
  const machine = runMachine.provide({
    actions: {
      requestPermits: record('requestPermits'),
      announceStarted: record('announceStarted'),
      consumeSteers: record('consumeSteers'),
      startTurn: record('startTurn'),
      requestReply: (_: unknown, turn: ModelTurnInput) => {
        log.push({ name: 'requestReply', params: turn });
        modelCalls.push(turn);
      },
      abandonReply: record('abandonReply'),
      finishTurn: record('finishTurn'),
      planBatch: record('planBatch'),
      announceSchedule: record('announceSchedule'),
      recordToolResults: record('recordToolResults'),
      closeBatch: record('closeBatch'),
      escalateSteer: record('escalateSteer'),
      appendTerminalEvent: record('appendTerminalEvent'),
      handOverSteers: record('handOverSteers'),
      releaseSlot: record('releaseSlot'),
      releasePermits: record('releasePermits'),
    } satisfies Record<(typeof EFFECTS)[number], unknown>,
    actors: {
      // Stands in for the batch machine: the run only sees the batch's done/error events, which the
      // test sends itself, so a promise that never settles will do; the cast says so to the types.
      act: fromPromise<ActOutput, ActInput>(({ input: batch }) => {
        batches.push(batch);
        return pending();
      }) as unknown as typeof actMachine,
    },
  });
  const clock = new SimulatedClock();
  /** Events delivered to the run's children (the model turn, the batch). */
  const childEvents: { child: string; type: string }[] = [];
  const actor = createActor(machine, {
    input: runInput,
    clock,
    inspect: (inspection) => {
      const target = inspection.actorRef;
      if (inspection.type === '@xstate.event' && target !== actor && 'id' in target && typeof target.id === 'string') {
        childEvents.push({ child: target.id, type: inspection.event.type });
      }
    },
  });
  actor.start();
  // Test-only: done/error/after events are not part of RunChartEvent's public type.
  const send = (event: ExploredEvent) => actor.send(event as RunChartEvent);
  const names = () => log.map((entry) => entry.name);
  const paramsOf = (name: string) => log.filter((entry) => entry.name === name).map((entry) => entry.params);
  return { actor, clock, log, names, paramsOf, modelCalls, batches, childEvents, send };
}

const reply = (text: string, toolCalls: ModelReply['toolCalls'] = []): RunChartEvent => ({
  type: 'MODEL_REPLY',
  reply: { text, toolCalls },
});
const withTools = reply('', [{ id: 'c1', name: 'read_file', args: { path: 'a.ts' } }]);
const answer = reply('done');
const modelError = (error: unknown): RunChartEvent => ({ type: 'MODEL_FAILED', error });
const toolsDone: InternalEvent = {
  type: `xstate.done.actor.${actingId}`,
  output: { results: [{ ok: true, output: 'x' }] } satisfies ActOutput,
};
const toolsFatal: InternalEvent = {
  type: `xstate.done.actor.${actingId}`,
  output: {
    results: [{ ok: false, error: { code: 'sandbox_unavailable', message: 'no sandbox' } }],
    fatal: { code: 'sandbox_unavailable', message: 'no sandbox' },
  } satisfies ActOutput,
};
const toolsError = (error: unknown): InternalEvent => ({ type: `xstate.error.actor.${actingId}`, error });
const steer = (steerId: string, text = steerId): RunChartEvent => ({ type: 'STEER', steer: { steerId, text } });
/** Longer than the clock ever moves in a path (one run deadline at most): in a walk, only the explicit event fires it. */
const STEER_DEADLINE_MS = 3 * input.timeoutMs;
const steerWithDeadline = (
  steerId: string,
  escalation: 'interrupt' | 'queue',
  deadlineMs = STEER_DEADLINE_MS,
): RunChartEvent => ({
  type: 'STEER',
  steer: { steerId, text: steerId, deadlineMs, escalation },
});
const coded = (message: string, code: string) => Object.assign(new Error(message), { code });

// ---------------------------------------------------------------------------------------------
// Model-based: explore, then replay.

const labelled: [label: string, event: ExploredEvent][] = [
  ['GRANTED', { type: 'GRANTED' }],
  ['STEER', steer('s')],
  ['STEER (deadline → interrupt)', steerWithDeadline('s', 'interrupt')],
  ['STEER (deadline → queue)', steerWithDeadline('s', 'queue')],
  ['steer deadline', { type: 'STEER_DUE', steerId: 's' }],
  ['start deadline', { type: 'START_DUE' }],
  ['CANCEL', { type: 'CANCEL', reason: 'user' }],
  ['model: tool calls', withTools],
  ['model: answer', answer],
  ['model: error', modelError(new Error('provider down'))],
  ['model: coded error', modelError(coded('slow down', 'rate_limited'))],
  ['tools: done', toolsDone],
  ['tools: fatal', toolsFatal],
  ['tools: crash', toolsError(new Error('tool crashed'))],
  ['deadline', { type: deadlineEvent }],
];
const alphabet = labelled.map(([, event]) => event);
const labels = new Map(labelled.map(([label, event]) => [event, label]));

type RunSnapshot = ReturnType<typeof runMachine.transition>;

/** Value plus the context that steers control flow; replies and counters do not. */
function serializeRun(snapshot: RunSnapshot): string {
  const { turn, pendingSteers, outcome } = snapshot.context;
  return JSON.stringify({
    value: snapshot.value,
    turn,
    steers: pendingSteers.map((s) => s.escalation ?? 'none'),
    outcome,
  });
}

const traversal = {
  input,
  // Test-only: the alphabet holds XState-internal events, see InternalEvent.
  events: alphabet as RunChartEvent[],
  serializeState: serializeRun,
  // At most one unconsumed steer keeps the graph finite; the cap (2 turns) bounds the rest.
  // A deadline of a steer that is not there, or of a start already made, changes nothing: left out.
  // Steers with a deadline arrive while queued or during the first batch only (a long tool call: what
  // they are for), which covers their rules and keeps the walk small.
  filterEvents: (snapshot: RunSnapshot, event: RunChartEvent) =>
    event.type === 'STEER'
      ? snapshot.context.pendingSteers.length < 1 &&
        (event.steer.deadlineMs === undefined ||
          (snapshot.context.turn === 0 &&
            (snapshot.matches({ live: 'queued' }) || snapshot.matches({ live: { running: 'acting' } }))))
      : event.type === 'STEER_DUE'
        ? snapshot.context.pendingSteers.some((s) => s.deadlineMs !== undefined)
        : event.type !== 'START_DUE' || JSON.stringify(snapshot.value) === JSON.stringify({ live: 'queued' }),
};

const simplePaths = getSimplePaths(runMachine, traversal);
const shortestPaths = getShortestPaths(runMachine, traversal);

const terminalStates = ['completed', 'cancelled', 'failed'] as const;
const outcomeLabel = (outcome: RunOutcome | undefined) =>
  outcome?.state === 'failed' ? `failed/${outcome.error.code}` : String(outcome?.state);
const isTerminal = (value: unknown): value is (typeof terminalStates)[number] =>
  typeof value === 'string' && (terminalStates as readonly string[]).includes(value);

function describePath(path: StatePath<RunSnapshot, RunChartEvent>): string {
  const events = path.steps.slice(1).map(({ event }) => labels.get(event) ?? event.type);
  const end = isTerminal(path.state.value)
    ? outcomeLabel(path.state.context.outcome)
    : JSON.stringify(path.state.value);
  return `${events.join(' → ') || '(start)'} ⇒ ${end}`;
}

/** Replays a path on a real actor; checks each step lands where the graph said it would. */
function replay(path: StatePath<RunSnapshot, RunChartEvent>) {
  const h = harness();
  const sentSteers: PendingSteer[] = [];
  path.steps.forEach(({ event, state }, index) => {
    if (event.type === deadlineEvent) {
      h.clock.increment(input.timeoutMs);
    } else if (event.type === 'STEER') {
      const unique = { ...event.steer, steerId: `steer-${index}`, text: `steer ${index}` };
      sentSteers.push(unique);
      h.send({ type: 'STEER', steer: unique });
    } else if (event.type === 'STEER_DUE') {
      // The walk names the steer 's'; the replay gave it its own id.
      h.send({
        type: 'STEER_DUE',
        steerId: h.actor.getSnapshot().context.pendingSteers.find((p) => p.deadlineMs !== undefined)!.steerId,
      });
    } else {
      h.send(event);
    }
    expect(serializeRun(h.actor.getSnapshot()), `step ${index} (${event.type})`).toBe(serializeRun(state));
  });
  return { ...h, sentSteers };
}

const bySteerId = (a: PendingSteer, b: PendingSteer) => a.steerId.localeCompare(b.steerId);

function expectEndedByConstruction(h: ReturnType<typeof replay>) {
  const snapshot = h.actor.getSnapshot();
  const value = snapshot.value;
  expect(snapshot.status).toBe('done');
  expect(isTerminal(value)).toBe(true);
  expect(snapshot.context.outcome?.state).toBe(value);

  // Exit actions: each once, in this order, and nothing runs after the permits are released.
  const names = h.names();
  expect(names.filter((name) => (EXIT_ACTIONS as readonly string[]).includes(name))).toEqual([...EXIT_ACTIONS]);
  expect(names.slice(-EXIT_ACTIONS.length)).toEqual([...EXIT_ACTIONS]);
  expect(h.paramsOf('appendTerminalEvent')).toEqual([
    { outcome: snapshot.context.outcome, turns: snapshot.context.turn, toolCalls: snapshot.context.toolCallCount },
  ]);
  expect(names.filter((name) => name === 'requestPermits')).toHaveLength(1);
  expect(names[0]).toBe('requestPermits');
  expect(names.filter((name) => name === 'closeBatch').length, 'every planned batch is closed').toBe(
    names.filter((name) => name === 'planBatch').length,
  );

  // Every steer is accounted for once: consumed at a turn, moved to the lane past its deadline, or handed over at the end.
  const consumed = (h.paramsOf('consumeSteers') as { steers: PendingSteer[] }[]).flatMap((p) => p.steers);
  const escalated = h.paramsOf('escalateSteer') as { steer: PendingSteer; to: string }[];
  const toLane = escalated.filter((e) => e.to === 'queue').map((e) => e.steer);
  const handedOver = (h.paramsOf('handOverSteers') as { steers: PendingSteer[] }[]).flatMap((p) => p.steers);
  expect([...consumed, ...toLane, ...handedOver].sort(bySteerId)).toEqual([...h.sentSteers].sort(bySteerId));
  // An interrupting escalation is the run's end: its steer is handed over to run next.
  for (const e of escalated.filter((x) => x.to === 'interrupt')) {
    expect(snapshot.context.outcome).toEqual({ state: 'cancelled', reason: 'steer_escalated' });
    expect(handedOver).toContainEqual(e.steer);
  }
}

describe('run machine, model-based (xstate/graph)', () => {
  it('reads the generated names it needs from the definition', () => {
    expect(deadlineEvent).toBe('xstate.after.runDeadline.run.live.running');
    const accepted = runMachine.root.events;
    expect(accepted).toContain(`xstate.done.actor.${actingId}`);
    expect(accepted).toContain(`xstate.error.actor.${actingId}`);
    expect(accepted).toEqual(expect.arrayContaining(['MODEL_REPLY', 'MODEL_FAILED']));
  });

  it('the harness records every effect placeholder the machine declares', () => {
    // Built-in actions (assign, sendTo) carry a `type`; effect placeholders are plain functions.
    const placeholders = Object.entries(runMachine.implementations.actions)
      .filter(([, action]) => typeof action === 'function' && !('type' in action))
      .map(([name]) => name);
    expect(placeholders.sort()).toEqual([...EFFECTS].sort());
  });

  it('the exploration reaches every resting state and every kind of outcome', () => {
    const values = new Set(shortestPaths.map((path) => JSON.stringify(path.state.value)));
    for (const value of [
      { live: 'queued' },
      { live: { running: 'thinking' } },
      { live: { running: 'acting' } },
      ...terminalStates,
    ]) {
      expect(values).toContain(JSON.stringify(value));
    }
    const outcomes = new Set(
      shortestPaths
        .filter((path) => isTerminal(path.state.value))
        .map(({ state: { context } }) => outcomeLabel(context.outcome)),
    );
    expect([...outcomes].sort()).toEqual(
      [
        'cancelled',
        'completed',
        'failed/deadline_unmeetable',
        'failed/internal',
        'failed/max_iterations',
        'failed/model_error',
        'failed/rate_limited',
        'failed/sandbox_unavailable',
        'failed/timeout',
      ].sort(),
    );
  });

  const endingPaths = simplePaths.filter((path) => isTerminal(path.state.value));
  const livePaths = simplePaths.filter((path) => !isTerminal(path.state.value));

  it('finds a non-trivial number of paths', () => {
    expect(endingPaths.length).toBeGreaterThan(50);
    expect(livePaths.length).toBeGreaterThan(10);
  });

  describe('every path that ends: one terminal state, exits once each and in order, permits requested once', () => {
    it.each(endingPaths.map((path) => [describePath(path), path] as const))('%s', (_name, path) => {
      expectEndedByConstruction(replay(path));
    });
  });

  describe('every path still live: nothing released yet', () => {
    it.each(livePaths.map((path) => [describePath(path), path] as const))('%s', (_name, path) => {
      const h = replay(path);
      expect(h.actor.getSnapshot().status).toBe('active');
      expect(h.names().filter((name) => (EXIT_ACTIONS as readonly string[]).includes(name))).toEqual([]);
      expect(h.names().filter((name) => name === 'requestPermits')).toHaveLength(1);
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Explicit rules.

describe('run machine, deadline (docs/runs.md, deadlines)', () => {
  it('expires timeoutMs after GRANTED and ends failed/timeout', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.clock.increment(input.timeoutMs - 1);
    expect(h.actor.getSnapshot().value).toEqual({ live: { running: 'thinking' } });
    h.clock.increment(1);
    const snapshot = h.actor.getSnapshot();
    expect(snapshot.value).toBe('failed');
    expect(snapshot.context.outcome).toEqual({
      state: 'failed',
      error: { code: 'timeout', message: `run exceeded its deadline of ${input.timeoutMs} ms` },
    });
    expect(h.names().slice(-4)).toEqual([...EXIT_ACTIONS]);
  });

  it('does not count time spent queued', () => {
    const h = harness();
    h.clock.increment(input.timeoutMs * 10);
    expect(h.actor.getSnapshot().value).toEqual({ live: 'queued' });
    h.send({ type: 'GRANTED' });
    h.clock.increment(input.timeoutMs - 1);
    expect(h.actor.getSnapshot().value).toEqual({ live: { running: 'thinking' } });
    h.clock.increment(1);
    expect(h.actor.getSnapshot().context.outcome).toMatchObject({ state: 'failed', error: { code: 'timeout' } });
  });

  it('keeps running across turns: the deadline belongs to the run, not to a turn', () => {
    const h = harness({ ...input, maxIterations: 10 });
    h.send({ type: 'GRANTED' });
    h.clock.increment(input.timeoutMs / 2);
    h.send(withTools);
    h.send(toolsDone);
    expect(h.actor.getSnapshot().value).toEqual({ live: { running: 'thinking' } });
    h.clock.increment(input.timeoutMs / 2);
    expect(h.actor.getSnapshot().context.outcome).toMatchObject({ state: 'failed', error: { code: 'timeout' } });
  });
});

describe('run machine, turns and the iteration cap (docs/runs.md, run states)', () => {
  it.each([
    { how: 'answered', event: answer },
    { how: 'failed', event: modelError(new Error('provider down')) },
    { how: 'cancelled', event: { type: 'CANCEL', reason: 'user' } as RunChartEvent },
    { how: 'out of time', event: { type: deadlineEvent } },
  ])('every turn it asks for is abandoned once it leaves thinking ($how), before the run ends', ({ event }) => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(event);
    const names = h.names();
    expect(names.filter((name) => name === 'requestReply')).toHaveLength(1);
    expect(h.paramsOf('abandonReply')).toEqual([{ runId: 'r1', turn: 0 }]);
    expect(names.indexOf('abandonReply')).toBeGreaterThan(names.indexOf('requestReply'));
    expect(names.indexOf('abandonReply')).toBeLessThan(names.indexOf('appendTerminalEvent'));
  });

  it('completes when the model answers without tool calls, with its text as output', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    expect(h.names().slice(-2)).toEqual(['planBatch', 'announceSchedule']);
    expect(h.batches).toHaveLength(1);
    h.send(toolsDone);
    expect(h.paramsOf('recordToolResults')).toEqual([toolsDone.output]);
    h.send(answer);
    expect(h.actor.getSnapshot().context).toMatchObject({
      outcome: { state: 'completed', output: 'done' },
      turn: 2,
      toolCallCount: 1,
    });
    expect(h.modelCalls).toEqual([
      { runId: 'r1', turn: 0 },
      { runId: 'r1', turn: 1 },
    ]);
    expect(h.log.filter((e) => e.name === 'startTurn' || e.name === 'finishTurn')).toEqual([
      { name: 'startTurn', params: { turn: 0 } },
      { name: 'finishTurn', params: { turn: 0 } },
      { name: 'startTurn', params: { turn: 1 } },
      { name: 'finishTurn', params: { turn: 1 } },
    ]);
  });

  const capRows: { maxIterations: number; turnsWithTools: number; ends: string }[] = [
    { maxIterations: 1, turnsWithTools: 1, ends: 'failed/max_iterations' },
    { maxIterations: 2, turnsWithTools: 1, ends: 'completed' },
    { maxIterations: 2, turnsWithTools: 2, ends: 'failed/max_iterations' },
    { maxIterations: 3, turnsWithTools: 2, ends: 'completed' },
  ];
  it.each(capRows)(
    'maxIterations $maxIterations, $turnsWithTools turn(s) with tool calls → $ends',
    ({ maxIterations, turnsWithTools, ends }) => {
      const h = harness({ ...input, maxIterations });
      h.send({ type: 'GRANTED' });
      for (let turn = 0; turn < turnsWithTools; turn += 1) {
        h.send(withTools);
        h.send(toolsDone);
      }
      if (h.actor.getSnapshot().status === 'active') h.send(answer);
      const outcome = h.actor.getSnapshot().context.outcome;
      expect(outcomeLabel(outcome)).toBe(ends);
      if (ends === 'failed/max_iterations') {
        expect(outcome).toEqual({
          state: 'failed',
          error: { code: 'max_iterations', message: `run reached its cap of ${maxIterations} model turns` },
        });
      }
    },
  );

  it('a model answer without tool calls while a steer is pending gets another turn, not completion', () => {
    const h = harness({ ...input, maxIterations: 5 });
    h.send({ type: 'GRANTED' });
    h.send(steer('late', 'also check b.ts'));
    h.send(answer);
    const snapshot = h.actor.getSnapshot();
    expect(snapshot.value).toEqual({ live: { running: 'thinking' } });
    expect(snapshot.context.turn).toBe(1);
    expect(h.paramsOf('consumeSteers').at(-1)).toEqual({
      steers: [{ steerId: 'late', text: 'also check b.ts' }],
      turn: 1,
    });
    h.send(answer);
    expect(h.actor.getSnapshot().context.outcome).toEqual({ state: 'completed', output: 'done' });
    expect(h.paramsOf('handOverSteers')).toEqual([{ steers: [], outcome: { state: 'completed', output: 'done' } }]);
  });

  it('the extra turn for a steer counts toward the cap; the unconsumed steer is handed over', () => {
    const h = harness({ ...input, maxIterations: 1 });
    h.send({ type: 'GRANTED' });
    h.send(steer('late'));
    h.send(answer);
    const outcome = h.actor.getSnapshot().context.outcome;
    expect(outcome).toMatchObject({ state: 'failed', error: { code: 'max_iterations' } });
    expect(h.paramsOf('handOverSteers')).toEqual([{ steers: [{ steerId: 'late', text: 'late' }], outcome }]);
  });

  it('steers received while queued are passed to consumeSteers on the first turn, in order', () => {
    const h = harness();
    h.send(steer('a'));
    h.send(steer('b'));
    expect(h.paramsOf('consumeSteers')).toEqual([]);
    h.send({ type: 'GRANTED' });
    expect(h.paramsOf('consumeSteers')).toEqual([
      {
        steers: [
          { steerId: 'a', text: 'a' },
          { steerId: 'b', text: 'b' },
        ],
        turn: 0,
      },
    ]);
    expect(h.actor.getSnapshot().context.pendingSteers).toEqual([]);
    expect(h.names()).toEqual(['requestPermits', 'announceStarted', 'consumeSteers', 'startTurn', 'requestReply']);
  });

  it('steers received while acting are consumed at the next turn, not lost', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    h.send(steer('mid'));
    h.send(toolsDone);
    expect(h.paramsOf('consumeSteers').at(-1)).toEqual({ steers: [{ steerId: 'mid', text: 'mid' }], turn: 1 });
  });
});

describe('run machine, steer deadlines (docs/runs.md, "Steers with a deadline")', () => {
  /** A run in the middle of a long tool batch with a steer of 1 s waiting. */
  function actingWithSteer(escalation: 'interrupt' | 'queue') {
    const h = harness({ ...input, maxIterations: 5 });
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    h.send(steerWithDeadline('hurry', escalation, 1_000));
    return h;
  }

  it.each(['interrupt', 'queue'] as const)(
    'boundary first (%s): the steer is read, and its deadline later changes nothing',
    (escalation) => {
      const h = actingWithSteer(escalation);
      h.clock.increment(999);
      h.send(toolsDone);
      expect(h.paramsOf('consumeSteers').at(-1)).toMatchObject({ steers: [{ steerId: 'hurry' }], turn: 1 });
      h.clock.increment(10_000);
      expect(h.paramsOf('escalateSteer')).toEqual([]);
      expect(h.actor.getSnapshot().value).toEqual({ live: { running: 'thinking' } });
    },
  );

  it('deadline first, interrupt: the run ends cancelled with steer_escalated, its batch closed, the steer handed over to run next', () => {
    const h = actingWithSteer('interrupt');
    h.clock.increment(999);
    expect(h.actor.getSnapshot().value).toEqual({ live: { running: 'acting' } });
    h.clock.increment(1);
    const snapshot = h.actor.getSnapshot();
    expect(snapshot.context.outcome).toEqual({ state: 'cancelled', reason: 'steer_escalated' });
    expect(h.paramsOf('closeBatch')).toEqual([{ code: 'cancelled', message: 'run cancelled (steer_escalated)' }]);
    expect(h.paramsOf('escalateSteer')).toEqual([
      { steer: expect.objectContaining({ steerId: 'hurry' }), to: 'interrupt' },
    ]);
    expect(h.paramsOf('handOverSteers')).toEqual([
      { steers: [expect.objectContaining({ steerId: 'hurry' })], outcome: snapshot.context.outcome },
    ]);
    // The escalation is announced before the terminal event.
    expect(h.names().indexOf('escalateSteer')).toBeLessThan(h.names().indexOf('appendTerminalEvent'));
  });

  it('deadline first, queue: the steer leaves the run for the lane, the run goes on and reads nothing of it', () => {
    const h = actingWithSteer('queue');
    h.clock.increment(1_000);
    expect(h.paramsOf('escalateSteer')).toEqual([
      { steer: expect.objectContaining({ steerId: 'hurry' }), to: 'queue' },
    ]);
    expect(h.actor.getSnapshot().context.pendingSteers).toEqual([]);
    h.send(toolsDone);
    expect(h.paramsOf('consumeSteers').at(-1)).toEqual({ steers: [], turn: 1 });
    h.send(answer);
    expect(h.actor.getSnapshot().context.outcome).toEqual({ state: 'completed', output: 'done' });
    expect(h.paramsOf('handOverSteers')).toEqual([{ steers: [], outcome: { state: 'completed', output: 'done' } }]);
  });

  it('each steer keeps its own deadline, counted from its delivery', () => {
    const h = harness({ ...input, maxIterations: 5 });
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    h.send(steerWithDeadline('first', 'queue', 1_000));
    h.clock.increment(500);
    h.send(steerWithDeadline('second', 'queue', 1_000));
    h.clock.increment(500);
    expect((h.paramsOf('escalateSteer') as { steer: PendingSteer }[]).map((e) => e.steer.steerId)).toEqual(['first']);
    h.clock.increment(500);
    expect((h.paramsOf('escalateSteer') as { steer: PendingSteer }[]).map((e) => e.steer.steerId)).toEqual([
      'first',
      'second',
    ]);
  });
});

describe('run machine, start deadline (docs/runs.md, "Start deadlines")', () => {
  it('a run still queued when its startWithinMs passes ends failed deadline_unmeetable, releasing by construction', () => {
    const h = harness({ ...input, startWithinMs: 500 });
    h.clock.increment(499);
    expect(h.actor.getSnapshot().value).toEqual({ live: 'queued' });
    h.clock.increment(1);
    const snapshot = h.actor.getSnapshot();
    expect(snapshot.value).toBe('failed');
    expect(snapshot.context.outcome).toMatchObject({ state: 'failed', error: { code: 'deadline_unmeetable' } });
    expect(h.names().slice(-4)).toEqual([...EXIT_ACTIONS]);
    expect(h.names()).not.toContain('announceStarted');
  });

  it('a run granted in time keeps running past its start deadline', () => {
    const h = harness({ ...input, startWithinMs: 500 });
    h.clock.increment(400);
    h.send({ type: 'GRANTED' });
    h.clock.increment(10_000);
    expect(h.actor.getSnapshot().value).toEqual({ live: { running: 'thinking' } });
  });
});

describe('run machine, errors and cancellation', () => {
  const errorRows: { case: string; event: ExploredEvent; error: { code: string; message: string } }[] = [
    {
      case: 'model error without a code',
      event: modelError(new Error('provider down')),
      error: { code: 'model_error', message: 'provider down' },
    },
    {
      case: 'model error with its own code',
      event: modelError(coded('slow down', 'rate_limited')),
      error: { code: 'rate_limited', message: 'slow down' },
    },
    {
      case: 'model rejects with a non-Error',
      event: modelError('boom'),
      error: { code: 'model_error', message: 'boom' },
    },
  ];
  it.each(errorRows)('$case → failed with $error.code', ({ event, error }) => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(event);
    expect(h.actor.getSnapshot().value).toBe('failed');
    expect(h.actor.getSnapshot().context.outcome).toEqual({ state: 'failed', error });
    expect(h.names().slice(-4)).toEqual([...EXIT_ACTIONS]);
  });

  it('a batch that fails fatally → failed with its error; its results are recorded before the terminal event', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    h.send(toolsFatal);
    expect(h.actor.getSnapshot().context.outcome).toEqual({
      state: 'failed',
      error: { code: 'sandbox_unavailable', message: 'no sandbox' },
    });
    expect(h.paramsOf('recordToolResults')).toEqual([toolsFatal.output]);
    expect(h.names().slice(-4)).toEqual([...EXIT_ACTIONS]);
    expect(h.names().indexOf('recordToolResults')).toBeLessThan(h.names().indexOf('appendTerminalEvent'));
  });

  it('a tool dispatch crash → failed/internal', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    h.send(toolsError(new Error('tool crashed')));
    expect(h.actor.getSnapshot().context.outcome).toEqual({
      state: 'failed',
      error: { code: 'internal', message: 'tool crashed' },
    });
  });

  const cancelRows: { in: string; before: ExploredEvent[]; announced: boolean }[] = [
    { in: 'queued', before: [], announced: false },
    { in: 'thinking', before: [{ type: 'GRANTED' }], announced: true },
    { in: 'acting', before: [{ type: 'GRANTED' }, withTools], announced: true },
  ];
  it.each(cancelRows)('cancel while $in → cancelled with the reason, released once', ({ before, announced }) => {
    const h = harness();
    for (const event of before) h.send(event);
    h.send({ type: 'CANCEL', reason: 'user asked' });
    const snapshot = h.actor.getSnapshot();
    expect(snapshot.value).toBe('cancelled');
    expect(snapshot.context.outcome).toEqual({ state: 'cancelled', reason: 'user asked' });
    expect(h.names().includes('announceStarted')).toBe(announced);
    expect(h.names().slice(-4)).toEqual([...EXIT_ACTIONS]);
    h.send({ type: 'CANCEL', reason: 'again' });
    h.clock.increment(input.timeoutMs * 2);
    expect(h.names().filter((name) => name === 'releasePermits')).toHaveLength(1);
  });

  it('a cancelled run stops its deadline timer', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send({ type: 'CANCEL', reason: 'user' });
    const before = h.log.length;
    h.clock.increment(input.timeoutMs);
    expect(h.log.length).toBe(before);
    expect(h.actor.getSnapshot().context.outcome).toEqual({ state: 'cancelled', reason: 'user' });
  });

  it('stopping the actor skips the exit actions: the engine releases in settleRun (src/engine/engine.ts)', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.actor.stop();
    expect(h.actor.getSnapshot().status).toBe('stopped');
    expect(h.names().filter((name) => (EXIT_ACTIONS as readonly string[]).includes(name))).toEqual([]);
  });
});

describe('run machine, the Act phase (acting)', () => {
  const closeRows: { leaves: string; by: ExploredEvent | 'deadline'; reason: { code: string; message: string } }[] = [
    {
      leaves: 'cancelled',
      by: { type: 'CANCEL', reason: 'user' },
      reason: { code: 'cancelled', message: 'run cancelled (user)' },
    },
    { leaves: 'at the deadline', by: 'deadline', reason: { code: 'timeout', message: 'run deadline expired' } },
  ];
  it.each(closeRows)(
    'a batch left $leaves is closed with code $reason.code before the terminal event',
    ({ by, reason }) => {
      const h = harness();
      h.send({ type: 'GRANTED' });
      h.send(withTools);
      if (by === 'deadline') h.clock.increment(input.timeoutMs);
      else h.send(by);
      expect(h.paramsOf('closeBatch')).toEqual([reason]);
      expect(h.names().slice(-5)).toEqual(['closeBatch', ...EXIT_ACTIONS]);
    },
  );

  it('a steer while acting is kept for the next turn and told to the batch', () => {
    const h = harness();
    h.send({ type: 'GRANTED' });
    h.send(withTools);
    h.send(steer('mid'));
    expect(h.actor.getSnapshot().context.pendingSteers).toEqual([{ steerId: 'mid', text: 'mid' }]);
    expect(h.childEvents).toContainEqual({ child: actingId, type: 'STEER_PENDING' });
  });
});
