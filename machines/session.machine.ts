/*
 * A session: its slot (at most one active run) and its wait lane (a bounded FIFO of messages
 * that arrived while the slot was taken). Decides what happens to every message — start,
 * steer, queue, reject — and announces each decision as an emitted event that the engine
 * carries out. Lane expiry and start deadlines use delayed events on the actor clock. Pure: no
 * clock, no I/O.
 */
import { assign, enqueueActions, setup } from 'xstate';

export type BusyPolicy = 'steer' | 'interrupt' | 'queue' | 'collect' | 'reject' | 'rollback';

/** What a full lane does with one more message (docs/runs.md, "The wait lane"). */
export type LaneOverflow = 'reject_newest' | 'drop_oldest' | 'summarize_oldest';

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
  /** A `collect` message that may merge: only entries with equal keys merge (src/engine/collect.ts). */
  collectKey?: string;
}

/** What a lane operation did to a waiting message (docs/runs.md, "A queue you can see and change"). */
export type LaneChange = 'withdrawn' | 'moved' | 'promoted' | 'edited';

/** Why a lane operation changed nothing: the message is not in the lane, or cannot steer the active run. */
export type LaneRefusal = 'not_waiting' | 'not_steerable';

export interface LaneEntry {
  runId: string;
  /** Entered the lane by interrupting: a later interrupt supersedes it while it waits. */
  viaInterrupt: boolean;
  /** Entered the lane by rolling the active run back: it stays first, and a later rollback supersedes it. */
  viaRollback?: boolean;
  /** A `collect` message: merges with the entries behind it that have the same key. */
  collectKey?: string;
  /** The model / workspace its run will use. */
  model?: string;
  workspace?: string;
  /** Its start deadline, counted from when it (re-)entered the lane. */
  startWithinMs?: number;
  /** Plain text (no attachments, no overrides): only such a message can be promoted to a steer. */
  plainText?: boolean;
  /** The run its arrival rolled back: the notice its run gets when it starts. */
  rollsBack?: string;
  /**
   * RESTORE only: what is left of its lane wait (the stored point in time minus now); absent,
   * it waits `laneMaxWaitMs` from now.
   */
  leaveWithinMs?: number;
}

export interface ActiveRun {
  runId: string;
  /** Permits granted and the run started; only such a run can be interrupted. */
  running: boolean;
  viaInterrupt: boolean;
  /** Admitted as a rollback: a rollback arriving before it runs supersedes it. */
  viaRollback?: boolean;
  pendingSteers: number;
  model?: string;
  workspace?: string;
}

export interface SessionLimits {
  laneCapacity: number;
  maxPendingSteers: number;
  laneMaxWaitMs: number;
  /** Default `reject_newest`. */
  laneOverflow?: LaneOverflow;
  /** How long the lane must be quiet of `collect` messages before they merge into one run; default 0. */
  collectQuietMs?: number;
  /** At most this many messages merge into one run; default unbounded. */
  collectMax?: number;
}

export interface SessionContext extends SessionLimits {
  sessionId: string;
  active: ActiveRun | undefined;
  lane: LaneEntry[];
  /** Dropped by `summarize_oldest`: the next run that starts is told about them. */
  overflowDropped: string[];
  /** A `collect` message arrived less than `collectQuietMs` ago: collect messages wait for quiet. */
  collectQuiet: boolean;
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
  /** After a restart: the lane as it was persisted, front first, and what `summarize_oldest` had dropped. */
  | { type: 'RESTORE'; entries: LaneEntry[]; summarizes?: string[] }
  | { type: 'CONFIGURE'; limits: SessionLimits }
  /** The collect quiet window passed (a delayed event). */
  | { type: 'COLLECT_QUIET' }
  /** Lane operations: each changes a waiting message or is refused (`laneRefused`) when it is not waiting. */
  | { type: 'WITHDRAW'; runId: string }
  /** To the 1-based `position` (clamped to the lane; a rollback at the front keeps its place). */
  | { type: 'MOVE'; runId: string; position: number }
  | { type: 'PROMOTE'; runId: string }
  /** Its text changes (the engine keeps the text; the session only confirms it still waits). */
  | { type: 'EDIT'; runId: string };

export type SessionEmitted =
  /**
   * `carries`: the `collect` messages merged into this run, after its own (they leave the lane
   * with it); `summarizes`: messages `summarize_oldest` dropped since the last start.
   */
  | { type: 'admit'; runId: string; carries?: string[]; summarizes?: string[]; rollsBack?: string }
  | { type: 'steer'; runId: string; intoRunId: string }
  | { type: 'queued'; runId: string; position: number }
  | { type: 'rejected'; runId: string; code: 'lane_full' }
  | { type: 'rejected'; runId: string; code: 'session_busy'; activeRunId?: string }
  /** `by`: the message that rolled the run back. */
  | {
      type: 'cancelActive';
      runId: string;
      reason: 'interrupted' | 'superseded' | 'stopped' | 'rolled_back';
      by?: string;
    }
  | { type: 'dropped'; runId: string; reason: DropReason }
  | { type: 'idle'; laneDepth: number }
  /** A lane operation changed the lane; `lane`: the waiting ids after it, front first. */
  | { type: 'laneChanged'; runId: string; change: LaneChange; lane: string[]; intoRunId?: string }
  | { type: 'laneRefused'; runId: string; code: LaneRefusal; why: string };

const laneTimerId = (runId: string) => `lane:${runId}`;
const startTimerId = (runId: string) => `start:${runId}`;
const COLLECT_QUIET_TIMER = 'collect-quiet';

/** The lane's front `collect` entry and the compatible ones right behind it, up to `collectMax`. */
export function collectBatch(context: Pick<SessionContext, 'lane' | 'collectMax'>): LaneEntry[] {
  const [front] = context.lane;
  if (front?.collectKey === undefined) return front ? [front] : [];
  const max = context.collectMax ?? Number.POSITIVE_INFINITY;
  const batch: LaneEntry[] = [];
  for (const entry of context.lane) {
    if (batch.length >= max || entry.collectKey !== front.collectKey) break;
    batch.push(entry);
  }
  return batch;
}

/** A steer goes into the active run only if it is plain text for that very run and there is room. */
export function canSteer(context: SessionContext, message: SessionMessage): boolean {
  const active = context.active;
  if (!active || message.policy !== 'steer' || !message.plainText) return false;
  if (message.expectedRunId !== undefined && message.expectedRunId !== active.runId) return false;
  if (message.model !== undefined && message.model !== active.model) return false;
  if (message.workspace !== undefined && message.workspace !== active.workspace) return false;
  return active.pendingSteers < context.maxPendingSteers;
}

/** Why a waiting entry cannot become a steer of the active run, or undefined when it can. */
export function whyNotSteerable(context: SessionContext, entry: LaneEntry): string | undefined {
  const active = context.active;
  if (!active) return 'no run is active in the session';
  if (entry.viaInterrupt || entry.viaRollback) return 'it is replacing the active run, not adding to it';
  if (entry.plainText !== true) return 'only plain text (no attachments or overrides) can steer';
  if (entry.model !== undefined && entry.model !== active.model) return 'it would run with another model';
  if (entry.workspace !== undefined && entry.workspace !== active.workspace) return 'it would run in another workspace';
  if (active.pendingSteers >= context.maxPendingSteers) return 'the active run has max_pending_steers unread';
  return undefined;
}

/** What `summarize_oldest` dropped since the last start, for the run starting now. */
function summaryOf(context: SessionContext): { summarizes?: string[] } {
  return context.overflowDropped.length > 0 ? { summarizes: context.overflowDropped } : {};
}

function activeFrom(runId: string, viaInterrupt: boolean, message?: { model?: string; workspace?: string }): ActiveRun {
  return {
    runId,
    running: false,
    viaInterrupt,
    pendingSteers: 0,
    model: message?.model,
    workspace: message?.workspace,
  };
}

function idsOf(lane: readonly LaneEntry[]): string[] {
  return lane.map((e) => e.runId);
}

/**
 * The lane with `runId` moved to the 1-based `position`, clamped to the lane; the others keep
 * their order. A rollback at the front stays first (it runs next, as its sender asked).
 */
export function movedWithin(lane: readonly LaneEntry[], runId: string, position: number): LaneEntry[] {
  const entry = lane.find((e) => e.runId === runId);
  if (!entry) return [...lane];
  const pinned = lane[0]?.viaRollback === true ? 1 : 0;
  if (pinned === 1 && lane[0] === entry) return [...lane];
  const rest = lane.filter((e) => e !== entry);
  const index = Math.min(Math.max(Math.trunc(position) - 1, pinned), rest.length);
  return [...rest.slice(0, index), entry, ...rest.slice(index)];
}

/** True when the message waits in the lane; otherwise emits `not_waiting` (it started, ended or never waited). */
function refusedUnlessWaiting(
  context: SessionContext,
  runId: string,
  enqueue: { emit: (event: SessionEmitted) => void },
): boolean {
  if (context.lane.some((e) => e.runId === runId)) return true;
  const why = context.active?.runId === runId ? 'it has the session slot already' : 'it is not in the lane';
  enqueue.emit({ type: 'laneRefused', runId, code: 'not_waiting', why });
  return false;
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
    collectQuiet: ({ context }) => context.collectQuietMs ?? 0,
  },
  guards: {
    laneEmpty: ({ context }) => context.lane.length === 0,
    laneNotEmpty: ({ context }) => context.lane.length > 0,
    canSteer: ({ context, event }) => event.type === 'SUBMIT' && canSteer(context, event.message),
    isActiveRun: ({ context, event }) => 'runId' in event && context.active?.runId === event.runId,
    /** A `reject` message finds the slot taken or messages waiting. */
    rejectsBusy: ({ context, event }) =>
      event.type === 'SUBMIT' &&
      event.message.policy === 'reject' &&
      (context.active !== undefined || context.lane.length > 0),
    /** The front is a `collect` message and the quiet window is still open: it waits for more. */
    collectWaits: ({ context }) => context.collectQuiet && context.lane[0]?.collectKey !== undefined,
  },
  actions: {
    admitSubmitted: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SUBMIT') return;
      const m = event.message;
      enqueue.assign({
        active: {
          ...activeFrom(m.runId, m.policy === 'interrupt', { model: m.runModel, workspace: m.runWorkspace }),
          ...(m.policy === 'rollback' ? { viaRollback: true } : {}),
        },
        overflowDropped: [],
      });
      enqueue.emit({ type: 'admit', runId: m.runId, ...summaryOf(context) });
    }),
    /** Admits the front entry, with the compatible `collect` entries behind it merged in. */
    admitFront: enqueueActions(({ context, enqueue }) => {
      const batch = collectBatch(context);
      const [front] = batch;
      if (!front) return;
      for (const entry of batch) {
        enqueue.cancel(laneTimerId(entry.runId));
        enqueue.cancel(startTimerId(entry.runId));
      }
      const carries = batch.slice(1).map((e) => e.runId);
      enqueue.assign({
        lane: context.lane.slice(batch.length),
        active: {
          ...activeFrom(front.runId, front.viaInterrupt, front),
          ...(front.viaRollback ? { viaRollback: true } : {}),
        },
        overflowDropped: [],
      });
      enqueue.emit({
        type: 'admit',
        runId: front.runId,
        ...(carries.length > 0 ? { carries } : {}),
        ...summaryOf(context),
        ...(front.rollsBack !== undefined ? { rollsBack: front.rollsBack } : {}),
      });
    }),
    rejectBusy: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SUBMIT') return;
      const activeRunId = context.active?.runId;
      enqueue.emit({
        type: 'rejected',
        runId: event.message.runId,
        code: 'session_busy',
        ...(activeRunId !== undefined ? { activeRunId } : {}),
      });
    }),
    collectQuietOver: assign({ collectQuiet: false }),
    steerSubmitted: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SUBMIT' || !context.active) return;
      enqueue.assign({ active: { ...context.active, pendingSteers: context.active.pendingSteers + 1 } });
      enqueue.emit({ type: 'steer', runId: event.message.runId, intoRunId: context.active.runId });
    }),
    /**
     * Queue (or interrupt / roll back, then queue). A full lane follows `laneOverflow`; a
     * rejected message changes nothing, so the capacity is checked before anything else.
     */
    enqueueSubmitted: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SUBMIT') return;
      const m = event.message;
      const interrupting = m.policy === 'interrupt';
      const rollingBack = m.policy === 'rollback';
      const supersedes = (e: LaneEntry) => (interrupting && e.viaInterrupt) || (rollingBack && e.viaRollback === true);
      const superseded = context.lane.filter(supersedes);
      let kept = context.lane.filter((e) => !supersedes(e));
      let overflow: LaneEntry[] = [];
      if (kept.length >= context.laneCapacity) {
        const rule = context.laneOverflow ?? 'reject_newest';
        if (rule === 'reject_newest') {
          enqueue.emit({ type: 'rejected', runId: m.runId, code: 'lane_full' });
          return;
        }
        overflow = kept.slice(0, kept.length - context.laneCapacity + 1);
        kept = kept.slice(overflow.length);
        if (rule === 'summarize_oldest')
          enqueue.assign({ overflowDropped: [...context.overflowDropped, ...overflow.map((e) => e.runId)] });
      }
      const drops = [
        ...superseded.map((e) => [e, 'superseded'] as const),
        ...overflow.map((e) => [e, 'dropped_overflow'] as const),
      ];
      for (const [dropped, reason] of drops) {
        enqueue.cancel(laneTimerId(dropped.runId));
        enqueue.cancel(startTimerId(dropped.runId));
        enqueue.emit({ type: 'dropped', runId: dropped.runId, reason });
      }
      const active = context.active;
      // A rollback not yet running is itself only replaced, as interrupts replace each other.
      const replacesRollback = rollingBack && active !== undefined && !active.running && active.viaRollback === true;
      const entry: LaneEntry = {
        runId: m.runId,
        viaInterrupt: interrupting,
        ...(rollingBack ? { viaRollback: true } : {}),
        ...(rollingBack && active && !replacesRollback ? { rollsBack: active.runId } : {}),
        ...(m.policy === 'collect' && m.collectKey !== undefined ? { collectKey: m.collectKey } : {}),
        model: m.runModel,
        workspace: m.runWorkspace,
        plainText: m.plainText,
      };
      const lane = rollingBack ? [entry, ...kept] : [...kept, entry];
      enqueue.assign({ lane });
      enqueue.raise({ type: 'LANE_EXPIRED', runId: m.runId }, { delay: 'laneMaxWait', id: laneTimerId(m.runId) });
      if (m.startWithinMs !== undefined)
        enqueue.raise({ type: 'START_DUE', runId: m.runId }, { delay: m.startWithinMs, id: startTimerId(m.runId) });
      if (m.policy === 'collect' && (context.collectQuietMs ?? 0) > 0) {
        // Every collect message restarts the quiet window: a burst merges once it has stopped.
        enqueue.cancel(COLLECT_QUIET_TIMER);
        enqueue.assign({ collectQuiet: true });
        enqueue.raise({ type: 'COLLECT_QUIET' }, { delay: 'collectQuiet', id: COLLECT_QUIET_TIMER });
      }
      enqueue.emit({ type: 'queued', runId: m.runId, position: rollingBack ? 1 : lane.length });
      if (interrupting && active && (active.running || active.viaInterrupt)) {
        enqueue.emit({
          type: 'cancelActive',
          runId: active.runId,
          reason: active.running ? 'interrupted' : 'superseded',
        });
      }
      if (rollingBack && active) {
        enqueue.emit({
          type: 'cancelActive',
          runId: active.runId,
          reason: replacesRollback ? 'superseded' : 'rolled_back',
          ...(replacesRollback ? {} : { by: m.runId }),
        });
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
      const reason =
        event.type === 'LANE_EXPIRED'
          ? 'lane_timeout'
          : event.type === 'START_DUE'
            ? 'deadline_unmeetable'
            : event.reason;
      enqueue.emit({ type: 'dropped', runId: event.runId, reason });
    }),
    purge: enqueueActions(({ context, enqueue }) => {
      for (const entry of context.lane) {
        enqueue.cancel(laneTimerId(entry.runId));
        enqueue.cancel(startTimerId(entry.runId));
        enqueue.emit({ type: 'dropped', runId: entry.runId, reason: 'purged' });
      }
      enqueue.assign({ lane: [], overflowDropped: [] });
      if (context.active) enqueue.emit({ type: 'cancelActive', runId: context.active.runId, reason: 'stopped' });
    }),
    requeueFront: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REQUEUE_FRONT') return;
      // A message that rolled the active run back runs next, before what that run hands back.
      const pinned = context.lane[0]?.viaRollback ? 1 : 0;
      enqueue.assign({ lane: [...context.lane.slice(0, pinned), event.entry, ...context.lane.slice(pinned)] });
      enqueue.raise(
        { type: 'LANE_EXPIRED', runId: event.entry.runId },
        { delay: 'laneMaxWait', id: laneTimerId(event.entry.runId) },
      );
      enqueue.emit({ type: 'queued', runId: event.entry.runId, position: pinned + 1 });
    }),
    restoreLane: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'RESTORE') return;
      const entries = event.entries.map(({ leaveWithinMs: _left, ...entry }) => entry);
      enqueue.assign({
        lane: [...context.lane, ...entries],
        overflowDropped: [...context.overflowDropped, ...(event.summarizes ?? [])],
      });
      for (const entry of event.entries) {
        // The lane wait is a point in time: after a restart only what is left of it counts.
        enqueue.raise(
          { type: 'LANE_EXPIRED', runId: entry.runId },
          { delay: entry.leaveWithinMs ?? context.laneMaxWaitMs, id: laneTimerId(entry.runId) },
        );
        if (entry.startWithinMs !== undefined)
          enqueue.raise(
            { type: 'START_DUE', runId: entry.runId },
            { delay: entry.startWithinMs, id: startTimerId(entry.runId) },
          );
      }
    }),
    withdraw: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'WITHDRAW') return;
      if (!refusedUnlessWaiting(context, event.runId, enqueue)) return;
      enqueue.cancel(laneTimerId(event.runId));
      enqueue.cancel(startTimerId(event.runId));
      const lane = context.lane.filter((e) => e.runId !== event.runId);
      enqueue.assign({ lane });
      enqueue.emit({ type: 'laneChanged', runId: event.runId, change: 'withdrawn', lane: idsOf(lane) });
      enqueue.emit({ type: 'dropped', runId: event.runId, reason: 'withdrawn' });
    }),
    move: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'MOVE') return;
      if (!refusedUnlessWaiting(context, event.runId, enqueue)) return;
      const lane = movedWithin(context.lane, event.runId, event.position);
      enqueue.assign({ lane });
      enqueue.emit({ type: 'laneChanged', runId: event.runId, change: 'moved', lane: idsOf(lane) });
    }),
    promote: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'PROMOTE') return;
      if (!refusedUnlessWaiting(context, event.runId, enqueue)) return;
      const entry = context.lane.find((e) => e.runId === event.runId)!;
      const why = whyNotSteerable(context, entry);
      if (why !== undefined) {
        enqueue.emit({ type: 'laneRefused', runId: event.runId, code: 'not_steerable', why });
        return;
      }
      const active = context.active!;
      enqueue.cancel(laneTimerId(event.runId));
      enqueue.cancel(startTimerId(event.runId));
      const lane = context.lane.filter((e) => e.runId !== event.runId);
      enqueue.assign({ lane, active: { ...active, pendingSteers: active.pendingSteers + 1 } });
      enqueue.emit({
        type: 'laneChanged',
        runId: event.runId,
        change: 'promoted',
        lane: idsOf(lane),
        intoRunId: active.runId,
      });
      enqueue.emit({ type: 'steer', runId: event.runId, intoRunId: active.runId });
    }),
    edit: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'EDIT') return;
      if (!refusedUnlessWaiting(context, event.runId, enqueue)) return;
      enqueue.emit({ type: 'laneChanged', runId: event.runId, change: 'edited', lane: idsOf(context.lane) });
    }),
    configure: assign(({ context, event }) => (event.type === 'CONFIGURE' ? { ...context, ...event.limits } : context)),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({ ...input, active: undefined, lane: [], overflowDropped: [], collectQuiet: false }),
  initial: 'idle',
  on: {
    CANCEL_QUEUED: { actions: 'dropQueued' },
    WITHDRAW: { actions: 'withdraw' },
    MOVE: { actions: 'move' },
    PROMOTE: { actions: 'promote' },
    EDIT: { actions: 'edit' },
    LANE_EXPIRED: { actions: 'dropQueued' },
    START_DUE: { actions: 'dropQueued' },
    CONFIGURE: { actions: 'configure' },
  },
  states: {
    idle: {
      on: {
        SUBMIT: [
          { guard: 'laneEmpty', target: 'busy', actions: 'admitSubmitted' },
          { guard: 'rejectsBusy', actions: 'rejectBusy' },
          { actions: 'enqueueSubmitted' },
        ],
        ADMIT_NEXT: [{ guard: 'collectWaits' }, { guard: 'laneNotEmpty', target: 'busy', actions: 'admitFront' }],
        // The host admits (unless it is shutting down), as after a run ends.
        COLLECT_QUIET: { actions: ['collectQuietOver', 'announceIdle'] },
        PURGE: { actions: 'purge' },
        REQUEUE_FRONT: { actions: ['requeueFront', 'announceIdle'] },
        RESTORE: { actions: ['restoreLane', 'announceIdle'] },
      },
    },
    busy: {
      on: {
        SUBMIT: [
          { guard: 'rejectsBusy', actions: 'rejectBusy' },
          { guard: 'canSteer', actions: 'steerSubmitted' },
          { actions: 'enqueueSubmitted' },
        ],
        COLLECT_QUIET: { actions: 'collectQuietOver' },
        RUN_STARTED: { actions: 'markRunning' },
        STEERS_CONSUMED: { actions: 'countConsumedSteers' },
        RUN_ENDED: { guard: 'isActiveRun', target: 'idle', actions: ['clearActive', 'announceIdle'] },
        PURGE: { actions: 'purge' },
        REQUEUE_FRONT: { actions: 'requeueFront' },
      },
    },
  },
});
