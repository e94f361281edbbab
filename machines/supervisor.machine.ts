/*
 * The limiter (ConcurrencyLimiter): global and per-agent run permits, held for the lifetime
 * of a run. Waiters are granted in arrival order, skipping a waiter whose own agent is at its
 * cap, so one agent at its cap never blocks another. Grants and waits are announced as
 * emitted events; the engine listens. Pure: no clock, no I/O.
 */
import { assign, enqueueActions, setup } from 'xstate';

export interface PermitWaiter {
  runId: string;
  agentId: string;
}

export interface SupervisorContext {
  maxGlobal: number;
  maxPerAgent: number;
  /** runId -> agentId of every run holding permits. */
  holders: Record<string, string>;
  perAgent: Record<string, number>;
  inUse: number;
  waiters: PermitWaiter[];
}

export type SupervisorEvent =
  | { type: 'ACQUIRE'; runId: string; agentId: string }
  | { type: 'RELEASE'; runId: string }
  | { type: 'RECONFIGURE'; maxGlobal: number; maxPerAgent: number };

export type SupervisorEmitted =
  | { type: 'granted'; runId: string }
  | { type: 'waiting'; runId: string; position: number }
  | { type: 'released'; runId: string };

export interface SupervisorInput {
  maxGlobal: number;
  maxPerAgent: number;
}

/** Grants waiters in arrival order while permits are free; pure. */
export function grantWaiters(context: SupervisorContext): { next: SupervisorContext; granted: string[] } {
  if (context.waiters.length === 0 || context.inUse >= context.maxGlobal) return { next: context, granted: [] };
  const perAgent = { ...context.perAgent };
  const holders = { ...context.holders };
  const waiters: PermitWaiter[] = [];
  const granted: string[] = [];
  let inUse = context.inUse;
  for (const waiter of context.waiters) {
    const agentInUse = perAgent[waiter.agentId] ?? 0;
    if (inUse < context.maxGlobal && agentInUse < context.maxPerAgent) {
      perAgent[waiter.agentId] = agentInUse + 1;
      holders[waiter.runId] = waiter.agentId;
      inUse += 1;
      granted.push(waiter.runId);
    } else {
      waiters.push(waiter);
    }
  }
  return { next: { ...context, perAgent, holders, inUse, waiters }, granted };
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
          ? [...context.waiters, { runId: event.runId, agentId: event.agentId }]
          : context.waiters,
    }),
    release: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'RELEASE') return;
      const wasHolder = event.runId in context.holders;
      enqueue.assign(releaseRun(context, event.runId));
      if (wasHolder) enqueue.emit({ type: 'released', runId: event.runId });
    }),
    applyLimits: assign(({ context, event }) =>
      event.type === 'RECONFIGURE' ? { ...context, maxGlobal: event.maxGlobal, maxPerAgent: event.maxPerAgent } : context,
    ),
    grantWaiters: enqueueActions(({ context, enqueue }) => {
      const { next, granted } = grantWaiters(context);
      if (granted.length === 0) return;
      enqueue.assign(next);
      for (const runId of granted) enqueue.emit({ type: 'granted', runId });
    }),
    announceWaiting: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'ACQUIRE') return;
      const position = context.waiters.findIndex((w) => w.runId === event.runId) + 1;
      if (position > 0) enqueue.emit({ type: 'waiting', runId: event.runId, position });
    }),
  },
}).createMachine({
  id: 'supervisor',
  context: ({ input }) => ({
    maxGlobal: input.maxGlobal,
    maxPerAgent: input.maxPerAgent,
    holders: {},
    perAgent: {},
    inUse: 0,
    waiters: [],
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
