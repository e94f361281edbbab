/*
 * The workload model (docs/simulate.md): what a deployment's traffic looks like, derived from
 * its stored run logs (derive-workload.ts) and replayed by simulateDeployment(). A JSON file a
 * person can read and edit; it holds rates, shares and empirical distributions — no message
 * text, no tool arguments, no output.
 */
import { z } from 'zod';

/**
 * An empirical distribution: observed values (at most EMPIRICAL_MAX_SAMPLES, quantiles of the
 * observations when there were more); the simulator draws one of them uniformly.
 */
export const Empirical = z.array(z.number().nonnegative()).min(1).describe('observed values, drawn uniformly');
export type Empirical = z.infer<typeof Empirical>;

export const EMPIRICAL_MAX_SAMPLES = 101;

/** Relative weights by name (they need not sum to 1). */
const Weights = z.record(z.string(), z.number().nonnegative());

/** How a tool claims what it touches, as the concurrency module sees it (docs/concurrency.md). */
export const ToolClaimKind = z.enum(['shared', 'paths', 'nodes', 'global']);
export type ToolClaimKind = z.infer<typeof ToolClaimKind>;

export const ToolModel = z.object({
  claim: ToolClaimKind.describe('shared: reads; paths: writes files; nodes: runs on a node; global: anything'),
  durationMs: Empirical.describe('how long a call ran (tool.finished durationMs)'),
  errorRate: z.number().min(0).max(1).describe('share of calls that failed'),
  approvalRate: z.number().min(0).max(1).default(0).describe('share of calls that waited for an approval'),
});
export type ToolModel = z.infer<typeof ToolModel>;

export const AgentWorkload = z.object({
  arrivalsPerHour: z
    .array(z.number().nonnegative())
    .length(24)
    .describe('mean messages per hour, for each hour of the day (UTC), averaged over the days observed'),
  messagesPerSession: Empirical.describe('messages a session received over its life'),
  busyPolicies: Weights.describe(
    'share of messages per busy policy (steer, interrupt, queue, or any newer policy name)',
  ),
  turnsPerRun: Empirical.describe('model turns a run took (every turn but the last asked for tools)'),
  modelLatencyMs: Empirical.describe('time from turn.started to model.message'),
  toolBatchSize: Empirical.describe('tool calls a model turn asked for, over the turns that asked for any'),
  tools: Weights.describe("share of tool calls per tool name (names in the workload's tools table)"),
  modelErrorRate: z.number().min(0).max(1).describe('share of model turns that failed'),
  failureRate: z
    .number()
    .min(0)
    .max(1)
    .describe('share of runs that ended failed (for the record; the simulation does not replay it directly)'),
});
export type AgentWorkload = z.infer<typeof AgentWorkload>;

export const WorkloadSchema = z.object({
  version: z.literal(1),
  source: z.object({
    runs: z.number().int().nonnegative().describe('runs the workload was derived from'),
    from: z.string().optional().describe('first message observed (ISO)'),
    to: z.string().optional().describe('last message observed (ISO)'),
    days: z.number().positive().describe('whole days the observations span (at least 1)'),
  }),
  agents: z.record(z.string(), AgentWorkload),
  tools: z.record(z.string(), ToolModel),
  approvalWaitMs: Empirical.optional().describe('from approval.requested to approval.resolved'),
});
export type Workload = z.infer<typeof WorkloadSchema>;
export type WorkloadInput = z.input<typeof WorkloadSchema>;

/** Validates a parsed workload file; the error names the offending field. */
export function parseWorkload(input: unknown, source = '<workload>'): Workload {
  const result = WorkloadSchema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`${source} is not a valid workload (docs/simulate.md): ${issues}`);
}

/** At most EMPIRICAL_MAX_SAMPLES values: the observations themselves, or their evenly spaced quantiles. */
export function empiricalOf(values: readonly number[], fallback = 0): Empirical {
  if (values.length === 0) return [fallback];
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length <= EMPIRICAL_MAX_SAMPLES) return sorted;
  const n = EMPIRICAL_MAX_SAMPLES - 1;
  return Array.from({ length: EMPIRICAL_MAX_SAMPLES }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / n)]!);
}
