/*
 * Errors are values with codes: every rejection of the public API is an EngineError whose
 * code a caller can switch on and whose message says what to do next.
 */
export type { CodedError } from './chart-words.js';

export type EngineErrorCode =
  | 'invalid_request'
  | 'duplicate_run_id'
  | 'unknown_model'
  | 'lane_full'
  /** A `busyPolicy: "reject"` message for a busy session (details.activeRunId). */
  | 'session_busy'
  /** A lane operation on a message that is not waiting (it started or ended; the message names its state). */
  | 'not_waiting'
  /** `lane.promote` of a waiting message that cannot steer the active run (none active, not plain text, ...). */
  | 'not_steerable'
  | 'not_found'
  | 'closed'
  | 'invalid_config'
  | 'timeout'
  | 'store_failed'
  /** The run's or session's stored data is damaged (the file store quarantined it, or a read found it): `details` names it. */
  | 'corrupt_file'
  /** In a cluster: the process that owns a session did not answer in time (README, "Several gateway processes"). */
  | 'node_unavailable'
  /** In a cluster: another process failed to answer a request for an unexpected reason. */
  | 'internal';

export class EngineError extends Error {
  override readonly name = 'EngineError';
  constructor(
    readonly code: EngineErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export function isEngineError(error: unknown): error is EngineError {
  return error instanceof EngineError;
}

/** An error a tool throws to give the model a result with a specific code. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
