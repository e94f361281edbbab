/*
 * The limiter (ConcurrencyLimiter): global and per-agent run permits, held for the lifetime
 * of a run. Waiters are served by weighted fair queueing (stride scheduling): across priority
 * classes by their weights, within a class by turns across agents, within an agent in arrival
 * order; a waiter whose agent is at its cap is skipped, so one agent at its cap never blocks
 * another (docs/runs.md, "Priorities"). Grants and waits are announced as emitted events; the
 * engine listens. Pure: no clock, no I/O.
 */
import { assign, enqueueActions, setup } from 'xstate';
import {
  backOf,
  emptyQueue,
  frontOf,
  itemsOf,
  popped,
  pushed,
  sizeOf,
  someItem,
  withoutItems,
  type WaitQueue,
} from './wait-queue.js';

export type Priority = 'interactive' | 'background' | 'batch';

/** Ties go to the earlier class of this list. */
export const PRIORITIES: readonly Priority[] = ['interactive', 'background', 'batch'];

export type PriorityWeights = Record<Priority, number>;

export interface PermitWaiter {
  runId: string;
  agentId: string;
  priority: Priority;
  /** Its arrival, counted from 0: ties between agents go to the earliest. */
  order: number;
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

export interface LimiterContext {
  maxGlobal: number;
  maxPerAgent: number;
  weights: PriorityWeights;
  /** runId -> agentId of every run holding permits. */
  holders: Record<string, string>;
  perAgent: Record<string, number>;
  inUse: number;
  /** Who waits, by class and by agent, each agent's in arrival order (agents with none are absent). */
  queues: WaitQueues;
  /** Waiters so far: the next one's `order`. */
  arrivals: number;
  fair: FairQueue;
}

export type WaitQueues = Record<Priority, Record<string, WaitQueue<PermitWaiter>>>;

export const noQueues = (): WaitQueues => ({ interactive: {}, background: {}, batch: {} });

/** The queues with the queue of `agentId` in `priority` replaced (dropped when empty); copies only that class. */
function withQueue(
  queues: WaitQueues,
  priority: Priority,
  agentId: string,
  queue: WaitQueue<PermitWaiter>,
): WaitQueues {
  const ofClass = { ...queues[priority] };
  if (sizeOf(queue) > 0) ofClass[agentId] = queue;
  else delete ofClass[agentId];
  return { ...queues, [priority]: ofClass };
}

/** Every waiter, in arrival order. */
export function waitersOf(context: Pick<LimiterContext, 'queues'>): PermitWaiter[] {
  const all: PermitWaiter[] = [];
  for (const priority of PRIORITIES)
    for (const agentId in context.queues[priority]) all.push(...itemsOf(context.queues[priority][agentId]!));
  return all.sort((a, b) => a.order - b.order);
}

export function waitingCount(context: Pick<LimiterContext, 'queues'>): number {
  let count = 0;
  for (const priority of PRIORITIES)
    for (const agentId in context.queues[priority]) count += sizeOf(context.queues[priority][agentId]!);
  return count;
}

export type LimiterEvent =
  | { type: 'ACQUIRE'; runId: string; agentId: string; priority?: Priority }
  | { type: 'RELEASE'; runId: string }
  | { type: 'RECONFIGURE'; maxGlobal: number; maxPerAgent: number; weights?: PriorityWeights };

export type LimiterEmitted =
  | { type: 'granted'; runId: string }
  | { type: 'waiting'; runId: string; position: number }
  | { type: 'released'; runId: string };

export interface LimiterInput {
  maxGlobal: number;
  maxPerAgent: number;
  weights?: PriorityWeights;
}

export const DEFAULT_WEIGHTS: PriorityWeights = { interactive: 4, background: 2, batch: 1 };

const agentKey = (priority: Priority, agentId: string) => `${priority} ${agentId}`;

const scaleOf = (weights: PriorityWeights) => weights.interactive * weights.background * weights.batch;
const strideOf = (fair: FairQueue, weights: PriorityWeights, priority: Priority) => fair.scale / weights[priority];

export function emptyFairQueue(weights: PriorityWeights = DEFAULT_WEIGHTS): FairQueue {
  return {
    scale: scaleOf(weights),
    pass: { interactive: 0, background: 0, batch: 0 },
    now: 0,
    agentPass: {},
    agentNow: { interactive: 0, background: 0, batch: 0 },
  };
}

/** The same standing in the units of new weights (a reload keeps who is ahead, up to rounding). */
export function rescaled(fair: FairQueue, weights: PriorityWeights): FairQueue {
  const scale = scaleOf(weights);
  if (scale === fair.scale) return fair;
  const to = (n: number) => Math.round((n * scale) / fair.scale);
  return {
    ...fair,
    scale,
    now: to(fair.now),
    pass: { interactive: to(fair.pass.interactive), background: to(fair.pass.background), batch: to(fair.pass.batch) },
  };
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
function serve(
  fair: FairQueue,
  weights: PriorityWeights,
  { priority, agentId }: Pick<PermitWaiter, 'priority' | 'agentId'>,
): void {
  const pass = classPass(fair, weights, priority);
  const ofAgent = agentPass(fair, priority, agentId);
  fair.pass[priority] = pass + strideOf(fair, weights, priority);
  fair.now = Math.max(fair.now, pass);
  fair.agentPass[agentKey(priority, agentId)] = ofAgent + 1;
  fair.agentNow[priority] = Math.max(fair.agentNow[priority], ofAgent);
}

/**
 * The waiter served next: the class with the least pass (ties: interactive, background,
 * batch), in it the agent with the least pass (ties: the one whose earliest waiter came
 * first), and that agent's earliest waiter of the class; undefined when none may go. Agents
 * `eligible` rejects are skipped. It looks only at the front of each agent's queue.
 */
function nextWaiter(
  queues: WaitQueues,
  fair: FairQueue,
  weights: PriorityWeights,
  eligible: (agentId: string) => boolean,
): PermitWaiter | undefined {
  let best: { priority: Priority; pass: number } | undefined;
  for (const priority of PRIORITIES) {
    let any = false;
    for (const agentId in queues[priority]) {
      if (eligible(agentId)) {
        any = true;
        break;
      }
    }
    if (!any) continue;
    const pass = classPass(fair, weights, priority);
    if (!best || pass < best.pass) best = { priority, pass };
  }
  if (!best) return undefined;
  let chosen: { pass: number; waiter: PermitWaiter } | undefined;
  for (const agentId in queues[best.priority]) {
    if (!eligible(agentId)) continue;
    const waiter = frontOf(queues[best.priority][agentId]!)!;
    const pass = agentPass(fair, best.priority, agentId);
    if (!chosen || pass < chosen.pass || (pass === chosen.pass && waiter.order < chosen.waiter.order))
      chosen = { pass, waiter };
  }
  return chosen!.waiter;
}

/** Grants waiters while permits are free, in fair-queueing order, skipping agents at their cap; pure. */
export function grantWaiters(context: LimiterContext): { next: LimiterContext; granted: string[] } {
  if (context.inUse >= context.maxGlobal) return { next: context, granted: [] };
  const perAgent = { ...context.perAgent };
  const underCap = (agentId: string) => (perAgent[agentId] ?? 0) < context.maxPerAgent;
  const fair = copyOf(context.fair);
  const holders = { ...context.holders };
  const granted: string[] = [];
  let queues = context.queues;
  let inUse = context.inUse;
  while (inUse < context.maxGlobal) {
    const waiter = nextWaiter(queues, fair, context.weights, underCap);
    if (!waiter) break;
    queues = withQueue(queues, waiter.priority, waiter.agentId, popped(queues[waiter.priority][waiter.agentId]!));
    serve(fair, context.weights, waiter);
    perAgent[waiter.agentId] = (perAgent[waiter.agentId] ?? 0) + 1;
    holders[waiter.runId] = waiter.agentId;
    inUse += 1;
    granted.push(waiter.runId);
  }
  if (granted.length === 0) return { next: context, granted };
  return { next: { ...context, perAgent, holders, inUse, queues, fair: forgetCaughtUp(fair) }, granted };
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
export function queuePosition(context: LimiterContext, runId: string): number {
  const newest = newestWaiter(context);
  if (newest?.runId === runId) return positionOfNewest(context, newest);
  const { fair } = context;
  const waiters = waitersOf(context);
  const mine = waiters.findIndex((w) => w.runId === runId);
  if (mine < 0) return 0;
  const target = waiters[mine]!;
  // Inside its class: each agent's waiters are served at its pass, pass + 1, …; ties by arrival.
  const passOf = new Map<string, number>();
  const keyOf = (agentId: string, nth: number) => {
    let pass = passOf.get(agentId);
    if (pass === undefined) passOf.set(agentId, (pass = agentPass(fair, target.priority, agentId)));
    return pass + nth;
  };
  let nthOfMine = 0;
  for (let i = 0; i < mine; i++)
    if (waiters[i]!.priority === target.priority && waiters[i]!.agentId === target.agentId) nthOfMine += 1;
  const myKey = keyOf(target.agentId, nthOfMine);
  const seen = new Map<string, number>();
  const waiting: Record<Priority, number> = { interactive: 0, background: 0, batch: 0 };
  let ofClass = 1;
  for (let i = 0; i < waiters.length; i++) {
    const { agentId, priority } = waiters[i]!;
    waiting[priority] += 1;
    if (priority !== target.priority) continue;
    const nth = seen.get(agentId) ?? 0;
    seen.set(agentId, nth + 1);
    const key = keyOf(agentId, nth);
    if (key < myKey || (key === myKey && i < mine)) ofClass += 1;
  }
  return positionAcrossClasses(context, target.priority, ofClass - 1, waiting);
}

/**
 * The 1-based place of a waiter with `aheadInClass` of its own class before it: class d is
 * served at its pass, pass + stride, …, ties in the order of PRIORITIES; `waiting` counts each class.
 */
function positionAcrossClasses(
  context: LimiterContext,
  priority: Priority,
  aheadInClass: number,
  waiting: Record<Priority, number>,
): number {
  const { fair, weights } = context;
  const at = classPass(fair, weights, priority) + aheadInClass * strideOf(fair, weights, priority);
  let ahead = aheadInClass;
  for (const other of PRIORITIES) {
    if (other === priority) continue;
    const first = classPass(fair, weights, other);
    if (waiting[other] === 0 || first > at) continue;
    const stride = strideOf(fair, weights, other);
    const tieGoesFirst = PRIORITIES.indexOf(other) < PRIORITIES.indexOf(priority);
    const upTo = Math.floor((at - first) / stride);
    ahead += Math.min(waiting[other], first + upTo * stride === at && !tieGoesFirst ? upTo : upTo + 1);
  }
  return ahead + 1;
}

/** The waiter that came last, if it still waits: the back of one agent's queue. */
function newestWaiter(context: LimiterContext): PermitWaiter | undefined {
  for (const priority of PRIORITIES) {
    for (const agentId in context.queues[priority]) {
      const back = backOf(context.queues[priority][agentId]!)!;
      if (back.order === context.arrivals - 1) return back;
    }
  }
  return undefined;
}

/**
 * queuePosition of the waiter that came last (what ACQUIRE announces), from the counts alone:
 * every other waiter came earlier, so in its class each agent's waiters with a key up to the
 * newest one's go first — `min(count, key - pass + 1)` of them — and its own agent's all do.
 */
function positionOfNewest(context: LimiterContext, target: PermitWaiter): number {
  const { fair, queues } = context;
  const ofClass = queues[target.priority];
  const nth = sizeOf(ofClass[target.agentId]!) - 1;
  const myKey = agentPass(fair, target.priority, target.agentId) + nth;
  let ahead = nth;
  for (const agentId in ofClass) {
    if (agentId === target.agentId) continue;
    const below = myKey - agentPass(fair, target.priority, agentId) + 1;
    if (below > 0) ahead += Math.min(sizeOf(ofClass[agentId]!), below);
  }
  const waiting: Record<Priority, number> = { interactive: 0, background: 0, batch: 0 };
  for (const priority of PRIORITIES)
    for (const agentId in queues[priority]) waiting[priority] += sizeOf(queues[priority][agentId]!);
  return positionAcrossClasses(context, target.priority, ahead, waiting);
}

/** Returns the permits of a holder, or drops a waiter; a no-op for unknown runs. */
export function releaseRun(context: LimiterContext, runId: string): LimiterContext {
  const agentId = context.holders[runId];
  if (agentId === undefined) {
    for (const priority of PRIORITIES) {
      for (const agent in context.queues[priority]) {
        const queue = context.queues[priority][agent]!;
        if (!someItem(queue, (w) => w.runId === runId)) continue;
        return {
          ...context,
          queues: withQueue(
            context.queues,
            priority,
            agent,
            withoutItems(queue, (w) => w.runId === runId),
          ),
        };
      }
    }
    return context;
  }
  const holders = { ...context.holders };
  delete holders[runId];
  const perAgent = { ...context.perAgent };
  const left = (perAgent[agentId] ?? 1) - 1;
  if (left > 0) perAgent[agentId] = left;
  else delete perAgent[agentId];
  return { ...context, holders, perAgent, inUse: context.inUse - 1 };
}

export const limiterMachine = setup({
  types: {
    context: {} as LimiterContext,
    events: {} as LimiterEvent,
    input: {} as LimiterInput,
    emitted: {} as LimiterEmitted,
  },
  actions: {
    enlist: assign(({ context, event }) => {
      if (event.type !== 'ACQUIRE' || event.runId in context.holders) return context;
      const priority = event.priority ?? 'interactive';
      const queue = context.queues[priority][event.agentId] ?? emptyQueue<PermitWaiter>();
      // A run asks once (its chart's `queued` entry); a repeat sent right away is ignored here
      // without scanning the queue, which may hold thousands.
      if (backOf(queue)?.runId === event.runId) return context;
      const waiter: PermitWaiter = { runId: event.runId, agentId: event.agentId, priority, order: context.arrivals };
      return {
        ...context,
        queues: withQueue(context.queues, priority, event.agentId, pushed(queue, waiter)),
        arrivals: context.arrivals + 1,
      };
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
      return {
        ...context,
        maxGlobal: event.maxGlobal,
        maxPerAgent: event.maxPerAgent,
        weights,
        fair: rescaled(context.fair, weights),
      };
    }),
    grantWaiters: enqueueActions(({ context, enqueue }) => {
      const { next, granted } = grantWaiters(context);
      if (granted.length === 0) return;
      enqueue.assign(next);
      for (const runId of granted) enqueue.emit({ type: 'granted', runId });
    }),
    announceWaiting: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'ACQUIRE') return;
      const position = queuePosition(context, event.runId);
      if (position > 0) enqueue.emit({ type: 'waiting', runId: event.runId, position });
    }),
  },
}).createMachine({
  id: 'limiter',
  context: ({ input }) => ({
    maxGlobal: input.maxGlobal,
    maxPerAgent: input.maxPerAgent,
    weights: input.weights ?? DEFAULT_WEIGHTS,
    holders: {},
    perAgent: {},
    inUse: 0,
    queues: noQueues(),
    arrivals: 0,
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
