/*
 * Why a prompt turn stopped, from the outcome of the run it became: completed is end_turn,
 * cancelled is cancelled, and the failures ACP has a word for keep it. Any other failure
 * (a deadline, a model error, an interrupted run) is an error answer that says what happened.
 */
import { RequestError, type StopReason } from '@agentclientprotocol/sdk';
import type { RunResult } from '../core/run-status.js';

/** Run failure codes that are an ACP stop reason rather than an error. */
export const FAILURE_STOP_REASONS: Readonly<Record<string, StopReason>> = {
  max_iterations: 'max_turn_requests',
  model_truncated: 'max_tokens',
  content_filtered: 'refusal',
};

export function stopReasonOf(result: RunResult): StopReason {
  if (result.state === 'completed') return 'end_turn';
  if (result.state === 'cancelled') return 'cancelled';
  const code = result.error?.code ?? 'internal';
  const reason = FAILURE_STOP_REASONS[code];
  if (reason !== undefined) return reason;
  throw RequestError.internalError(
    { runId: result.runId, code, message: result.error?.message },
    `the run failed: ${code}: ${result.error?.message ?? 'no detail'}`,
  );
}
