/*
 * What the engine does with a session's decisions: the session host calls these from inside
 * the session actor's send(), synchronously, in the order the session decided.
 */
import type { LaneChange } from '../../machines/session.machine.js';

/** What the engine does with a session's decisions. Contract: none may throw. */
export interface SessionHandlers {
  /**
   * The message takes the session's slot: start its run, carrying the `collect` messages merged
   * into it and told about the messages `summarize_oldest` dropped.
   */
  admit(runId: string, extra: { carries?: string[]; summarizes?: string[]; rollsBack?: string }): void;
  /** The message goes into the running run as a steer. */
  steer(runId: string, intoRunId: string): void;
  /** The message waits in the lane at this 1-based position. */
  queued(runId: string, position: number): void;
  /** The lane is full (`lane_full`) or the message refuses to wait (`session_busy`): it changes nothing. */
  rejected(runId: string, rejection: { code: 'lane_full' | 'session_busy'; activeRunId?: string }): void;
  /** The active run must stop (interrupted, superseded, stopped, or rolled back `by` a message). */
  cancelActive(runId: string, reason: string, by?: string): void;
  /** The message left the lane without running (cancelled, superseded, purged, lane_timeout, dropped_overflow, withdrawn). */
  dropped(runId: string, reason: string): void;
  /** A lane operation changed the lane (`lane`: the waiting ids after it, front first). */
  laneChanged(runId: string, change: LaneChange, lane: string[], intoRunId?: string): void;
}
