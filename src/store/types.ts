/*
 * The Store seam (README, "Persistence and restart"): what the engine persists, shaped so a file
 * store (lowdb) or a shared backend can implement it. Writes may complete later (return a promise);
 * the engine publishes an event only once its append has completed. Reads are async.
 */
import type { RunEvent } from '../engine/run-events.js';
import type { AdmittedRequest } from '../engine/run-request.js';
import type { Message } from '../model/types.js';

export type RunState = 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';

export interface RunRecord {
  runId: string;
  sessionId: string;
  agentId: string;
  request: AdmittedRequest;
  state: RunState;
  createdAt: string;
  startedAt?: string;
  endedAt?: string;
  output?: string;
  error?: { code: string; message: string };
  reason?: string;
  /**
   * While queued: waiting in the session's lane, admitted and waiting for permits, or accepted
   * as a steer into `steeredInto` and not consumed yet.
   */
  queuedFor?: 'session_busy' | 'limits' | 'steer';
  steeredInto?: string;
}

export interface StoredLaneEntry {
  runId: string;
  viaInterrupt: boolean;
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
  /** Runs in any of these states (for restart recovery). */
  listRuns(states: readonly RunState[]): Promise<RunRecord[]>;
  /** Every non-empty wait lane, by session, front first (for restart recovery). */
  readLanes(): Promise<Record<string, StoredLaneEntry[]>>;
  /** A session's `allow_session` approval grants (action fingerprints), replacing the old set. */
  saveGrants?(sessionId: string, fingerprints: string[]): void | Promise<void>;
  /** The last sessionSeq stored for the session (0 when none); readSessionEvents() is the fallback. */
  lastSessionSeq?(sessionId: string): Promise<number>;
  /** Every session's grants. */
  readGrants?(): Promise<Record<string, string[]>>;
  flush(): Promise<void>;
  close(): Promise<void>;
}
