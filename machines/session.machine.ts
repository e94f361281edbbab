/*
 * A session: its slot (at most one active run) and its wait lane (a bounded FIFO of messages
 * that arrived while the slot was taken). Decides what happens to every message — start,
 * steer, queue, reject — and announces each decision as an emitted event that the engine
 * carries out. Lane expiry and start deadlines use delayed events on the actor clock. Pure: no
 * clock, no I/O.
 */
import { assign, enqueueActions, setup } from 'xstate';

export type BusyPolicy = 'steer' | 'interrupt' | 'queue';

/** What the session needs to know about a message; the request itself stays with the engine. */
export interface SessionMessage {
  runId: string;
  policy: BusyPolicy;
  /** No attachments and no timeout / iteration / sandbox override: only such a message may steer. */
  plainText: boolean;
  /** The model / workspace the message asks for explicitly, if any. */
  model?: string;
  workspace?: string;
  /** The model / workspace a run of this message would use (override or default). */
  runModel?: string;
  runWorkspace?: string;
  expectedRunId?: string;
  /** Must start (be admitted) within this many ms, or it leaves the lane `deadline_unmeetable`. */
  startWithinMs?: number;
}

export interface LaneEntry {
  runId: string;
  /** Entered the lane by interrupting: a later interrupt supersedes it while it waits. */
  viaInterrupt: boolean;
  /** The model / workspace its run will use. */
  model?: string;
  workspace?: string;
  /** Its start deadline, counted from when it (re-)entered the lane. */
  startWithinMs?: number;
}

export interface ActiveRun {
  runId: string;
  /** Permits granted and the run started; only such a run can be interrupted. */
  running: boolean;
  viaInterrupt: boolean;
  pendingSteers: number;
  model?: string;
  workspace?: string;
}

export interface SessionLimits {
  laneCapacity: number;
  maxPendingSteers: number;
  laneMaxWaitMs: number;
}

export interface SessionContext extends SessionLimits {
  sessionId: string;
  active: ActiveRun | undefined;
  lane: LaneEntry[];
}

export type SessionInput = { sessionId: string } & SessionLimits;

/** Why a message left the lane without running: superseded, purged, lane_timeout, or a cancel's reason. */
export type DropReason = string;

export type SessionEvent =
  | { type: 'SUBMIT'; message: SessionMessage }
  | { type: 'ADMIT_NEXT' }
  | { type: 'RUN_STARTED'; runId: string }
  | { type: 'STEERS_CONSUMED'; runId: string; count: number }
  | { type: 'RUN_ENDED'; runId: string }
  | { type: 'CANCEL_QUEUED'; runId: string; reason: string }
  | { type: 'LANE_EXPIRED'; runId: string }
  | { type: 'START_DUE'; runId: string }
  | { type: 'PURGE' }
  | { type: 'REQUEUE_FRONT'; entry: LaneEntry }
  /** After a restart: the lane as it was persisted, front first. */
  | { type: 'RESTORE'; entries: LaneEntry[] }
  | { type: 'CONFIGURE'; limits: SessionLimits };

export type SessionEmitted =
  | { type: 'admit'; runId: string }
  | { type: 'steer'; runId: string; intoRunId: string }
  | { type: 'queued'; runId: string; position: number }
  | { type: 'rejected'; runId: string; code: 'lane_full' }
  | { type: 'cancelActive'; runId: string; reason: 'interrupted' | 'superseded' | 'stopped' }
  | { type: 'dropped'; runId: string; reason: DropReason }
  | { type: 'idle'; laneDepth: number };

const laneTimerId = (runId: string) => `lane:${runId}`;
const startTimerId = (runId: string) => `start:${runId}`;

/** A steer goes into the active run only if it is plain text for that very run and there is room. */
export function canSteer(context: SessionContext, message: SessionMessage): boolean {
  const active = context.active;
  if (!active || message.policy !== 'steer' || !message.plainText) return false;
  if (message.expectedRunId !== undefined && message.expectedRunId !== active.runId) return false;
  if (message.model !== undefined && message.model !== active.model) return false;
  if (message.workspace !== undefined && message.workspace !== active.workspace) return false;
  return active.pendingSteers < context.maxPendingSteers;
}

function activeFrom(runId: string, viaInterrupt: boolean, message?: { model?: string; workspace?: string }): ActiveRun {
  return { runId, running: false, viaInterrupt, pendingSteers: 0, model: message?.model, workspace: message?.workspace };
}

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionInput,
    emitted: {} as SessionEmitted,
  },
  delays: {
    laneMaxWait: ({ context }) => context.laneMaxWaitMs,
  },
  guards: {
    laneEmpty: ({ context }) => context.lane.length === 0,
    laneNotEmpty: ({ context }) => context.lane.length > 0,
    canSteer: ({ context, event }) => event.type === 'SUBMIT' && canSteer(context, event.message),
    isActiveRun: ({ context, event }) => 'runId' in event && context.active?.runId === event.runId,
  },
  actions: {
    admitSubmitted: enqueueActions(({ event, enqueue }) => {
      if (event.type !== 'SUBMIT') return;
      const m = event.message;
      enqueue.assign({ active: activeFrom(m.runId, m.policy === 'interrupt', { model: m.runModel, workspace: m.runWorkspace }) });
      enqueue.emit({ type: 'admit', runId: m.runId });
    }),
    admitFront: enqueueActions(({ context, enqueue }) => {
      const [front, ...rest] = context.lane;
      if (!front) return;
      enqueue.cancel(laneTimerId(front.runId));
      enqueue.cancel(startTimerId(front.runId));
      enqueue.assign({ lane: rest, active: activeFrom(front.runId, front.viaInterrupt, front) });
      enqueue.emit({ type: 'admit', runId: front.runId });
    }),
    steerSubmitted: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SUBMIT' || !context.active) return;
      enqueue.assign({ active: { ...context.active, pendingSteers: context.active.pendingSteers + 1 } });
      enqueue.emit({ type: 'steer', runId: event.message.runId, intoRunId: context.active.runId });
    }),
    /** Queue (or interrupt, then queue): checks capacity first so a rejected message changes nothing. */
    enqueueSubmitted: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SUBMIT') return;
      const m = event.message;
      const interrupting = m.policy === 'interrupt';
      const superseded = interrupting ? context.lane.filter((e) => e.viaInterrupt) : [];
      const kept = interrupting ? context.lane.filter((e) => !e.viaInterrupt) : context.lane;
      if (kept.length >= context.laneCapacity) {
        enqueue.emit({ type: 'rejected', runId: m.runId, code: 'lane_full' });
        return;
      }
      for (const entry of superseded) {
        enqueue.cancel(laneTimerId(entry.runId));
        enqueue.cancel(startTimerId(entry.runId));
        enqueue.emit({ type: 'dropped', runId: entry.runId, reason: 'superseded' });
      }
      const lane = [...kept, { runId: m.runId, viaInterrupt: interrupting, model: m.runModel, workspace: m.runWorkspace }];
      enqueue.assign({ lane });
      enqueue.raise({ type: 'LANE_EXPIRED', runId: m.runId }, { delay: 'laneMaxWait', id: laneTimerId(m.runId) });
      if (m.startWithinMs !== undefined) enqueue.raise({ type: 'START_DUE', runId: m.runId }, { delay: m.startWithinMs, id: startTimerId(m.runId) });
      enqueue.emit({ type: 'queued', runId: m.runId, position: lane.length });
      const active = context.active;
      if (interrupting && active && (active.running || active.viaInterrupt)) {
        enqueue.emit({ type: 'cancelActive', runId: active.runId, reason: active.running ? 'interrupted' : 'superseded' });
      }
    }),
    markRunning: assign({
      active: ({ context, event }) =>
        context.active && event.type === 'RUN_STARTED' && context.active.runId === event.runId
          ? { ...context.active, running: true }
          : context.active,
    }),
    countConsumedSteers: assign({
      active: ({ context, event }) =>
        context.active && event.type === 'STEERS_CONSUMED' && context.active.runId === event.runId
          ? { ...context.active, pendingSteers: Math.max(0, context.active.pendingSteers - event.count) }
          : context.active,
    }),
    clearActive: assign({ active: undefined }),
    announceIdle: enqueueActions(({ context, enqueue }) => {
      enqueue.emit({ type: 'idle', laneDepth: context.lane.length });
    }),
    dropQueued: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'CANCEL_QUEUED' && event.type !== 'LANE_EXPIRED' && event.type !== 'START_DUE') return;
      if (!context.lane.some((e) => e.runId === event.runId)) return;
      enqueue.cancel(laneTimerId(event.runId));
      enqueue.cancel(startTimerId(event.runId));
      enqueue.assign({ lane: context.lane.filter((e) => e.runId !== event.runId) });
      const reason = event.type === 'LANE_EXPIRED' ? 'lane_timeout' : event.type === 'START_DUE' ? 'deadline_unmeetable' : event.reason;
      enqueue.emit({ type: 'dropped', runId: event.runId, reason });
    }),
    purge: enqueueActions(({ context, enqueue }) => {
      for (const entry of context.lane) {
        enqueue.cancel(laneTimerId(entry.runId));
        enqueue.cancel(startTimerId(entry.runId));
        enqueue.emit({ type: 'dropped', runId: entry.runId, reason: 'purged' });
      }
      enqueue.assign({ lane: [] });
      if (context.active) enqueue.emit({ type: 'cancelActive', runId: context.active.runId, reason: 'stopped' });
    }),
    requeueFront: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REQUEUE_FRONT') return;
      enqueue.assign({ lane: [event.entry, ...context.lane] });
      enqueue.raise({ type: 'LANE_EXPIRED', runId: event.entry.runId }, { delay: 'laneMaxWait', id: laneTimerId(event.entry.runId) });
      enqueue.emit({ type: 'queued', runId: event.entry.runId, position: 1 });
    }),
    restoreLane: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'RESTORE') return;
      enqueue.assign({ lane: [...context.lane, ...event.entries] });
      for (const entry of event.entries) {
        enqueue.raise({ type: 'LANE_EXPIRED', runId: entry.runId }, { delay: 'laneMaxWait', id: laneTimerId(entry.runId) });
        if (entry.startWithinMs !== undefined) enqueue.raise({ type: 'START_DUE', runId: entry.runId }, { delay: entry.startWithinMs, id: startTimerId(entry.runId) });
      }
    }),
    configure: assign(({ context, event }) => (event.type === 'CONFIGURE' ? { ...context, ...event.limits } : context)),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({ ...input, active: undefined, lane: [] }),
  initial: 'idle',
  on: {
    CANCEL_QUEUED: { actions: 'dropQueued' },
    LANE_EXPIRED: { actions: 'dropQueued' },
    START_DUE: { actions: 'dropQueued' },
    CONFIGURE: { actions: 'configure' },
  },
  states: {
    idle: {
      on: {
        SUBMIT: [
          { guard: 'laneEmpty', target: 'busy', actions: 'admitSubmitted' },
          { actions: 'enqueueSubmitted' },
        ],
        ADMIT_NEXT: { guard: 'laneNotEmpty', target: 'busy', actions: 'admitFront' },
        PURGE: { actions: 'purge' },
        REQUEUE_FRONT: { actions: ['requeueFront', 'announceIdle'] },
        RESTORE: { actions: ['restoreLane', 'announceIdle'] },
      },
    },
    busy: {
      on: {
        SUBMIT: [{ guard: 'canSteer', actions: 'steerSubmitted' }, { actions: 'enqueueSubmitted' }],
        RUN_STARTED: { actions: 'markRunning' },
        STEERS_CONSUMED: { actions: 'countConsumedSteers' },
        RUN_ENDED: { guard: 'isActiveRun', target: 'idle', actions: ['clearActive', 'announceIdle'] },
        PURGE: { actions: 'purge' },
        REQUEUE_FRONT: { actions: 'requeueFront' },
      },
    },
  },
});
