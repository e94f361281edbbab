/*
 * What the engine keeps per run while it matters: the admitted request, the public status,
 * the actor while it lives, messages waiting to enter the conversation, and the callers
 * waiting for the outcome.
 */
import type { Actor } from 'xstate';
import type { runMachine } from '../../machines/run.machine.js';
import type { BatchPlan } from '../harness/batch-plan.js';
import type { Message, TokenUsage } from '../model/types.js';
import type { ToolService } from '../tools/tool-service.js';
import type { RunRecord, RunState } from '../store/types.js';
import type { DeniedAction } from './run-events.js';
import type { AdmittedRequest } from './run-request.js';

export interface RunStatus {
  runId: string;
  sessionId: string;
  agentId: string;
  state: RunState;
  createdAt: string;
  startedAt?: string;
  endedAt?: string;
  output?: string;
  error?: { code: string; message: string };
  reason?: string;
  denied?: DeniedAction[];
  /** Tokens summed over the run's model turns, once a provider reported any. */
  usage?: TokenUsage;
  /** While queued: 1-based place in the session's wait lane or the limiter's queue. */
  position?: number;
  queuedFor?: 'session_busy' | 'limits' | 'steer';
  parentRunId?: string;
}

export interface RunResult {
  runId: string;
  state: 'completed' | 'cancelled' | 'failed';
  output?: string;
  error?: { code: string; message: string };
  reason?: string;
  /** Tool calls that were refused: denied, no one to approve, or a blocked command. */
  denied?: DeniedAction[];
  /** Tokens summed over the run's model turns, when the provider reported them. */
  usage?: TokenUsage;
}

export interface RunHandle {
  request: AdmittedRequest;
  status: RunStatus;
  actor?: Actor<typeof runMachine>;
  /** Set once the terminal event is appended: nothing is appended after it. */
  ended: boolean;
  /** Set once the slot and permits are released too: wait() resolves then. */
  settled: boolean;
  /** Messages (the input, consumed steers, tool results) to add before the next model turn. */
  inbox: Message[];
  workspace: string;
  followUpDepth: number;
  waiters: ((result: RunResult) => void)[];
  /** Engine-clock time at which the run's deadline expires (set when it starts running). */
  deadlineAt: number;
  /** Built when the run first acts; the one choke point of its tool calls. */
  toolService?: ToolService;
  /** The tool batch in flight, with when each call started (engine clock). */
  batch?: BatchPlan & { service: ToolService; startedAt: number[] };
}

export function isTerminalState(state: RunState): state is RunResult['state'] {
  return state === 'completed' || state === 'cancelled' || state === 'failed';
}

export function resultOf(status: RunStatus): RunResult {
  const state = isTerminalState(status.state) ? status.state : 'failed';
  return {
    runId: status.runId,
    state,
    ...(status.output !== undefined ? { output: status.output } : {}),
    ...(status.error !== undefined ? { error: status.error } : {}),
    ...(status.reason !== undefined ? { reason: status.reason } : {}),
    ...(status.denied !== undefined && status.denied.length > 0 ? { denied: status.denied } : {}),
    ...(status.usage !== undefined ? { usage: status.usage } : {}),
  };
}

export function recordOf(handle: RunHandle): RunRecord {
  const s = handle.status;
  return {
    runId: s.runId,
    sessionId: s.sessionId,
    agentId: s.agentId,
    request: handle.request,
    state: s.state,
    createdAt: s.createdAt,
    ...(s.startedAt ? { startedAt: s.startedAt } : {}),
    ...(s.endedAt ? { endedAt: s.endedAt } : {}),
    ...(s.output !== undefined ? { output: s.output } : {}),
    ...(s.error ? { error: s.error } : {}),
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.queuedFor ? { queuedFor: s.queuedFor } : {}),
  };
}
