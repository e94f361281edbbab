/*
 * The limiter (ConcurrencyLimiter): global and per-agent run permits, held for the lifetime
 * of a run. Waiters are served by weighted fair queueing (stride scheduling): across priority
 * classes by their weights, within a class by turns across agents, within an agent in arrival
 * order; a waiter whose agent is at its cap is skipped, so one agent at its cap never blocks
 * another (docs/runs.md, "Priorities"). Grants and waits are announced as emitted events; the
 * engine listens. Pure: no clock, no I/O.
 */
import { assign, enqueueActions, setup } from 'xstate';

export type Priority = 'interactive' | 'background' | 'batch';

/** Ties go to the earlier class of this list. */
export const PRIORITIES: readonly Priority[] = ['interactive', 'background', 'batch'];

export type PriorityWeights = Record<Priority, number>;

export interface PermitWaiter {
  runId: string;
  agentId: string;
  priority: Priority;
}

/**
 * Where each class and each agent of a class stands. Granting a run of class c moves c's pass
 * on by 1 / weight(c), and the agent's pass in c by 1; the limiter grants the class with the
 * least pass, then the agent with the least pass in it. `now` is the pass of the last grant
 * (the virtual time), per class for the agents.
 */
export interface FairQueue {
  pass: Record<Priority, number>;
  now: number;
  /** `${priority} ${agentId}` -> the agent's pass in that class. */
  agentPass: Record<string, number>;
  agentNow: Record<Priority, number>;
}

export interface SupervisorContext {
  maxGlobal: number;
  maxPerAgent: number;
  weights: PriorityWeights;
  /** runId -> agentId of every run holding permits. */
  holders: Record<string, string>;
  perAgent: Record<string, number>;
  inUse: number;
  /** In arrival order. */
  waiters: PermitWaiter[];
  fair: FairQueue;
}

export type SupervisorEvent =
  | { type: 'ACQUIRE'; runId: string; agentId: string; priority?: Priority }
  | { type: 'RELEASE'; runId: string }
  | { type: 'RECONFIGURE'; maxGlobal: number; maxPerAgent: number; weights?: PriorityWeights };

export type SupervisorEmitted =
  | { type: 'granted'; runId: string }
  | { type: 'waiting'; runId: string; position: number }
  | { type: 'released'; runId: string };

export interface SupervisorInput {
  maxGlobal: number;
  maxPerAgent: number;
  weights?: PriorityWeights;
}

export const DEFAULT_WEIGHTS: PriorityWeights = { interactive: 4, background: 2, batch: 1 };

const agentKey = (priority: Priority, agentId: string) => `${priority} ${agentId}`;

export function emptyFairQueue(): FairQueue {
  return { pass: { interactive: 0, background: 0, batch: 0 }, now: 0, agentPass: {}, agentNow: { interactive: 0, background: 0, batch: 0 } };
}

/**
 * A class's pass as it competes now: one that waited idle, or whose waiters were all held back
 * by their agent's cap, keeps at most one stride of credit — it neither hoards priority while
 * away nor loses its turn when it comes back.
 */
function classPass(fair: FairQueue, weights: PriorityWeights, priority: Priority): number {
  return Math.max(fair.pass[priority], fair.now - 1 / weights[priority]);
}

function agentPass(fair: FairQueue, priority: Priority, agentId: string): number {
  return Math.max(fair.agentPass[agentKey(priority, agentId)] ?? 0, fair.agentNow[priority] - 1);
}

/**
 * The waiter served next among `candidates` (in arrival order): the class with the least
 * pass (ties: interactive, background, batch), in it the agent with the least pass (ties: the
 * one waiting longest), and that agent's earliest waiter of the class. Pure.
 */
export function nextWaiter(fair: FairQueue, weights: PriorityWeights, candidates: readonly PermitWaiter[]): PermitWaiter | undefined {
  let best: { priority: Priority; pass: number } | undefined;
  for (const priority of PRIORITIES) {
    if (!candidates.some((w) => w.priority === priority)) continue;
    const pass = classPass(fair, weights, priority);
    if (!best || pass < best.pass) best = { priority, pass };
  }
  if (!best) return undefined;
  let chosen: { waiter: PermitWaiter; pass: number } | undefined;
  for (const waiter of candidates) {
    if (waiter.priority !== best.priority) continue;
    const pass = agentPass(fair, waiter.priority, waiter.agentId);
    if (!chosen || pass < chosen.pass) chosen = { waiter, pass };
  }
  return chosen?.waiter;
}

/** The queue after granting `waiter`: its class and its agent move on by one stride. Pure. */
export function served(fair: FairQueue, weights: PriorityWeights, waiter: PermitWaiter): FairQueue {
  const { priority, agentId } = waiter;
  const pass = classPass(fair, weights, priority);
  const ofAgent = agentPass(fair, priority, agentId);
  return {
    pass: { ...fair.pass, [priority]: pass + 1 / weights[priority] },
    now: pass,
    agentPass: { ...fair.agentPass, [agentKey(priority, agentId)]: ofAgent + 1 },
    agentNow: { ...fair.agentNow, [priority]: ofAgent },
  };
}

/** Grants waiters while permits are free, in fair-queueing order, skipping agents at their cap; pure. */
export function grantWaiters(context: SupervisorContext): { next: SupervisorContext; granted: string[] } {
  if (context.waiters.length === 0 || context.inUse >= context.maxGlobal) return { next: context, granted: [] };
  const perAgent = { ...context.perAgent };
  const holders = { ...context.holders };
  let waiters = context.waiters;
  let fair = context.fair;
  const granted: string[] = [];
  let inUse = context.inUse;
  while (inUse < context.maxGlobal) {
    const eligible = waiters.filter((w) => (perAgent[w.agentId] ?? 0) < context.maxPerAgent);
    const waiter = nextWaiter(fair, context.weights, eligible);
    if (!waiter) break;
    fair = served(fair, context.weights, waiter);
    perAgent[waiter.agentId] = (perAgent[waiter.agentId] ?? 0) + 1;
    holders[waiter.runId] = waiter.agentId;
    inUse += 1;
    granted.push(waiter.runId);
    waiters = waiters.filter((w) => w !== waiter);
  }
  if (granted.length === 0) return { next: context, granted };
  return { next: { ...context, perAgent, holders, inUse, waiters, fair: forgetCaughtUp(fair) }, granted };
}

/** Drops agents' passes that the clamp makes equal to having none, so agent ids do not pile up. */
function forgetCaughtUp(fair: FairQueue): FairQueue {
  const agentPass: Record<string, number> = {};
  for (const [key, pass] of Object.entries(fair.agentPass)) {
    const priority = key.slice(0, key.indexOf(' ')) as Priority;
    if (pass > fair.agentNow[priority] - 1) agentPass[key] = pass;
  }
  return { ...fair, agentPass };
}

/**
 * The waiter's 1-based place in the order the limiter would serve the current waiters, were
 * permits to free up one by one (agent caps aside): what `run.queued` reports. Pure.
 */
export function queuePosition(context: SupervisorContext, runId: string): number {
  let fair = context.fair;
  let waiters = context.waiters;
  for (let position = 1; waiters.length > 0; position++) {
    const waiter = nextWaiter(fair, context.weights, waiters)!;
    if (waiter.runId === runId) return position;
    fair = served(fair, context.weights, waiter);
    waiters = waiters.filter((w) => w !== waiter);
  }
  return 0;
}

/** Returns the permits of a holder, or drops a waiter; a no-op for unknown runs. */
export function releaseRun(context: SupervisorContext, runId: string): SupervisorContext {
  const agentId = context.holders[runId];
  if (agentId === undefined) {
    const waiters = context.waiters.filter((w) => w.runId !== runId);
    return waiters.length === context.waiters.length ? context : { ...context, waiters };
  }
  const holders = { ...context.holders };
  delete holders[runId];
  const perAgent = { ...context.perAgent };
  const left = (perAgent[agentId] ?? 1) - 1;
  if (left > 0) perAgent[agentId] = left;
  else delete perAgent[agentId];
  return { ...context, holders, perAgent, inUse: context.inUse - 1 };
}

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
    emitted: {} as SupervisorEmitted,
  },
  actions: {
    enlist: assign({
      waiters: ({ context, event }) =>
        event.type === 'ACQUIRE' && !(event.runId in context.holders) && !context.waiters.some((w) => w.runId === event.runId)
          ? [...context.waiters, { runId: event.runId, agentId: event.agentId, priority: event.priority ?? 'interactive' }]
          : context.waiters,
    }),
    release: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'RELEASE') return;
      const wasHolder = event.runId in context.holders;
      enqueue.assign(releaseRun(context, event.runId));
      if (wasHolder) enqueue.emit({ type: 'released', runId: event.runId });
    }),
    applyLimits: assign(({ context, event }) =>
      event.type === 'RECONFIGURE'
        ? { ...context, maxGlobal: event.maxGlobal, maxPerAgent: event.maxPerAgent, weights: event.weights ?? context.weights }
        : context,
    ),
    grantWaiters: enqueueActions(({ context, enqueue }) => {
      const { next, granted } = grantWaiters(context);
      if (granted.length === 0) return;
      enqueue.assign(next);
      for (const runId of granted) enqueue.emit({ type: 'granted', runId });
    }),
    announceWaiting: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'ACQUIRE' || !context.waiters.some((w) => w.runId === event.runId)) return;
      enqueue.emit({ type: 'waiting', runId: event.runId, position: queuePosition(context, event.runId) });
    }),
  },
}).createMachine({
  id: 'supervisor',
  context: ({ input }) => ({
    maxGlobal: input.maxGlobal,
    maxPerAgent: input.maxPerAgent,
    weights: input.weights ?? DEFAULT_WEIGHTS,
    holders: {},
    perAgent: {},
    inUse: 0,
    waiters: [],
    fair: emptyFairQueue(),
  }),
  initial: 'limiting',
  states: {
    limiting: {
      on: {
        ACQUIRE: { actions: ['enlist', 'grantWaiters', 'announceWaiting'] },
        RELEASE: { actions: ['release', 'grantWaiters'] },
        RECONFIGURE: { actions: ['applyLimits', 'grantWaiters'] },
      },
    },
  },
});
