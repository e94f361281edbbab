/*
 * The event vocabulary (docs/events.md). Every run event carries runId, sessionId, a per-run seq
 * and a per-session sessionSeq (both 1, 2, 3 … without gaps) and an ISO timestamp from the
 * engine clock. Engine-wide events (no run) go only to unfiltered subscribers.
 */
import type { ToolCallRequest } from '../../machines/run.machine.js';
import type { Claim } from '../concurrency/index.js';
import type { CodedError } from './errors.js';
import type { FinishReason, TokenUsage } from './model-usage.js';

/** The error of a tool call's result. */
export type ToolResultError = CodedError;

/** Why two consecutive groups of a batch could not run together. */
export interface ScheduleBoundary {
  /** Index of the first call of the later group. */
  index: number;
  /** The earlier call it had to wait for. */
  previous: string;
  next: string;
  /** The resource that conflicted (e.g. "path /w/a.ts"), or "duplicate", or "serial: …". */
  reason: string;
}

export interface ToolScheduleData {
  turn: number;
  mode: 'groups' | 'dag' | 'serial';
  concurrency: number;
  groups: [number, number][];
  claims: { callId: string; tool: string; claim: Claim; label: string }[];
  boundaries: ScheduleBoundary[];
  /** dag mode: for each call, the earlier calls it waits for. */
  deps?: number[][];
}

export interface DeniedAction {
  callId: string;
  tool: string;
  code: string;
  message: string;
}

export interface RunEventData {
  'run.queued': { position: number; reason: 'session_busy' | 'limits' };
  /**
   * `workspace`: where its tool calls work (claims of runs in one workspace meet across runs);
   * `traceId`: the run's trace, when tracing is on (README, "Operating Switchyard"); `node`: the
   * process that runs it, when several share the work (README, "Several gateway processes").
   */
  'run.started': {
    agentId: string;
    model: string;
    parentRunId?: string;
    workspace: string;
    traceId?: string;
    node?: string;
  };
  'run.steered': { steerId: string; text: string; consumedAtTurn?: number };
  /** A steer was not read within its deadline: the run is cancelled for it (`interrupt`) or it moved to the lane (`queue`). */
  'run.steer_escalated': { steerId: string; to: 'interrupt' | 'queue' };
  'turn.started': { turn: number };
  'model.delta': { turn: number; text: string };
  'model.message': {
    turn: number;
    text: string;
    toolCalls: ToolCallRequest[];
    finishReason?: FinishReason;
    usage?: TokenUsage;
  };
  'tool.scheduled': ToolScheduleData;
  /** The call must wait for a claim a call of another run holds; its tool.started follows once it holds it. */
  'tool.waiting': { callId: string; blockedBy: { runId: string; callId: string; tool: string }; resource: string };
  'tool.started': { callId: string; tool: string; args: unknown };
  'approval.requested': { approvalId: string; callId: string; action: unknown };
  'approval.resolved': { approvalId: string; decision: string; by: string };
  'tool.finished': {
    callId: string;
    ok: boolean;
    output?: unknown;
    error?: ToolResultError;
    durationMs: number;
    synthetic?: boolean;
  };
  'turn.finished': { turn: number };
  'run.retrying': { attempt: number; reason: string };
  'sandbox.warning': { message: string };
  'run.completed': {
    output: string;
    /** Model turns, and the tokens summed over them when the provider reported any. */
    usage: { turns: number } & Partial<TokenUsage>;
    toolCalls: number;
    /** Calls that were refused (denied, unavailable approval, blocked command): not a plain success. */
    denied?: DeniedAction[];
  };
  'run.cancelled': { reason: string };
  /**
   * A lane operation changed this waiting message (docs/runs.md, "A queue you can see and
   * change"): `lane` is the session's waiting ids after it, front first; `edited` carries the
   * new text, `promoted` the run it now steers. `withdrawn` is followed by `run.cancelled`.
   */
  'lane.changed': {
    change: 'withdrawn' | 'moved' | 'promoted' | 'edited';
    lane: string[];
    position?: number;
    intoRunId?: string;
    input?: string;
  };
  'run.failed': { error: CodedError };
}

export type RunEventType = keyof RunEventData;

export interface RunEventBase {
  runId: string;
  sessionId: string;
  seq: number;
  sessionSeq: number;
  at: string;
}

export type RunEvent = { [K in RunEventType]: RunEventBase & { type: K } & RunEventData[K] }[RunEventType];

export type RunEventOf<K extends RunEventType> = Extract<RunEvent, { type: K }>;

export const TERMINAL_EVENT_TYPES: ReadonlySet<RunEventType> = new Set([
  'run.completed',
  'run.cancelled',
  'run.failed',
]);

export function isTerminalEvent(event: { type: string }): boolean {
  return TERMINAL_EVENT_TYPES.has(event.type as RunEventType);
}

export interface EngineEventData {
  'engine.running': { running: string[] };
  'limits.changed': { max_runs_global: number; max_runs_per_agent: number };
  'config.reloaded': { applied: string[]; restartRequired: string[] };
}

export type EngineEvent = {
  [K in keyof EngineEventData]: { type: K; seq: number; at: string } & EngineEventData[K];
}[keyof EngineEventData];

export type StreamEvent = RunEvent | EngineEvent;
