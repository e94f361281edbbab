/*
 * A run's public status and result, and the record the store keeps of it: one set of fields
 * that the engine, the store and the typed client all speak.
 */
import type { CodedError } from './errors.js';
import type { TokenUsage } from './model-usage.js';
import type { DeniedAction } from './run-events.js';
import type { SteerFields } from './steer.js';

export type RunState = 'queued' | 'running' | 'completed' | 'cancelled' | 'failed';

/** Why a queued run waits: in its session's lane, or for limiter permits. */
export type QueuedFor = 'session_busy' | 'limits';

/** What both the live status and the stored record of a run hold. */
export interface RunFields {
  runId: string;
  sessionId: string;
  agentId: string;
  state: RunState;
  createdAt: string;
  startedAt?: string;
  endedAt?: string;
  output?: string;
  error?: CodedError;
  reason?: string;
  queuedFor?: QueuedFor;
  /** Tokens summed over the run's model turns, once a provider reported any. */
  usage?: TokenUsage;
  /** Once ended: the model turns it took and the tool calls it asked for. */
  turns?: number;
  toolCalls?: number;
  /** A follow-up run: the ids of the steers it carries (the first is its own id). */
  carries?: string[];
}

export interface RunStatus extends RunFields {
  denied?: DeniedAction[];
  /** While queued: 1-based place in the session's wait lane or the limiter's queue. */
  position?: number;
  parentRunId?: string;
  /** When the status was asked for by a steer's id: the steer, whose fate is this run's. */
  steer?: SteerFields;
}

/** A run's status as everything but its one writer (the engine's RunLedger) sees it. */
export type ReadonlyRunStatus = Readonly<Omit<RunStatus, 'denied'>> & { readonly denied?: readonly DeniedAction[] };

export interface RunResult {
  runId: string;
  state: 'completed' | 'cancelled' | 'failed';
  output?: string;
  error?: CodedError;
  reason?: string;
  /** Tool calls that were refused: denied, no one to approve, or a blocked command. */
  denied?: DeniedAction[];
  /** Tokens summed over the run's model turns, when the provider reported them. */
  usage?: TokenUsage;
}

export function isTerminalState(state: RunState): state is RunResult['state'] {
  return state === 'completed' || state === 'cancelled' || state === 'failed';
}

export function resultOf(status: ReadonlyRunStatus): RunResult {
  const state = isTerminalState(status.state) ? status.state : 'failed';
  return {
    runId: status.runId,
    state,
    ...(status.output !== undefined ? { output: status.output } : {}),
    ...(status.error !== undefined ? { error: status.error } : {}),
    ...(status.reason !== undefined ? { reason: status.reason } : {}),
    ...(status.denied !== undefined && status.denied.length > 0 ? { denied: [...status.denied] } : {}),
    ...(status.usage !== undefined ? { usage: status.usage } : {}),
  };
}
