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

/**
 * One row of a runs list: the stored run without its request, with its outcome code and the
 * start of its message. Every store builds it with runSummaryOf() (run-summary.ts), so all
 * stores answer alike.
 */
export interface RunSummary {
  runId: string;
  sessionId: string;
  agentId: string;
  state: RunState;
  createdAt: string;
  startedAt?: string;
  endedAt?: string;
  /** Ended runs only: "completed", a failed run's error code, or a cancelled run's reason (runOutcomeOf). */
  outcome?: string;
  error?: RunRecord['error'];
  queuedFor?: RunRecord['queuedFor'];
  /** Ended runs: the model turns taken and the tool calls asked for (absent in records from before they were kept). */
  turns?: number;
  toolCalls?: number;
  usage?: RunRecord['usage'];
  parentRunId?: string;
  carries?: string[];
  /** The message, cut to its first RUN_SUMMARY_INPUT_CHARS characters. */
  input: string;
}

/** What Store.queryRuns answers for; every given filter must hold. */
export interface RunQuery {
  /** Only this session's runs. */
  sessionId?: string;
  /** Only runs whose current state is one of these; absent or empty: any state. */
  states?: readonly RunState[];
  /** Only ended runs with this outcome code (see RunSummary.outcome). */
  outcome?: string;
  /** The `cursor` of the previous page: continue after its last run. */
  before?: string;
  /** At most this many runs: a whole number from 1 to RUN_QUERY_MAX_LIMIT. */
  limit: number;
}

export interface RunPage {
  /** Newest first. */
  runs: RunSummary[];
  /** Present when more runs matched beyond the last one: pass it as `before` for the next page. */
  cursor?: string;
  /** Runs that matched but whose stored files are damaged: left out of `runs`, each with why. */
  skipped?: SkippedRun[];
}

/** A run a list left out because its stored data is damaged (code `corrupt_file`). */
export interface SkippedRun {
  runId: string;
  code: 'corrupt_file';
  message: string;
}

/** What a store reports to a readiness check (GET /readyz) beyond answering. */
export interface StoreHealth {
  /** False while writes fail (a full disk): writes are refused, reads still answer. */
  writable: boolean;
  /** Why writes fail, when they do. */
  problem?: string;
  /** Damage found and worked around since the store opened (each also logged): one line each. */
  damage: string[];
}

export interface StoredLaneEntry {
  runId: string;
  viaInterrupt: boolean;
  /** It rolled the active run back: it stays first. */
  viaRollback?: boolean;
  /** The run it rolled back: its run is told so when it starts. */
  rollsBack?: string;
  /** The point in time it leaves the lane `lane_timeout` unless started (ISO); a restart keeps it. */
  leaveBy?: string;
  /** Front entry only: the messages `summarize_oldest` dropped, which the next run to start is told about. */
  summarizes?: string[];
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
   * A page of runs, newest first, for lists that must stay fast however many runs are stored
   * (the inspector's). The contract (test/store/store-conformance.ts checks it for every store):
   *
   * - **Position.** The store numbers runs from one counter shared by everything that writes
   *   to it (every process of a cluster): a run takes the next number at its first save, and
   *   the next one again at the first save that gives it a terminal state (completed, cancelled,
   *   failed); one number when both happen in one save. Other saves keep it. Runs come in
   *   descending position: runs not ended by when they were first saved, ended runs by when
   *   they ended, so a run moves to the top once, when it ends. (The engine never saves a
   *   non-terminal state over a terminal one, nor changes how a run ended; a store need not
   *   order such a run.)
   * - **Filters** (RunQuery) all hold for every run returned, judged by the run's latest save
   *   at the time of the call: `sessionId` equal, state one of `states`, runOutcomeOf(record)
   *   equal to `outcome`.
   * - **Pages.** At most `limit` runs (a whole number from 1 to RUN_QUERY_MAX_LIMIT). `cursor`
   *   is the decimal position of the last run returned (e.g. "42"), present if and only if at
   *   least one more run matched with a lower position; `before` (such a decimal) answers only
   *   runs with a lower position. Positions never change except at a run's end, so the pages
   *   of one walk never repeat a run, except one that ended during the walk (it then also
   *   appears above the first page). A cursor stays valid across processes and restarts.
   * - **Freshness.** A save is seen at once, before it is durable (like getRun).
   * - **Cost.** Proportional to the page, never to the number of runs stored: keep an index by
   *   position overall, per session, per terminal state and per outcome. With `sessionId`
   *   and `states` or `outcome` together it may also pass over that session's other runs.
   * - **Errors.** A `limit` or `before` outside the above rejects with a RangeError.
   *
   * Shared by the stores: run-summary.ts (runSummaryOf builds each row; runOutcomeOf,
   * checkRunQuery, cursorOf) and run-index.ts (placeRun decides positions; queryPage reads a
   * page from any index that implements RunIndexReader, e.g. one kept as sorted sets).
   */
  queryRuns(query: RunQuery): Promise<RunPage>;
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
  /**
   * Whether writes succeed now and what damage was found (GET /readyz); while writes fail it
   * checks whether there is room again, and takes writes again once there is.
   */
  health?(): Promise<StoreHealth>;
  flush(): Promise<void>;
  close(): Promise<void>;
}
