/*
 * The Store seam (README, "Persistence and restart"): what the engine persists, shaped so a file
 * store (lowdb) or a shared backend can implement it. Writes may complete later (return a promise);
 * the engine publishes an event only once its append has completed. Reads are async.
 */
import type { RunEvent } from '../core/run-events.js';
import type { AdmittedRequest } from '../core/run-request.js';
import type { Message } from '../model/types.js';
import type { RunFields, RunState } from '../core/run-status.js';
import type { SteerFields } from '../core/steer.js';

export type { RunState };

/** A run as stored: its fields and the admitted request. */
export interface RunRecord extends RunFields {
  request: AdmittedRequest;
}

/** A steer as stored: its fields and the admitted request (a follow-up run is made from it). */
export interface SteerRecord extends SteerFields {
  request: AdmittedRequest;
}

export interface StoredLaneEntry {
  runId: string;
  viaInterrupt: boolean;
}

/** What recovery needs of one session: its open runs, pending steers, lane and grants. */
export interface SessionWork {
  open: RunRecord[];
  pendingSteers: SteerRecord[];
  lane: StoredLaneEntry[];
  grants: string[];
}

export interface Store {
  readonly kind: string;
  saveRun(record: RunRecord): void | Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  appendEvent(event: RunEvent): void | Promise<void>;
  /** The run's events with seq > afterSeq, in seq order. */
  readEvents(runId: string, afterSeq?: number): Promise<RunEvent[]>;
  /** The session's events with sessionSeq > afterSessionSeq, in order. */
  readSessionEvents(sessionId: string, afterSessionSeq?: number): Promise<RunEvent[]>;
  appendMessages(sessionId: string, messages: Message[]): void | Promise<void>;
  readConversation(sessionId: string): Promise<Message[]>;
  saveLane(sessionId: string, entries: StoredLaneEntry[]): void | Promise<void>;
  /** Runs in any of these states, oldest first. */
  listRuns(states: readonly RunState[]): Promise<RunRecord[]>;
  /**
   * Runs whose end is not fully stored, for restart recovery: not terminal, or terminal while
   * their terminal event is not yet durable in their log and the session's log (a crash in
   * between leaves such a run for recovery to repair).
   */
  openRuns(): Promise<RunRecord[]>;
  saveSteer(record: SteerRecord): void | Promise<void>;
  getSteer(steerId: string): Promise<SteerRecord | undefined>;
  /** Steers still pending (for restart recovery), oldest first. */
  pendingSteers(): Promise<SteerRecord[]>;
  /** Every non-empty wait lane, by session, front first (for restart recovery). */
  readLanes(): Promise<Record<string, StoredLaneEntry[]>>;
  /** A session's `allow_session` approval grants (action fingerprints), replacing the old set. */
  saveGrants?(sessionId: string, fingerprints: string[]): void | Promise<void>;
  /** The last sessionSeq stored for the session (0 when none); readSessionEvents() is the fallback. */
  lastSessionSeq?(sessionId: string): Promise<number>;
  /** Every session's grants. */
  readGrants?(): Promise<Record<string, string[]>>;
  /**
   * One session's share of openRuns(), pendingSteers(), readLanes() and readGrants(), for
   * recovering a single session (a cluster's takeover); without it those are read whole and filtered.
   */
  readSessionWork?(sessionId: string): Promise<SessionWork>;
  /**
   * Resolves once every write asked for before this call is durable: it survives a crash of
   * this process (with [store] fsync, a power loss too). Rejects when one of them failed.
   * Writes asked for meanwhile are not waited for, so many callers can share one write
   * (group commit). The engine answers a submit only after this resolves.
   */
  durable(): Promise<void>;
  flush(): Promise<void>;
  close(): Promise<void>;
}
