/*
 * The observer port: the few things an observer (src/telemetry) needs to know that the event
 * log does not carry. Everything else it reads from engine.events() and engine.snapshot().
 * Both members run synchronously inside the engine's own steps, so they must be cheap and
 * must not throw.
 */
import type { CommandVerdict } from '../sandbox/index.js';

/** A run at the moment it starts, before its `run.started` is appended. */
export interface RunStart {
  runId: string;
  sessionId: string;
  agentId: string;
  model: string;
  busyPolicy: string;
  parentRunId?: string;
  /** The caller's W3C trace context (`RunRequest.traceparent`), when it sent one. */
  traceparent?: string;
  /** Engine clock, ms since the epoch. */
  at: number;
}

export interface EngineObserver {
  /** The run starts now; a `traceId` in the answer goes into its `run.started`. Must not throw. */
  runStarting(run: RunStart): { traceId?: string };
  /** The command policy judged a tool call's command (once per call, when its batch is planned). Must not throw. */
  commandJudged(judgement: { runId: string; tool: string; verdict: CommandVerdict }): void;
}

export const NO_OBSERVER: EngineObserver = {
  runStarting: () => ({}),
  commandJudged: () => {},
};
