/*
 * Priority admission in the limiter (docs/runs.md, "Priorities"): weighted fair queueing across
 * the classes interactive / background / batch (default weights 4 / 2 / 1), turns across agents
 * within a class, arrival order within an agent. Shares measured under saturation, fairness
 * between agents, and — over long random workloads — a bound on every waiter's wait, counted in
 * grants, that follows from the weights: nothing starves.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import {
  grantWaiters,
  PRIORITIES,
  queuePosition,
  limiterMachine,
  waitersOf,
  waitingCount,
} from '../../machines/limiter.machine.js';
import type { Priority, PriorityWeights, LimiterEmitted, LimiterInput } from '../../machines/limiter.machine.js';

function limiter(input: LimiterInput) {
  const actor = createActor(limiterMachine, { input });
  const granted: string[] = [];
  const positions = new Map<string, number>();
  actor.on('*', (event: LimiterEmitted) => {
    if (event.type === 'granted') granted.push(event.runId);
    if (event.type === 'waiting') positions.set(event.runId, event.position);
  });
  actor.start();
  return {
    granted,
    positions,
    acquire: (runId: string, agentId: string, priority: Priority) =>
      actor.send({ type: 'ACQUIRE', runId, agentId, priority }),
    release: (runId: string) => actor.send({ type: 'RELEASE', runId }),
    context: () => actor.getSnapshot().context,
  };
}

const classOf = (runId: string) => runId.split('-')[0] as Priority;

/** One permit, `perClass` waiters of every class from 3 agents; grants one at a time and returns the order. */
function saturated(weights: PriorityWeights | undefined, perClass: number): string[] {
  const l = limiter({ maxGlobal: 1, maxPerAgent: 100, ...(weights ? { weights } : {}) });
  l.acquire('warmup', 'x', 'interactive');
  for (let i = 0; i < perClass; i++)
    for (const priority of PRIORITIES) l.acquire(`${priority}-${i}`, `agent${i % 3}`, priority);
  let holder = 'warmup';
  for (let i = 0; i < 3 * perClass; i++) {
    l.release(holder);
    holder = l.granted.at(-1)!;
  }
  return l.granted.slice(1);
}

function shares(order: string[]): Record<Priority, number> {
  const counts = { interactive: 0, background: 0, batch: 0 };
  for (const runId of order) counts[classOf(runId)] += 1;
  return {
    interactive: counts.interactive / order.length,
    background: counts.background / order.length,
    batch: counts.batch / order.length,
  };
}

describe('priority classes', () => {
  it('under saturation, the grants split by the weights 4 / 2 / 1, within 1 %', () => {
    // While every class has waiters: the first 630 grants of 3 × 400 waiters (interactive gets 360 of them).
    const measured = shares(saturated(undefined, 400).slice(0, 630));
    expect(measured.interactive).toBeCloseTo(4 / 7, 2);
    expect(measured.background).toBeCloseTo(2 / 7, 2);
    expect(measured.batch).toBeCloseTo(1 / 7, 2);
  });

  it('follows configured weights (8 / 3 / 1) the same way', () => {
    const measured = shares(saturated({ interactive: 8, background: 3, batch: 1 }, 500).slice(0, 600));
    expect(measured.interactive).toBeCloseTo(8 / 12, 2);
    expect(measured.background).toBeCloseTo(3 / 12, 2);
    expect(measured.batch).toBeCloseTo(1 / 12, 2);
  });

  it('in every window of 7 grants under saturation, each class gets exactly its share', () => {
    // 200 of each class: saturated for the first 343 grants (interactive gets 196 of them).
    const order = saturated(undefined, 200).slice(0, 343);
    for (let start = 0; start + 7 <= order.length; start++) {
      const window = shares(order.slice(start, start + 7));
      expect([window.interactive * 7, window.background * 7, window.batch * 7].map(Math.round)).toEqual([4, 2, 1]);
    }
  });

  it('a lone class gets every permit: weights only share what several classes want', () => {
    const l = limiter({ maxGlobal: 2, maxPerAgent: 5 });
    for (let i = 0; i < 4; i++) l.acquire(`batch-${i}`, 'a', 'batch');
    expect(l.granted).toEqual(['batch-0', 'batch-1']);
  });

  it('an interactive request arriving behind a backlog of batch jobs is served next', () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 100 });
    l.acquire('running', 'cron', 'batch');
    for (let i = 0; i < 50; i++) l.acquire(`batch-${i}`, 'cron', 'batch');
    l.acquire('interactive-0', 'chat', 'interactive');
    expect(l.positions.get('interactive-0')).toBe(1);
    l.release('running');
    expect(l.granted.at(-1)).toBe('interactive-0');
  });

  it("run.queued position: the place in the limiter's service order, not in arrival order", () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 100 });
    l.acquire('holder', 'a', 'batch');
    l.acquire('batch-1', 'a', 'batch');
    l.acquire('batch-2', 'a', 'batch');
    l.acquire('interactive-1', 'b', 'interactive');
    expect([l.positions.get('batch-1'), l.positions.get('batch-2'), l.positions.get('interactive-1')]).toEqual([
      1, 2, 1,
    ]);
  });
});

describe('agents within a class', () => {
  it("one agent's burst cannot keep another agent's single request waiting: it goes at the next turn", () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 100 });
    l.acquire('burst-0', 'bulk', 'interactive');
    for (let i = 1; i <= 50; i++) l.acquire(`burst-${i}`, 'bulk', 'interactive');
    l.acquire('single', 'alice', 'interactive');
    expect(l.positions.get('single')).toBe(1);
    l.release('burst-0');
    expect(l.granted.at(-1)).toBe('single');
  });

  it("agents take turns; each agent's runs keep their arrival order", () => {
    const l = limiter({ maxGlobal: 1, maxPerAgent: 100 });
    l.acquire('holder', 'z', 'background');
    for (const [runId, agent] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['a3', 'a'],
      ['b1', 'b'],
      ['c1', 'c'],
      ['b2', 'b'],
    ] as const)
      l.acquire(runId, agent, 'background');
    let holder = 'holder';
    for (let i = 0; i < 6; i++) {
      l.release(holder);
      holder = l.granted.at(-1)!;
    }
    expect(l.granted.slice(1)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });
});

// ---------------------------------------------------------------------------------------------
// For all workloads.

const AGENTS = ['a', 'b', 'c', 'd'] as const;
type Step = { kind: 'acquire'; priority: Priority; agent: number } | { kind: 'release'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('acquire' as const),
      priority: fc.constantFrom(...PRIORITIES),
      agent: fc.integer({ min: 0, max: AGENTS.length - 1 }),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }), weight: 2 },
);

/**
 * The most grants a waiter can see go to others before its own, as docs/runs.md derives it:
 * for each grant of its class c, another class d gets at most ⌊w_d / w_c⌋ + 2; for each turn of
 * its agent, another agent of c gets at most 3; its agent serves its runs in order.
 */
function waitBound(weights: PriorityWeights, priority: Priority, agents: number, ahead: number): number {
  const perGrantOfClass =
    1 +
    PRIORITIES.filter((p) => p !== priority).reduce((n, p) => n + Math.floor(weights[p] / weights[priority]) + 2, 0);
  return perGrantOfClass * (1 + 3 * (agents - 1)) * (ahead + 1);
}

/** Replays random steps on a limiter; returns it. */
function replayed(maxGlobal: number, weights: PriorityWeights, steps: Step[]) {
  const l = limiter({ maxGlobal, maxPerAgent: maxGlobal, weights });
  steps.forEach((s, i) => {
    if (s.kind === 'acquire') l.acquire(`r${i}`, AGENTS[s.agent]!, s.priority);
    else {
      const holders = Object.keys(l.context().holders);
      if (holders.length > 0) l.release(holders[s.pick % holders.length]!);
    }
  });
  return l;
}

const weightsArb = fc.record({
  interactive: fc.integer({ min: 1, max: 8 }),
  background: fc.integer({ min: 1, max: 8 }),
  batch: fc.integer({ min: 1, max: 8 }),
});

describe("the limiter's queue, for all workloads (fast-check)", () => {
  it("run.queued position is each waiter's place in the order the limiter then grants them, one permit at a time", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        weightsArb,
        fc.array(step, { maxLength: 120 }),
        (maxGlobal, weights, steps) => {
          const context = replayed(maxGlobal, weights, steps).context();
          const order: string[] = [];
          let ctx = { ...context, maxPerAgent: Number.POSITIVE_INFINITY, maxGlobal: context.inUse + 1 };
          while (waitingCount(ctx) > 0) {
            const { next, granted } = grantWaiters(ctx);
            order.push(...granted);
            ctx = { ...next, maxGlobal: next.inUse + 1 };
          }
          const waiters = waitersOf(context);
          expect(waiters.map((w) => queuePosition(context, w.runId))).toEqual(
            waiters.map((w) => order.indexOf(w.runId) + 1),
          );
        },
      ),
      { numRuns: 400 },
    );
  });

  it('over long random workloads every waiter is granted within the bound its class weight gives', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        weightsArb,
        fc.array(step, { minLength: 200, maxLength: 600 }),
        (maxGlobal, weights, steps) => {
          const l = limiter({ maxGlobal, maxPerAgent: maxGlobal, weights });
          const waiting = new Map<string, { priority: Priority; agent: string; ahead: number; grantsSeen: number }>();
          let worst = 0;
          let next = 0;
          const observe = (before: number) => {
            for (const runId of l.granted.slice(before)) {
              const w = waiting.get(runId);
              if (w) {
                const bound = waitBound(weights, w.priority, AGENTS.length, w.ahead);
                if (w.grantsSeen > bound)
                  throw new Error(
                    `${runId} (${w.priority}, ${w.agent}, ${w.ahead} ahead) waited ${w.grantsSeen} grants, bound ${bound}`,
                  );
                worst = Math.max(worst, w.grantsSeen);
                waiting.delete(runId);
              }
              for (const other of waiting.values()) other.grantsSeen += 1;
            }
          };
          for (const s of steps) {
            const before = l.granted.length;
            if (s.kind === 'acquire') {
              const runId = `r${next++}`;
              const agent = AGENTS[s.agent]!;
              const ahead = waitersOf(l.context()).filter(
                (w) => w.agentId === agent && w.priority === s.priority,
              ).length;
              waiting.set(runId, { priority: s.priority, agent, ahead, grantsSeen: 0 });
              l.acquire(runId, agent, s.priority);
            } else {
              const holders = Object.keys(l.context().holders);
              if (holders.length > 0) l.release(holders[s.pick % holders.length]!);
            }
            observe(before);
          }
          // Drain: release holders until nobody waits; everyone gets in.
          for (let guard = 0; waitingCount(l.context()) > 0; guard++) {
            if (guard > next) throw new Error('the limiter stopped granting');
            const before = l.granted.length;
            l.release(Object.keys(l.context().holders)[0]!);
            observe(before);
          }
          expect(waiting.size).toBe(0);
          return worst >= 0;
        },
      ),
      { numRuns: 150 },
    );
  });
});
