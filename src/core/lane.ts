/*
 * The wait lane as callers see and change it (docs/runs.md, "A queue you can see and change"):
 * what `lane.list` answers and what each lane operation answers. One shape for the engine, the
 * gateway, the typed client and the CLI.
 */
import type { BusyPolicy, LaneChange } from '../../machines/session.machine.js';

export type { LaneChange };

/** One message waiting in its session's lane. */
export interface LaneEntryView {
  runId: string;
  /** 1-based; 1 starts next. */
  position: number;
  busyPolicy: BusyPolicy;
  agentId: string;
  /** When it was submitted (ISO), and how long ago that is. */
  createdAt: string;
  ageMs: number;
  /** The point in time it leaves the lane `lane_timeout` unless it started (ISO; a restart keeps it). */
  leaveBy?: string;
  /** It interrupted / rolled back the active run (a rollback stays first). */
  viaInterrupt: boolean;
  viaRollback: boolean;
  /** A `collect` message: it merges with the compatible messages next to it when it starts. */
  collects: boolean;
  /** The first words of its text. */
  preview: string;
}

/** A session's lane: the run that holds its slot, and what waits behind it, front first. */
export interface LaneListing {
  sessionId: string;
  activeRunId?: string;
  entries: LaneEntryView[];
}

/** What a lane operation did; durable when it is answered. */
export interface LaneChangeResult {
  runId: string;
  sessionId: string;
  change: LaneChange;
  /** The waiting ids after the change, front first. */
  lane: string[];
  /** `promoted`: the run it now steers. */
  intoRunId?: string;
}
