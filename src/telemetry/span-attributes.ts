/* The span attributes of our own, beside the OpenTelemetry GenAI ones (README, "Operating Switchyard"). */

export const SWITCHYARD_ATTRIBUTES = {
  runId: 'switchyard.run.id',
  sessionId: 'switchyard.session.id',
  parentRunId: 'switchyard.parent_run.id',
  busyPolicy: 'switchyard.busy_policy',
  outcome: 'switchyard.run.outcome',
  outcomeCode: 'switchyard.run.outcome_code',
  turn: 'switchyard.turn',
  claim: 'switchyard.tool.claim',
  group: 'switchyard.tool.group',
  waitMs: 'switchyard.tool.wait_ms',
  toolOutcome: 'switchyard.tool.outcome',
  synthetic: 'switchyard.tool.synthetic',
} as const;
