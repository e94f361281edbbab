/** The engine's figures at one moment: permits against limits, waiting runs, live sessions. */
export interface EngineSnapshot {
  global: { inUse: number; max: number };
  perAgent: Record<string, { inUse: number; max: number }>;
  waiting: number;
  running: string[];
  /** Busy sessions; `lane`: the ids waiting in the session's lane, front first (lane.list has the details). */
  sessions: { sessionId: string; activeRunId?: string; laneDepth: number; lane: string[] }[];
}
