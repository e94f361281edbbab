/** What a submit answers: the message started a run, waits in a queue, or steers a running run. */
export interface SubmitResult {
  runId: string;
  sessionId: string;
  outcome: 'started' | 'queued' | 'steered';
  /** While queued: 1-based place in the session's lane or the limiter's queue. */
  position?: number;
  /** For a steer: the running run it went into. */
  intoRunId?: string;
}
