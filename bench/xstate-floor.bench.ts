/**
 * The floor under the engine's figures: the same actor topology as the engine — a session
 * actor per session, one limiter actor, an actor per run; a batch actor and an actor per tool
 * call — as the smallest XState v5 machines that can play it, doing none of the engine's work
 * (no validation, store, events, deadlines, steers or claims). What any design with an actor
 * per run and per call pays on this machine before it does anything, next to the hand-rolled
 * baselines of bench/admission.bench.ts and bench/act.bench.ts, in the same run.
 */
import { assign, createActor, enqueueActions, sendParent, setup, type AnyActorRef } from 'xstate';
import { handRolledEngine } from './hand-rolled-engine.js';
import type { BenchFigure, Benchmark } from './types.js';

const RUNS = 2_000;
const SESSIONS = 200;
const LIMIT = 8;
const CALLS = 1_000;
const ROUNDS = 5;

/** queued -> running -> done: asks for permits, then for the model's reply. */
const runFloor = setup({
  types: {
    input: {} as { runId: string; agentId: string },
    context: {} as { runId: string; agentId: string },
    events: {} as { type: 'GRANTED' } | { type: 'REPLY' },
  },
  actions: { requestPermits: () => {}, requestReply: () => {}, ended: () => {} },
}).createMachine({
  context: ({ input }) => input,
  initial: 'queued',
  states: {
    queued: { entry: 'requestPermits', on: { GRANTED: 'running' } },
    running: { entry: 'requestReply', on: { REPLY: 'done' } },
    done: { type: 'final', entry: 'ended' },
  },
});

interface LimiterContext {
  free: number;
  perAgent: Record<string, number>;
  waiters: { runId: string; agentId: string }[];
}

type LimiterEvent = { type: 'ACQUIRE'; runId: string; agentId: string } | { type: 'RELEASE'; agentId: string };

/** Counting permits, global and per agent, with a FIFO of waiters; a grant is an effect. */
const limiterFloor = setup({
  types: { context: {} as LimiterContext, events: {} as LimiterEvent },
  actions: { grant: (_, _params: { runId: string }) => {} },
}).createMachine({
  context: { free: LIMIT, perAgent: {}, waiters: [] },
  on: {
    ACQUIRE: {
      actions: enqueueActions(({ context, event, enqueue }) =>
        grantAll(context, [...context.waiters, { runId: event.runId, agentId: event.agentId }], enqueue),
      ),
    },
    RELEASE: {
      actions: enqueueActions(({ context, event, enqueue }) => {
        const released = {
          ...context,
          free: context.free + 1,
          perAgent: { ...context.perAgent, [event.agentId]: (context.perAgent[event.agentId] ?? 0) - 1 },
        };
        grantAll(released, context.waiters, enqueue);
      }),
    },
  },
});

function grantAll(
  context: LimiterContext,
  waiters: LimiterContext['waiters'],
  enqueue: { assign: (c: Partial<LimiterContext>) => void } & ((action: {
    type: 'grant';
    params: { runId: string };
  }) => void),
): void {
  let free = context.free;
  const perAgent = { ...context.perAgent };
  const left: LimiterContext['waiters'] = [];
  for (const waiter of waiters) {
    if (free > 0 && (perAgent[waiter.agentId] ?? 0) < LIMIT) {
      free -= 1;
      perAgent[waiter.agentId] = (perAgent[waiter.agentId] ?? 0) + 1;
      enqueue({ type: 'grant', params: { runId: waiter.runId } });
    } else left.push(waiter);
  }
  enqueue.assign({ free, perAgent, waiters: left });
}

type SessionEvent = { type: 'SUBMIT'; runId: string } | { type: 'RUN_ENDED' };

/** One run at a time; later messages wait in a FIFO lane. */
const sessionFloor = setup({
  types: { context: {} as { lane: string[] }, events: {} as SessionEvent },
  actions: { admit: (_, _params: { runId: string }) => {} },
}).createMachine({
  context: { lane: [] },
  initial: 'idle',
  states: {
    idle: {
      on: { SUBMIT: { target: 'busy', actions: { type: 'admit', params: ({ event }) => ({ runId: event.runId }) } } },
    },
    busy: {
      on: {
        SUBMIT: { actions: assign({ lane: ({ context, event }) => [...context.lane, event.runId] }) },
        RUN_ENDED: [
          { guard: ({ context }) => context.lane.length === 0, target: 'idle' },
          {
            actions: [
              { type: 'admit', params: ({ context }) => ({ runId: context.lane[0]! }) },
              assign({ lane: ({ context }) => context.lane.slice(1) }),
            ],
          },
        ],
      },
    },
  },
});

/** The admission workload of bench/admission.bench.ts on the floor machines: 2,000 runs over 200 sessions. */
async function floorAdmissionMakespan(): Promise<number> {
  const runs = new Map<string, AnyActorRef>();
  const sessions = new Map<string, AnyActorRef>();
  const sessionOfRun = new Map<string, string>();
  let finished = 0;
  let allDone!: () => void;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  const limiter = createActor(
    limiterFloor.provide({ actions: { grant: (_, { runId }) => runs.get(runId)?.send({ type: 'GRANTED' }) } }),
  ).start();
  const run = runFloor.provide({
    actions: {
      requestPermits: ({ context }) =>
        limiter.send({ type: 'ACQUIRE', runId: context.runId, agentId: context.agentId }),
      requestReply: ({ self }) => void Promise.resolve().then(() => self.send({ type: 'REPLY' })),
      ended: ({ context }) => {
        runs.delete(context.runId);
        limiter.send({ type: 'RELEASE', agentId: context.agentId });
        sessions.get(sessionOfRun.get(context.runId)!)!.send({ type: 'RUN_ENDED' });
        if (++finished === RUNS) allDone();
      },
    },
  });
  const session = sessionFloor.provide({
    actions: {
      admit: (_, { runId }) => {
        const actor = createActor(run, { input: { runId, agentId: `a${Number(runId.slice(1)) % 4}` } });
        runs.set(runId, actor);
        actor.start();
      },
    },
  });
  const started = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const sessionId = `s${i % SESSIONS}`;
    let actor = sessions.get(sessionId);
    if (!actor) sessions.set(sessionId, (actor = createActor(session).start()));
    sessionOfRun.set(`r${i}`, sessionId);
    actor.send({ type: 'SUBMIT', runId: `r${i}` });
    await Promise.resolve();
  }
  await done;
  return performance.now() - started;
}

async function handRolledMakespan(): Promise<number> {
  const baseline = handRolledEngine({
    maxGlobal: LIMIT,
    maxPerAgent: LIMIT,
    laneCapacity: RUNS,
    timeoutMs: 172_800_000,
  });
  const started = performance.now();
  const done = [];
  for (let i = 0; i < RUNS; i++)
    done.push(baseline.submit({ sessionId: `s${i % SESSIONS}`, agentId: `a${i % 4}`, input: `message ${i}` }));
  await Promise.all(done);
  return performance.now() - started;
}

type CallEvent = { type: 'DONE' };

/** A call: executing -> done, reporting to its batch. */
const callFloor = setup({
  types: { input: {} as { index: number }, context: {} as { index: number }, events: {} as CallEvent },
  actions: { execute: () => {} },
}).createMachine({
  context: ({ input }) => input,
  initial: 'executing',
  states: {
    executing: { entry: 'execute', on: { DONE: 'done' } },
    done: { type: 'final', entry: sendParent(({ context }) => ({ type: 'CALL_DONE', index: context.index })) },
  },
});

/** Spawns a call actor per call, at most LIMIT at once, and stops each as it reports. */
const batchFloor = setup({
  types: {
    context: {} as { next: number; running: number; finished: number },
    events: {} as { type: 'CALL_DONE'; index: number },
  },
  actors: { call: callFloor },
}).createMachine({
  context: { next: 0, running: 0, finished: 0 },
  initial: 'dispatching',
  states: {
    dispatching: {
      entry: enqueueActions(({ context, enqueue }) => startCalls(context, enqueue)),
      on: {
        CALL_DONE: {
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.stopChild(`call-${event.index}`);
            startCalls({ ...context, running: context.running - 1, finished: context.finished + 1 }, enqueue);
          }),
        },
      },
      always: { guard: ({ context }) => context.finished === CALLS, target: 'done' },
    },
    done: { type: 'final' },
  },
});

function startCalls(
  context: { next: number; running: number; finished: number },
  enqueue: {
    assign: (c: Partial<typeof context>) => void;
    spawnChild: (src: 'call', options: { id: string; input: { index: number } }) => void;
  },
): void {
  let { next, running } = context;
  while (running < LIMIT && next < CALLS) {
    enqueue.spawnChild('call', { id: `call-${next}`, input: { index: next } });
    next += 1;
    running += 1;
  }
  enqueue.assign({ next, running, finished: context.finished });
}

async function floorDispatchPerCall(): Promise<number> {
  const noop = async () => 'ok';
  const batch = batchFloor.provide({
    actors: {
      call: callFloor.provide({
        actions: { execute: ({ self }) => void noop().then(() => self.send({ type: 'DONE' })) },
      }),
    },
  });
  const started = performance.now();
  const actor = createActor(batch).start();
  await new Promise<void>((resolve) => actor.subscribe({ complete: resolve }));
  return ((performance.now() - started) / CALLS) * 1000;
}

async function promiseAllPerCall(): Promise<number> {
  const noop = async () => 'ok';
  const started = performance.now();
  await Promise.all(Array.from({ length: CALLS }, () => noop()));
  return ((performance.now() - started) / CALLS) * 1000;
}

const benchmark: Benchmark = async () => {
  await floorAdmissionMakespan();
  await handRolledMakespan();
  await floorDispatchPerCall();
  let floorBest = Infinity;
  let baselineBest = Infinity;
  let callBest = Infinity;
  let promiseBest = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    floorBest = Math.min(floorBest, await floorAdmissionMakespan());
    baselineBest = Math.min(baselineBest, await handRolledMakespan());
    callBest = Math.min(callBest, await floorDispatchPerCall());
    promiseBest = Math.min(promiseBest, await promiseAllPerCall());
  }
  const floorRate = (RUNS / floorBest) * 1000;
  const baselineRate = (RUNS / baselineBest) * 1000;
  const figures: BenchFigure[] = [
    {
      figure: 'floor: admission on bare XState machines, same topology (2,000 runs, 200 sessions)',
      value: floorRate,
      unit: 'runs/s',
      baseline: baselineRate,
      ratio: floorRate / baselineRate,
      note:
        'a session actor per session, one limiter actor, an actor per run, each the smallest machine ' +
        "that plays its part; none of the engine's work. Baseline: the hand-rolled engine of the " +
        'admission figure, which does that work',
    },
    {
      figure: 'floor: dispatch per no-op call on bare XState machines (1,000 calls, 8 at once)',
      value: callBest,
      unit: 'µs',
      baseline: promiseBest,
      ratio: callBest / promiseBest,
      note:
        'a batch actor spawning an actor per call, each told its result by an event and stopped when it ' +
        'reports; baseline: Promise.all over the same no-op executions',
    },
  ];
  return figures;
};

export default benchmark;
