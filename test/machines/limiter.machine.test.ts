/*
 * The limiter (docs/runs.md, "Limits"): global and per-agent permits, granted by fair queueing
 * (turns across agents, arrival order within an agent) skipping a waiter whose agent is at its
 * cap; hot-reloadable limits that admit at once when raised and preempt nothing when lowered.
 * Unit tables first, then properties over random ACQUIRE/RELEASE/RECONFIGURE. The priority
 * classes and their weights have their own suite (fair-queue.test.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import {
  emptyFairQueue,
  grantWaiters,
  queuePosition,
  releaseRun,
  limiterMachine,
  waitersOf,
  DEFAULT_WEIGHTS,
} from '../../machines/limiter.machine.js';
import { emptyQueue, itemsOf, pushed, type WaitQueue } from '../../machines/wait-queue.js';
import type {
  PermitWaiter,
  LimiterContext,
  LimiterEmitted,
  LimiterEvent,
  LimiterInput,
} from '../../machines/limiter.machine.js';

const queueOf = (...waiters: PermitWaiter[]): WaitQueue<PermitWaiter> =>
  waiters.reduce(pushed, emptyQueue<PermitWaiter>());

function limiter(input: LimiterInput) {
  const actor = createActor(limiterMachine, { input });
  const emitted: LimiterEmitted[] = [];
  actor.on('*', (event) => emitted.push(event));
  actor.start();
  const send = (event: LimiterEvent): LimiterEmitted[] => {
    const mark = emitted.length;
    actor.send(event);
    return emitted.slice(mark);
  };
  const context = () => actor.getSnapshot().context;
  return { actor, send, context };
}

const acquire = (runId: string, agentId: string): LimiterEvent => ({ type: 'ACQUIRE', runId, agentId });
const release = (runId: string): LimiterEvent => ({ type: 'RELEASE', runId });
const granted = (runId: string): LimiterEmitted => ({ type: 'granted', runId });
const waiting = (runId: string, position: number): LimiterEmitted => ({ type: 'waiting', runId, position });

describe('limiter, by example', () => {
  it('grants while permits are free, then makes runs wait with their position', () => {
    const l = limiter({ maxGlobal: 2, maxPerAgent: 3 });
    expect(l.send(acquire('r1', 'a'))).toEqual([granted('r1')]);
    expect(l.send(acquire('r2', 'b'))).toEqual([granted('r2')]);
    expect(l.send(acquire('r3', 'a'))).toEqual([waiting('r3', 1)]);
    // Agent c has not had a turn yet, agent a has: c's run goes first.
    expect(l.send(acquire('r4', 'c'))).toEqual([waiting('r4', 1)]);
    expect(l.context()).toMatchObject({ inUse: 2, perAgent: { a: 1, b: 1 }, holders: { r1: 'a', r2: 'b' } });
    expect(l.send(release('r2'))).toEqual([{ type: 'released', runId: 'r2' }, granted('r4')]);
    expect(l.send(release('r4'))).toEqual([{ type: 'released', runId: 'r4' }, granted('r3')]);
  });

  /** Rows: limits, the arrivals in order, which are granted at once; then one release and who gets in. */
  const orderRows: {
    case: string;
    limits: LimiterInput;
    arrivals: [runId: string, agentId: string][];
    grantedAtOnce: string[];
    releaseOf: string;
    thenGranted: string[];
  }[] = [
    {
      case: 'arrival order when every waiter is eligible',
      limits: { maxGlobal: 1, maxPerAgent: 1 },
      arrivals: [
        ['a1', 'a'],
        ['b1', 'b'],
        ['c1', 'c'],
      ],
      grantedAtOnce: ['a1'],
      releaseOf: 'a1',
      thenGranted: ['b1'],
    },
    {
      case: 'an agent at its cap is skipped, not blocking another agent',
      limits: { maxGlobal: 3, maxPerAgent: 1 },
      arrivals: [
        ['a1', 'a'],
        ['a2', 'a'],
        ['b1', 'b'],
        ['a3', 'a'],
        ['c1', 'c'],
      ],
      grantedAtOnce: ['a1', 'b1', 'c1'],
      releaseOf: 'b1',
      thenGranted: [],
    },
    {
      case: 'after a release of its agent, the earliest waiter of that agent gets in',
      limits: { maxGlobal: 3, maxPerAgent: 1 },
      arrivals: [
        ['a1', 'a'],
        ['a2', 'a'],
        ['b1', 'b'],
        ['a3', 'a'],
      ],
      grantedAtOnce: ['a1', 'b1'],
      releaseOf: 'a1',
      thenGranted: ['a2'],
    },
    {
      case: "fairness between agents, not arrival order: one agent's burst does not keep another agent's request waiting",
      limits: { maxGlobal: 2, maxPerAgent: 2 },
      arrivals: [
        ['a1', 'a'],
        ['a2', 'a'],
        ['a3', 'a'],
        ['b1', 'b'],
      ],
      grantedAtOnce: ['a1', 'a2'],
      releaseOf: 'a1',
      thenGranted: ['b1'],
    },
    {
      case: 'one release admits, behind skipped waiters, the agent that has not had its turn',
      limits: { maxGlobal: 2, maxPerAgent: 1 },
      arrivals: [
        ['a1', 'a'],
        ['b1', 'b'],
        ['a2', 'a'],
        ['b2', 'b'],
        ['c1', 'c'],
      ],
      grantedAtOnce: ['a1', 'b1'],
      releaseOf: 'b1',
      thenGranted: ['c1'],
    },
  ];

  it.each(orderRows)('$case', ({ limits, arrivals, grantedAtOnce, releaseOf, thenGranted }) => {
    const l = limiter(limits);
    const out = arrivals.flatMap(([runId, agentId]) => l.send(acquire(runId, agentId)));
    expect(out.filter((e) => e.type === 'granted').map((e) => e.runId)).toEqual(grantedAtOnce);
    const after = l.send(release(releaseOf));
    expect(after.filter((e) => e.type === 'granted').map((e) => e.runId)).toEqual(thenGranted);
  });

  it('RELEASE of an unknown run is a no-op', () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 1 });
    l.send(acquire('r1', 'a'));
    l.send(acquire('r2', 'a'));
    const before = l.context();
    expect(l.send(release('ghost'))).toEqual([]);
    expect(l.context()).toEqual(before);
    expect(releaseRun(before, 'ghost')).toBe(before);
  });

  it('an ACQUIRE repeated right away does not queue the run twice', () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 1 });
    l.send(acquire('r1', 'a'));
    l.send(acquire('r2', 'a'));
    l.send(acquire('r2', 'a'));
    expect(waitersOf(l.context()).map((w) => w.runId)).toEqual(['r2']);
    expect(l.send(release('r1'))).toEqual([{ type: 'released', runId: 'r1' }, granted('r2')]);
    expect(waitersOf(l.context())).toEqual([]);
  });

  it('RELEASE of a waiter withdraws it without releasing anything', () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 1 });
    l.send(acquire('r1', 'a'));
    l.send(acquire('r2', 'b'));
    l.send(acquire('r3', 'c'));
    expect(l.send(release('r2'))).toEqual([]);
    expect(waitersOf(l.context())).toEqual([{ runId: 'r3', agentId: 'c', priority: 'interactive', order: 2 }]);
    expect(l.send(release('r1'))).toEqual([{ type: 'released', runId: 'r1' }, granted('r3')]);
  });

  it('a repeated ACQUIRE neither double-grants nor double-enlists', () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 1 });
    l.send(acquire('r1', 'a'));
    expect(l.send(acquire('r1', 'a'))).toEqual([]);
    l.send(acquire('r2', 'a'));
    l.send(acquire('r2', 'a'));
    expect(l.context()).toMatchObject({ inUse: 1 });
    expect(waitersOf(l.context())).toEqual([{ runId: 'r2', agentId: 'a', priority: 'interactive', order: 1 }]);
  });

  it('raising the limits admits waiters at once', () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 1 });
    for (const [runId, agentId] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
      ['a3', 'a'],
    ] as const)
      l.send(acquire(runId, agentId));
    expect(l.send({ type: 'RECONFIGURE', maxGlobal: 3, maxPerAgent: 1 })).toEqual([granted('b1')]);
    expect(l.send({ type: 'RECONFIGURE', maxGlobal: 3, maxPerAgent: 2 })).toEqual([granted('a2')]);
    expect(l.send({ type: 'RECONFIGURE', maxGlobal: 8, maxPerAgent: 3 })).toEqual([granted('a3')]);
  });

  it('lowering the limits preempts nothing, and grants resume only under the new limit', () => {
    const l = limiter({ maxGlobal: 3, maxPerAgent: 3 });
    for (const runId of ['r1', 'r2', 'r3']) l.send(acquire(runId, 'a'));
    l.send(acquire('w', 'b'));
    expect(l.send({ type: 'RECONFIGURE', maxGlobal: 1, maxPerAgent: 3 })).toEqual([]);
    expect(l.context()).toMatchObject({ inUse: 3, holders: { r1: 'a', r2: 'a', r3: 'a' } });
    expect(l.send(release('r1'))).toEqual([{ type: 'released', runId: 'r1' }]);
    expect(l.send(release('r2'))).toEqual([{ type: 'released', runId: 'r2' }]);
    expect(l.send(release('r3'))).toEqual([{ type: 'released', runId: 'r3' }, granted('w')]);
  });

  it('grantWaiters is pure: it returns a new context and leaves its argument alone', () => {
    const context: LimiterContext = {
      maxGlobal: 2,
      maxPerAgent: 1,
      weights: DEFAULT_WEIGHTS,
      holders: {},
      perAgent: {},
      inUse: 0,
      queues: {
        interactive: {
          a: queueOf(
            { runId: 'a1', agentId: 'a', priority: 'interactive', order: 0 },
            { runId: 'a2', agentId: 'a', priority: 'interactive', order: 1 },
          ),
          b: queueOf({ runId: 'b1', agentId: 'b', priority: 'interactive', order: 2 }),
        },
        background: {},
        batch: {},
      },
      arrivals: 3,
      fair: emptyFairQueue(),
    };
    const copy = structuredClone(context);
    const { next, granted: ids } = grantWaiters(context);
    expect(ids).toEqual(['a1', 'b1']);
    expect(next).toMatchObject({ inUse: 2, perAgent: { a: 1, b: 1 } });
    expect(waitersOf(next)).toEqual([{ runId: 'a2', agentId: 'a', priority: 'interactive', order: 1 }]);
    expect(context).toEqual(copy);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties.

const AGENTS = ['a', 'b', 'c'] as const;

type Command =
  | { kind: 'acquire'; agentId: string }
  | { kind: 'release'; pick: number }
  | { kind: 'releaseUnknown' }
  | { kind: 'reconfigure'; maxGlobal: number; maxPerAgent: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('acquire' as const), agentId: fc.constantFrom(...AGENTS) }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }), weight: 4 },
  { arbitrary: fc.constant({ kind: 'releaseUnknown' as const }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('reconfigure' as const),
      maxGlobal: fc.integer({ min: 1, max: 4 }),
      maxPerAgent: fc.integer({ min: 1, max: 3 }),
    }),
    weight: 1,
  },
);

const limits: fc.Arbitrary<LimiterInput> = fc.record({
  maxGlobal: fc.integer({ min: 1, max: 4 }),
  maxPerAgent: fc.integer({ min: 1, max: 3 }),
});

function fail(message: string): never {
  throw new Error(message);
}
function holds(condition: boolean, message: () => string): void {
  if (!condition) fail(message());
}

/** Bookkeeping must describe exactly the holders: counts derived, nothing stale. */
function checkBookkeeping(context: LimiterContext): void {
  const holders = Object.entries(context.holders);
  holds(context.inUse === holders.length, () => `inUse ${context.inUse} but ${holders.length} holders`);
  const perAgent: Record<string, number> = {};
  for (const [, agentId] of holders) perAgent[agentId] = (perAgent[agentId] ?? 0) + 1;
  holds(
    isDeepStrictEqual(perAgent, context.perAgent),
    () => `perAgent ${JSON.stringify(context.perAgent)} but holders give ${JSON.stringify(perAgent)}`,
  );
  const waiters = waitersOf(context);
  holds(
    waiters.every((w) => !(w.runId in context.holders)),
    () => 'a holder is also waiting',
  );
  holds(new Set(waiters.map((w) => w.runId)).size === waiters.length, () => 'a run waits twice');
  for (const [priority, ofClass] of Object.entries(context.queues)) {
    for (const [agentId, queue] of Object.entries(ofClass)) {
      const items = itemsOf(queue);
      holds(items.length > 0, () => `an empty queue is kept for ${agentId} in ${priority}`);
      holds(
        items.every(
          (w, i) => w.agentId === agentId && w.priority === priority && (i === 0 || items[i - 1]!.order < w.order),
        ),
        () => `the queue of ${agentId} in ${priority} is out of order or holds another's waiter`,
      );
    }
  }
}

/**
 * Replays commands on a real limiter and checks, after every event: grants within the limits,
 * each agent's waiters in arrival order, none left eligible and waiting; unknown releases change
 * nothing; lowering limits releases nobody. Returns the limiter and what each run experienced.
 */
function simulate(input: LimiterInput, commands: Command[]) {
  const l = limiter(input);
  const grantedRuns = new Set<string>();
  const withdrawn = new Set<string>();
  const acquired: string[] = [];
  let next = 0;

  const step = (event: LimiterEvent) => {
    const before = l.context();
    const out = l.send(event);
    const after = l.context();
    checkBookkeeping(after);
    const grants = out.filter((e) => e.type === 'granted').map((e) => e.runId);

    for (const runId of grants) {
      holds(!grantedRuns.has(runId), () => `${runId} granted twice`);
      grantedRuns.add(runId);
      const agentId = after.holders[runId] ?? fail(`${runId} granted but not a holder`);
      holds(
        after.perAgent[agentId]! <= after.maxPerAgent,
        () => `grant to ${runId} put agent ${agentId} over ${after.maxPerAgent}`,
      );
    }
    if (grants.length > 0)
      holds(after.inUse <= after.maxGlobal, () => `grant put inUse ${after.inUse} over ${after.maxGlobal}`);

    // Arrival order within an agent: no waiter of an agent is passed over for a later one of the same agent.
    const queue = [...waitersOf(before).map((w) => w.runId), ...(event.type === 'ACQUIRE' ? [event.runId] : [])];
    for (const runId of grants) {
      const agentId = after.holders[runId]!;
      const earlier = waitersOf(after).find(
        (w) => w.agentId === agentId && queue.indexOf(w.runId) < queue.indexOf(runId),
      );
      holds(
        earlier === undefined,
        () => `${runId} of agent ${agentId} granted before ${earlier?.runId}, which arrived earlier`,
      );
    }
    for (const waiter of waitersOf(after)) {
      const eligible = after.inUse < after.maxGlobal && (after.perAgent[waiter.agentId] ?? 0) < after.maxPerAgent;
      holds(!eligible, () => `${waiter.runId} waits though permits are free`);
    }
    return { before, out, after, grants };
  };

  for (const c of commands) {
    switch (c.kind) {
      case 'acquire': {
        const runId = `r${++next}`;
        acquired.push(runId);
        const { out, after } = step(acquire(runId, c.agentId));
        const position = waitersOf(after).some((w) => w.runId === runId) ? queuePosition(after, runId) : 0;
        holds(
          position > 0 ? isDeepStrictEqual(out, [waiting(runId, position)]) : grantedRuns.has(runId),
          () => `ACQUIRE ${runId}: ${JSON.stringify(out)}`,
        );
        break;
      }
      case 'release': {
        const known = [...Object.keys(l.context().holders), ...waitersOf(l.context()).map((w) => w.runId)];
        if (known.length === 0) break;
        const runId = known[c.pick % known.length]!;
        const wasHolder = runId in l.context().holders;
        if (!wasHolder) withdrawn.add(runId);
        const { out } = step(release(runId));
        // A holder's release is announced first (then any grants); a waiter just leaves, silently.
        holds(
          wasHolder ? isDeepStrictEqual(out[0], { type: 'released', runId }) : out.length === 0,
          () => `RELEASE ${runId}: ${JSON.stringify(out)}`,
        );
        break;
      }
      case 'releaseUnknown': {
        const { before, out, after } = step(release('ghost'));
        holds(
          out.length === 0 && isDeepStrictEqual(after, before),
          () => 'RELEASE of an unknown run changed something',
        );
        break;
      }
      case 'reconfigure': {
        const { before, out, after } = step({
          type: 'RECONFIGURE',
          maxGlobal: c.maxGlobal,
          maxPerAgent: c.maxPerAgent,
        });
        holds(
          out.every((e) => e.type === 'granted') &&
            Object.keys(before.holders).every((runId) => runId in after.holders),
          () => 'RECONFIGURE took permits from a running holder',
        );
        break;
      }
    }
  }
  return { l, step, grantedRuns, withdrawn, acquired };
}

describe('limiter, properties (fast-check)', () => {
  it('after every event: within the limits at every grant, arrival order within an agent, no eligible waiter left', () => {
    fc.assert(
      fc.property(limits, fc.array(command, { maxLength: 60 }), (input, commands) => {
        simulate(input, commands);
      }),
      { numRuns: 500 },
    );
  });

  it('every ACQUIRE is granted exactly once once enough RELEASEs happen (unless withdrawn while waiting)', () => {
    fc.assert(
      fc.property(limits, fc.array(command, { maxLength: 60 }), (input, commands) => {
        const { l, step, grantedRuns, withdrawn, acquired } = simulate(input, commands);
        for (let guard = 0; Object.keys(l.context().holders).length > 0; guard += 1) {
          holds(guard <= acquired.length, () => 'releasing every holder did not drain the limiter');
          step(release(Object.keys(l.context().holders)[0]!));
        }
        expect(waitersOf(l.context())).toEqual([]);
        expect(l.context().inUse).toBe(0);
        expect(acquired.filter((runId) => !grantedRuns.has(runId) && !withdrawn.has(runId))).toEqual([]);
        expect(acquired.filter((runId) => grantedRuns.has(runId) && withdrawn.has(runId))).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('raising both limits to fit everyone admits every waiter in that one event', () => {
    fc.assert(
      fc.property(limits, fc.array(command, { maxLength: 40 }), (input, commands) => {
        const { l, step } = simulate(input, commands);
        const waiters = waitersOf(l.context()).map((w) => w.runId);
        const { grants } = step({ type: 'RECONFIGURE', maxGlobal: 100, maxPerAgent: 100 });
        expect([...grants].sort()).toEqual([...waiters].sort());
        expect(waitersOf(l.context())).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('lowering the limits keeps every holder; no grant until usage is under the new limit', () => {
    fc.assert(
      fc.property(
        limits,
        fc.array(command, { maxLength: 40 }),
        fc.integer({ min: 1, max: 4 }),
        (input, commands, newMax) => {
          const { l, step } = simulate(input, commands);
          const holders = { ...l.context().holders };
          step({ type: 'RECONFIGURE', maxGlobal: newMax, maxPerAgent: 1 });
          for (const runId of Object.keys(holders)) expect(l.context().holders[runId]).toBe(holders[runId]);
          // Acquire more and release the old holders one by one: checks in step() hold throughout.
          for (const agentId of AGENTS) step(acquire(`late-${agentId}`, agentId));
          for (const runId of Object.keys(holders)) step(release(runId));
        },
      ),
      { numRuns: 300 },
    );
  });
});
