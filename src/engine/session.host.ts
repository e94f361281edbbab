/*
 * Hosts machines/session.machine.ts: one actor per busy session (created on its first
 * message, retired when idle with an empty lane), the lane written to the store after every
 * change, and the session's event numbering loaded before its first event. What a session
 * decides goes to a handler table the engine supplies.
 */
import { createActor, type Actor, type AnyActorRef } from 'xstate';
import type { LaneEntry, SessionEmitted, SessionLimits, SessionMessage } from '../../machines/session.machine.js';
import { sessionMachine } from '../../machines/session.machine.js';
import { nowOf, type Clock } from '../core/clock.js';
import type { Config } from '../config/index.js';
import type { Store } from '../store/types.js';
import type { EventLog } from './event-log.js';
import type { InspectionHub } from './inspection.js';
import type { SessionHandlers } from './session-handlers.js';
import { SessionNumbering } from './session-numbering.js';
import {
  LaneDeadlines,
  sessionLimitsOf,
  type LaneAnswer,
  type LaneOperation,
  type LaneView,
  type RestoredEntry,
  type WithStartBy,
} from './lane-deadlines.js';

export type { LaneAnswer, LaneOperation, LaneView } from './lane-deadlines.js';
export type { SessionHandlers } from './session-handlers.js';

type SessionActor = Actor<typeof sessionMachine>;

export interface SessionHostDeps {
  clock: Clock;
  store: Store;
  log: EventLog;
  inspection: InspectionHub;
  config: () => Config;
  /** Contract: must not throw; reports a failed background write. */
  settleInBackground: (result: void | Promise<void>) => void;
}

/**
 * @example
 * const sessions = new SessionHost({ clock, store, log, inspection, config, settleInBackground });
 * sessions.connect(handlers); // once the parts the handlers reach exist
 * await sessions.numbering.load('alice');
 * sessions.submit('alice', { runId, policy: 'steer', plainText: true }); // handlers.admit / steer / queued / rejected
 */
export class SessionHost {
  private readonly sessions = new Map<string, SessionActor>();
  /** Each session's event numbering, continued from its stored log. */
  readonly numbering: SessionNumbering;
  /** Sessions another process owns now (a cluster's takeover): nothing of them is admitted here. */
  private readonly dropped = new Set<string>();
  /** Shutting down: lanes keep their messages for the next start. */
  private draining = false;
  /** When each waiting message must leave the lane: stored with the lane, so a restart keeps it. */
  private readonly leaveBy = new LaneDeadlines();
  /** The answer to the lane operation being decided (set while the session handles it). */
  private laneAnswer: LaneAnswer | undefined;

  /** What the engine does with the sessions' decisions (connected once every part exists). */
  private handlers: SessionHandlers | undefined;

  constructor(private readonly deps: SessionHostDeps) {
    this.numbering = new SessionNumbering(deps);
  }

  connect(handlers: SessionHandlers): void {
    this.handlers = handlers;
  }

  limits(): SessionLimits {
    return sessionLimitsOf(this.deps.config());
  }

  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** True when the session's numbering is known without reading the store. */
  seqReady(sessionId: string): boolean {
    return this.sessions.has(sessionId) || this.numbering.isLoaded(sessionId);
  }

  submit(sessionId: string, { startBy, ...message }: WithStartBy<SessionMessage>): void {
    if (this.dropped.has(sessionId)) return;
    this.actorOf(sessionId).send({ type: 'SUBMIT', message: { ...message, ...this.startWithin(startBy) } });
  }

  runStarted(sessionId: string, runId: string): void {
    this.sessions.get(sessionId)?.send({ type: 'RUN_STARTED', runId });
  }

  steersConsumed(sessionId: string, runId: string, count: number): void {
    this.sessions.get(sessionId)?.send({ type: 'STEERS_CONSUMED', runId, count });
  }

  runEnded(sessionId: string, runId: string): void {
    this.sessions.get(sessionId)?.send({ type: 'RUN_ENDED', runId });
  }

  cancelQueued(sessionId: string, runId: string, reason: string): void {
    this.sessions.get(sessionId)?.send({ type: 'CANCEL_QUEUED', runId, reason });
  }

  requeueFront(sessionId: string, entry: LaneEntry): void {
    if (this.dropped.has(sessionId)) return;
    this.actorOf(sessionId).send({ type: 'REQUEUE_FRONT', entry });
  }

  /**
   * After a restart: the lane as stored. Each entry's lane wait continues towards its stored
   * point in time (`leaveBy`; time spent down counts); one stored before there was one waits in full.
   */
  restore(sessionId: string, entries: RestoredEntry[], summarizes: string[] = []): void {
    if (this.dropped.has(sessionId)) return;
    const now = nowOf(this.deps.clock);
    const maxWait = this.limits().laneMaxWaitMs;
    const timed = entries.map(({ startBy, leaveBy, ...entry }) => ({
      ...entry,
      ...this.startWithin(startBy),
      leaveWithinMs: this.leaveBy.restore(entry.runId, leaveBy, now, maxWait),
    }));
    this.actorOf(sessionId).send({
      type: 'RESTORE',
      entries: timed,
      ...(summarizes.length > 0 ? { summarizes } : {}),
    });
  }

  /**
   * Asks the session to change a waiting message. The session decides synchronously — a message
   * that has started or left answers `not_waiting` — and the change is stored before this returns.
   */
  laneOperation(sessionId: string, operation: LaneOperation): LaneAnswer {
    const session = this.dropped.has(sessionId) ? undefined : this.sessions.get(sessionId);
    if (!session) return { ok: false, code: 'not_waiting', why: 'its session has nothing waiting' };
    this.laneAnswer = undefined;
    session.send(operation);
    const answer = this.laneAnswer as LaneAnswer | undefined;
    this.laneAnswer = undefined;
    return answer ?? { ok: false, code: 'not_waiting', why: 'it is not in the lane' };
  }

  /** The session's waiting messages, front first, and its active run. */
  lane(sessionId: string): { activeRunId?: string; entries: LaneView[] } {
    const ctx = this.sessions.get(sessionId)?.getSnapshot().context;
    if (!ctx) return { entries: [] };
    return { ...(ctx.active ? { activeRunId: ctx.active.runId } : {}), entries: this.leaveBy.view(ctx.lane) };
  }

  /**
   * Another process owns the session now: its actor stops without deciding anything more, its
   * numbering is forgotten, and nothing of it is admitted here until resume().
   */
  drop(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (session) {
      session.stop();
      this.deps.inspection.forget(session);
      this.sessions.delete(sessionId);
    }
    this.dropped.add(sessionId);
    this.numbering.forget(sessionId);
  }

  /** This process owns the session again (it took it over). */
  resume(sessionId: string): void {
    this.dropped.delete(sessionId);
  }

  /**
   * Cancels the active run (reason `stopped`) and purges the lane, including the steers the
   * stopped run hands back to the lane front.
   */
  stop(sessionId: string): { cancelled?: string; purged: number } {
    const session = this.sessions.get(sessionId);
    if (!session) return { purged: 0 };
    const activeRunId = session.getSnapshot().context.active?.runId;
    let purged = session.getSnapshot().context.lane.length;
    session.send({ type: 'PURGE' });
    const requeued = session.getSnapshot().context.lane.length;
    if (requeued > 0) {
      session.send({ type: 'PURGE' });
      purged += requeued;
    }
    return { ...(activeRunId !== undefined ? { cancelled: activeRunId } : {}), purged };
  }

  /** Shutting down: no lane admits its next message any more. */
  stopAdmitting(): void {
    this.draining = true;
  }

  /** Hot reload: every live session applies the new lane limits to its next decision. */
  reconfigure(): void {
    const limits = this.limits();
    for (const session of this.sessions.values()) session.send({ type: 'CONFIGURE', limits });
  }

  overview(): { sessionId: string; activeRunId?: string; laneDepth: number; lane: string[] }[] {
    return [...this.sessions.entries()].map(([sessionId, actor]) => {
      const ctx = actor.getSnapshot().context;
      return {
        sessionId,
        ...(ctx.active ? { activeRunId: ctx.active.runId } : {}),
        laneDepth: ctx.lane.length,
        lane: ctx.lane.map((e) => e.runId),
      };
    });
  }

  actors(): Iterable<AnyActorRef> {
    return this.sessions.values();
  }

  stopAll(): void {
    for (const session of this.sessions.values()) session.stop();
    this.sessions.clear();
  }

  private actorOf(sessionId: string): SessionActor {
    let actor = this.sessions.get(sessionId);
    if (actor) return actor;
    actor = createActor(sessionMachine, {
      input: { sessionId, ...this.limits() },
      clock: this.deps.clock,
      inspect: this.deps.inspection.option,
      id: `session:${sessionId}`,
    });
    const self = actor;
    actor.on('*', (event) => this.onEmitted(sessionId, self, event as SessionEmitted));
    this.sessions.set(sessionId, actor);
    actor.start();
    return actor;
  }

  private onEmitted(sessionId: string, session: SessionActor, event: SessionEmitted): void {
    const handlers = this.handlers;
    if (!handlers) throw new Error('the session host was not connected to its handlers');
    switch (event.type) {
      case 'admit':
        this.leaveBy.delete(event.runId);
        for (const id of event.carries ?? []) this.leaveBy.delete(id);
        handlers.admit(event.runId, {
          ...(event.carries ? { carries: event.carries } : {}),
          ...(event.summarizes ? { summarizes: event.summarizes } : {}),
          ...(event.rollsBack !== undefined ? { rollsBack: event.rollsBack } : {}),
        });
        break;
      case 'steer':
        handlers.steer(event.runId, event.intoRunId);
        break;
      case 'queued':
        // Entering the lane (again) starts its full wait, as the session's timer does.
        this.leaveBy.set(event.runId, nowOf(this.deps.clock) + session.getSnapshot().context.laneMaxWaitMs);
        handlers.queued(event.runId, event.position);
        break;
      case 'rejected':
        handlers.rejected(
          event.runId,
          event.code === 'session_busy'
            ? { code: event.code, ...(event.activeRunId !== undefined ? { activeRunId: event.activeRunId } : {}) }
            : { code: event.code },
        );
        break;
      case 'cancelActive':
        handlers.cancelActive(event.runId, event.reason, event.by);
        break;
      case 'dropped':
        this.leaveBy.delete(event.runId);
        handlers.dropped(event.runId, event.reason);
        break;
      case 'laneChanged':
        if (event.change === 'promoted') this.leaveBy.delete(event.runId);
        this.laneAnswer = {
          ok: true,
          change: event.change,
          lane: event.lane,
          ...(event.intoRunId !== undefined ? { intoRunId: event.intoRunId } : {}),
        };
        handlers.laneChanged(event.runId, event.change, event.lane, event.intoRunId);
        break;
      case 'laneRefused':
        this.laneAnswer = { ok: false, code: event.code, why: event.why };
        break;
      case 'idle':
        // Admission waits a microtask, so a burst of interrupts arriving together supersedes
        // each other instead of starting and killing a chain of runs.
        queueMicrotask(() => this.admitNextOrRetire(sessionId, session));
        break;
    }
    if (event.type === 'queued' || event.type === 'dropped' || event.type === 'admit' || event.type === 'laneChanged')
      this.persistLane(sessionId, session);
  }

  private admitNextOrRetire(sessionId: string, session: SessionActor): void {
    if (this.sessions.get(sessionId) !== session) return;
    const snapshot = session.getSnapshot();
    if (snapshot.status !== 'active' || snapshot.context.active) return;
    if (snapshot.context.lane.length > 0) {
      if (this.draining) return;
      session.send({ type: 'ADMIT_NEXT' });
    } else {
      // An idle session with an empty lane costs nothing but its conversation.
      session.stop();
      this.deps.inspection.forget(session);
      this.sessions.delete(sessionId);
      // An idle session keeps nothing in memory; its numbering is reloaded on its next message.
      this.numbering.forget(sessionId);
    }
  }

  /** What is left of a start deadline, as the session's delay (0 once it has passed). */
  private startWithin(startBy: string | undefined): { startWithinMs?: number } {
    if (startBy === undefined) return {};
    return { startWithinMs: Math.max(0, Date.parse(startBy) - nowOf(this.deps.clock)) };
  }

  /** The lane as stored (src/engine/lane-deadlines.ts says what each entry keeps). */
  private persistLane(sessionId: string, session: SessionActor): void {
    const { lane, overflowDropped } = session.getSnapshot().context;
    this.deps.settleInBackground(this.deps.store.saveLane(sessionId, this.leaveBy.stored(lane, overflowDropped)));
  }
}
