/*
 * What the ACP agent needs from Switchyard, so the in-process engine (engine-backend.ts) and a
 * gateway reached through the typed client (gateway-backend.ts) serve the same mapping.
 */
import type { McpServer } from '@agentclientprotocol/sdk';
import type { ApprovalDecision, ApprovalTier } from '../approval/index.js';
import type { SubmitResult } from '../engine/index.js';
import type { RunEvent } from '../core/run-events.js';
import type { RunResult } from '../core/run-status.js';
import type { RunRequest } from '../core/run-request.js';

export interface SessionFeed {
  /** The session's run events in sessionSeq order: after `fromSeq` when given, else from now on. */
  events: AsyncIterable<RunEvent>;
  /** Resolves once the feed is open: no event of a run submitted after that is missed. */
  ready: Promise<void>;
  close(): void;
}

/** What the store holds of a session: its events, the input each of its runs started from, and the tier of the last. */
export interface StoredSession {
  events: RunEvent[];
  inputs: ReadonlyMap<string, string>;
  lastTier?: ApprovalTier;
}

export interface AcpBackend {
  /** The tier a new session starts in (its first mode). */
  readonly defaultTier: ApprovalTier;
  submit(request: RunRequest): Promise<SubmitResult>;
  /** The outcome of a run (or of the run a steered message went into), once it is over. */
  wait(runId: string): Promise<RunResult>;
  history(runId: string): Promise<RunEvent[]>;
  follow(sessionId: string, fromSeq?: number): SessionFeed;
  /** Cancels the session's active run and what waits behind it. */
  stopSession(sessionId: string): Promise<void>;
  /** False when the approval was already decided (answered elsewhere, timed out, cancelled). */
  respondApproval(approvalId: string, decision: ApprovalDecision): Promise<boolean>;
  /** A stored session, or undefined when there is none; absent when this backend cannot load sessions. */
  storedSession?(sessionId: string): Promise<StoredSession | undefined>;
  /** Connects the client's MCP servers for one session; absent when this backend cannot. */
  connectMcpServers?(sessionId: string, servers: readonly McpServer[], cwd: string): Promise<void>;
  close(): Promise<void>;
}
