/*
 * A session lane's limits, times and stored form. The session chart keeps each waiting message's wait
 * as a delay on the actor clock; the host keeps the point in time it must leave the lane by,
 * so the stored lane carries it and a restart gives a message what is left of its wait, not
 * its full wait again (time spent down counts).
 */
import type { LaneChange, LaneEntry, LaneRefusal, SessionLimits } from '../../machines/session.machine.js';
import { timerMs } from '../core/clock.js';
import type { Config } from '../config/index.js';
import type { StoredLaneEntry } from '../store/types.js';

/** A message or lane entry with its start deadline as a time (`startBy`); the session gets it as a delay. */
export type WithStartBy<T> = Omit<T, 'startWithinMs'> & { startBy?: string };

/** A lane entry as restored: its deadlines as times (`startBy`, `leaveBy`); the session gets what is left of them. */
export type RestoredEntry = Omit<WithStartBy<LaneEntry>, 'leaveWithinMs'> & { leaveBy?: string };

/** A lane operation the session decides. */
export type LaneOperation =
  | { type: 'WITHDRAW'; runId: string }
  | { type: 'MOVE'; runId: string; position: number }
  | { type: 'PROMOTE'; runId: string }
  | { type: 'EDIT'; runId: string };

/** What the session answered a lane operation: the change it made, or why it made none. */
export type LaneAnswer =
  { ok: true; change: LaneChange; lane: string[]; intoRunId?: string } | { ok: false; code: LaneRefusal; why: string };

/** One waiting message as the session sees it. */
export interface LaneView {
  runId: string;
  /** 1-based. */
  position: number;
  viaInterrupt: boolean;
  viaRollback: boolean;
  /** A `collect` message that may merge with its compatible neighbours. */
  collects: boolean;
  /** When it leaves the lane `lane_timeout` unless it started (ISO). */
  leaveBy?: string;
}

/** The limits a session's chart decides by, from `[execution]` (hot-reloadable). */
export function sessionLimitsOf(config: Config): SessionLimits {
  const exec = config.execution;
  return {
    laneCapacity: exec.wait_lane_capacity,
    maxPendingSteers: exec.max_pending_steers,
    laneMaxWaitMs: timerMs(exec.wait_lane_max_wait_seconds),
    laneOverflow: exec.lane_overflow,
    collectQuietMs: exec.collect_quiet_ms,
    collectMax: exec.collect_max,
  };
}

/** When each waiting message must leave its lane (epoch ms, engine clock). */
export class LaneDeadlines {
  private readonly leaveBy = new Map<string, number>();

  set(runId: string, atMs: number): void {
    this.leaveBy.set(runId, atMs);
  }

  delete(runId: string): void {
    this.leaveBy.delete(runId);
  }

  /**
   * A restored entry's point in time (stored `leaveBy`, or a full wait from now for one stored
   * before there was one), kept; answers what is left of its wait (0 once it has passed).
   */
  restore(runId: string, leaveBy: string | undefined, nowMs: number, maxWaitMs: number): number {
    const at = leaveBy !== undefined && !Number.isNaN(Date.parse(leaveBy)) ? Date.parse(leaveBy) : nowMs + maxWaitMs;
    this.leaveBy.set(runId, at);
    return Math.max(0, at - nowMs);
  }

  /** The lane as people see it, front first. */
  view(lane: readonly LaneEntry[]): LaneView[] {
    return lane.map((e, i) => {
      const leaveBy = this.leaveBy.get(e.runId);
      return {
        runId: e.runId,
        position: i + 1,
        viaInterrupt: e.viaInterrupt,
        viaRollback: e.viaRollback === true,
        collects: e.collectKey !== undefined,
        ...(leaveBy !== undefined ? { leaveBy: new Date(leaveBy).toISOString() } : {}),
      };
    });
  }

  /**
   * The lane as stored: each entry with its marks and its point in time to leave by; the front
   * one also with what `summarize_oldest` dropped, which the next run to start is told.
   */
  stored(lane: readonly LaneEntry[], overflowDropped: readonly string[]): StoredLaneEntry[] {
    return lane.map((e, i): StoredLaneEntry => {
      const leaveBy = this.leaveBy.get(e.runId);
      return {
        runId: e.runId,
        viaInterrupt: e.viaInterrupt,
        ...(e.viaRollback ? { viaRollback: true } : {}),
        ...(e.rollsBack !== undefined ? { rollsBack: e.rollsBack } : {}),
        ...(leaveBy !== undefined ? { leaveBy: new Date(leaveBy).toISOString() } : {}),
        ...(i === 0 && overflowDropped.length > 0 ? { summarizes: [...overflowDropped] } : {}),
      };
    });
  }
}
