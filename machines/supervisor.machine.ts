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
 * Where each class and each agent of a class stands (stride scheduling, in whole numbers).
 * Granting a run of class c moves c's pass on by its stride, `scale / weight(c)` with `scale`
 * the product of the weights, and the agent's pass in c by 1; the limiter grants the class with
 * the least pass, then the agent with the least pass in it. `now` is the pass of the latest
 * grant (the virtual time), per class for the agents.
 */
export interface FairQueue {
  scale: number;
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

const scaleOf = (weights: PriorityWeights) => weights.interactive * weights.background * weights.batch;
const strideOf = (fair: FairQueue, weights: PriorityWeights, priority: Priority) => fair.scale / weights[priority];

export function emptyFairQueue(weights: PriorityWeights = DEFAULT_WEIGHTS): FairQueue {
  return { scale: scaleOf(weights), pass: { interactive: 0, background: 0, batch: 0 }, now: 0, agentPass: {}, agentNow: { interactive: 0, background: 0, batch: 0 } };
}

/** The same standing in the units of new weights (a reload keeps who is ahead, up to rounding). */
export function rescaled(fair: FairQueue, weights: PriorityWeights): FairQueue {
  const scale = scaleOf(weights);
  if (scale === fair.scale) return fair;
  const to = (n: number) => Math.round((n * scale) / fair.scale);
  return { ...fair, scale, now: to(fair.now), pass: { interactive: to(fair.pass.interactive), background: to(fair.pass.background), batch: to(fair.pass.batch) } };
}

/**
 * A class's pass as it competes now: one that waited idle, or whose waiters were all held back
 * by their agent's cap, keeps at most one stride of credit — it neither hoards priority while
 * away nor loses its turn when it comes back.
 */
function classPass(fair: FairQueue, weights: PriorityWeights, priority: Priority): number {
  return Math.max(fair.pass[priority], fair.now - strideOf(fair, weights, priority));
}

function agentPass(fair: FairQueue, priority: Priority, agentId: string): number {
  return Math.max(fair.agentPass[agentKey(priority, agentId)] ?? 0, fair.agentNow[priority] - 1);
}

function copyOf(fair: FairQueue): FairQueue {
  return { ...fair, pass: { ...fair.pass }, agentPass: { ...fair.agentPass }, agentNow: { ...fair.agentNow } };
}

/** Grants a run of `agentId` in `priority` on a copy the caller owns: its class and its agent move on by one stride. */
function serve(fair: FairQueue, weights: PriorityWeights, { priority, agentId }: Pick<PermitWaiter, 'priority' | 'agentId'>): void {
  const pass = classPass(fair, weights, priority);
  const ofAgent = agentPass(fair, priority, agentId);
  fair.pass[priority] = pass + strideOf(fair, weights, priority);
  fair.now = Math.max(fair.now, pass);
  fair.agentPass[agentKey(priority, agentId)] = ofAgent + 1;
  fair.agentNow[priority] = Math.max(fair.agentNow[priority], ofAgent);
}

/** The waiters by class, then by agent (in the order of their earliest waiter), each agent's in arrival order. */
type WaiterIndex = Record<Priority, Map<string, { order: number; waiter: PermitWaiter }[]>>;

function indexWaiters(waiters: readonly PermitWaiter[]): WaiterIndex {
  const index: WaiterIndex = { interactive: new Map(), background: new Map(), batch: new Map() };
  waiters.forEach((waiter, order) => {
    const byAgent = index[waiter.priority];
    const queue = byAgent.get(waiter.agentId);
    if (queue) queue.push({ order, waiter });
    else byAgent.set(waiter.agentId, [{ order, waiter }]);
  });
  return index;
}

function someKey(map: Map<string, unknown>, test: (key: string) => boolean): boolean {
  for (const key of map.keys()) if (test(key)) return true;
  return false;
}

/**
 * Takes the waiter served next out of `index`: the class with the least pass (ties: interactive,
 * background, batch), in it the agent with the least pass (ties: the one whose front waiter came
 * first), and that agent's earliest waiter of the class. Agents `eligible` rejects are skipped.
 */
function takeNext(index: WaiterIndex, fair: FairQueue, weights: PriorityWeights, eligible: (agentId: string) => boolean): PermitWaiter | undefined {
  let best: { priority: Priority; pass: number } | undefined;
  for (const priority of PRIORITIES) {
    if (!someKey(index[priority], eligible)) continue;
    const pass = classPass(fair, weights, priority);
    if (!best || pass < best.pass) best = { priority, pass };
  }
  if (!best) return undefined;
  const byAgent = index[best.priority];
  let chosen: { agentId: string; pass: number; order: number } | undefined;
  for (const [agentId, queue] of byAgent) {
    if (!eligible(agentId)) continue;
    const pass = agentPass(fair, best.priority, agentId);
    const order = queue[0]!.order;
    if (!chosen || pass < chosen.pass || (pass === chosen.pass && order < chosen.order)) chosen = { agentId, pass, order };
  }
  const queue = byAgent.get(chosen!.agentId)!;
  const { waiter } = queue.shift()!;
  if (queue.length === 0) byAgent.delete(chosen!.agentId);
  return waiter;
}

/** Grants waiters while permits are free, in fair-queueing order, skipping agents at their cap; pure. */
export function grantWaiters(context: SupervisorContext): { next: SupervisorContext; granted: string[] } {
  if (context.waiters.length === 0 || context.inUse >= context.maxGlobal) return { next: context, granted: [] };
  const perAgent = { ...context.perAgent };
  const holders = { ...context.holders };
  const index = indexWaiters(context.waiters);
  const underCap = (agentId: string) => (perAgent[agentId] ?? 0) < context.maxPerAgent;
  const fair = copyOf(context.fair);
  const granted: string[] = [];
  let inUse = context.inUse;
  while (inUse < context.maxGlobal) {
    const waiter = takeNext(index, fair, context.weights, underCap);
    if (!waiter) break;
    serve(fair, context.weights, waiter);
    perAgent[waiter.agentId] = (perAgent[waiter.agentId] ?? 0) + 1;
    holders[waiter.runId] = waiter.agentId;
    inUse += 1;
    granted.push(waiter.runId);
  }
  if (granted.length === 0) return { next: context, granted };
  const taken = new Set(granted);
  const waiters = context.waiters.filter((w) => !taken.has(w.runId));
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
 * permits to free up one by one (agent caps aside): what `run.queued` reports. Computed, not
 * replayed, in one pass over the waiters: with every class and agent backlogged, the passes
 * at which each is served form arithmetic runs, so the grants ahead of the waiter can be
 * counted. Pure.
 */
export function queuePosition(context: SupervisorContext, runId: string): number {
  const { fair, weights } = context;
  const target = context.waiters.find((w) => w.runId === runId);
  if (!target) return 0;
  // Inside its class: each agent's waiters are served at its pass, pass + 1, …; ties by arrival.
  const seen = new Map<string, number>();
  const keyed = context.waiters.flatMap((waiter, order) => {
    if (waiter.priority !== target.priority) return [];
    const nth = seen.get(waiter.agentId) ?? 0;
    seen.set(waiter.agentId, nth + 1);
    return [{ waiter, order, key: agentPass(fair, waiter.priority, waiter.agentId) + nth }];
  });
  const mine = keyed.find((k) => k.waiter === target)!;
  const ofClass = 1 + keyed.filter((k) => k.key < mine.key || (k.key === mine.key && k.order < mine.order)).length;
  // Across classes: class d is served at its pass, pass + stride, …, ties in the order of PRIORITIES.
  const at = classPass(fair, weights, target.priority) + (ofClass - 1) * strideOf(fair, weights, target.priority);
  let ahead = ofClass - 1;
  for (const other of PRIORITIES) {
    if (other === target.priority) continue;
    const waiting = context.waiters.filter((w) => w.priority === other).length;
    const first = classPass(fair, weights, other);
    if (waiting === 0 || first > at) continue;
    const stride = strideOf(fair, weights, other);
    const tieGoesFirst = PRIORITIES.indexOf(other) < PRIORITIES.indexOf(target.priority);
    const upTo = Math.floor((at - first) / stride);
    const servedBefore = first + upTo * stride === at && !tieGoesFirst ? upTo : upTo + 1;
    ahead += Math.min(waiting, servedBefore);
  }
  return ahead + 1;
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
    applyLimits: assign(({ context, event }) => {
      if (event.type !== 'RECONFIGURE') return context;
      const weights = event.weights ?? context.weights;
      return { ...context, maxGlobal: event.maxGlobal, maxPerAgent: event.maxPerAgent, weights, fair: rescaled(context.fair, weights) };
    }),
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
    fair: emptyFairQueue(input.weights ?? DEFAULT_WEIGHTS),
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
