/*
 * The gateway's method table (docs/protocol.md, "Methods"): each method's params as a zod schema,
 * its result type, and the notifications the server pushes. The client types its calls from here.
 */
import { z } from 'zod';
import { ApprovalDecisionSchema } from '../approval/index.js';
import type { EngineSnapshot } from '../core/engine-snapshot.js';
import type { LaneChangeResult, LaneListing } from '../core/lane.js';
import type { SubmitResult } from '../core/submit-result.js';
import type { StreamEvent, RunEvent } from '../core/run-events.js';
import type { RunResult, RunStatus } from '../core/run-status.js';
import { RUN_QUERY_MAX_LIMIT } from '../store/run-summary.js';
import type { RunPage } from '../store/types.js';
import { IdSchema, SubmitParamsSchema } from '../core/run-request.js';
import type { SerializedInspectionEvent } from './inspection/inspect-serialize.js';
import type { NodeInfo } from './nodes/node-registry.js';

const Id = IdSchema;
const NoParams = z.object({}).strict();

export { ApprovalDecisionSchema };
export type { ApprovalDecision } from '../approval/index.js';

export const EventsSubscribeParamsSchema = z
  .object({
    runId: Id.optional(),
    sessionId: Id.optional(),
    fromSeq: z.number().int().min(0).optional(),
  })
  .strict()
  .refine((p) => p.runId === undefined || p.sessionId === undefined, {
    message: 'give runId or sessionId, not both',
    path: ['sessionId'],
  })
  .refine((p) => p.fromSeq === undefined || p.runId !== undefined || p.sessionId !== undefined, {
    message: 'fromSeq needs runId or sessionId (events of all runs can only be followed live)',
    path: ['fromSeq'],
  });

/** A page of the stored runs (Store.queryRuns in src/store/types.ts has the whole contract). */
export const RunsQueryParamsSchema = z
  .object({
    sessionId: Id.optional(),
    states: z
      .array(z.enum(['queued', 'running', 'completed', 'cancelled', 'failed']))
      .max(5)
      .optional(),
    outcome: z.string().min(1).max(500).optional(),
    before: z
      .string()
      .regex(/^[1-9]\d{0,15}$/, 'must be the cursor of a previous page (its `cursor`)')
      .optional(),
    limit: z.number().int().min(1).max(RUN_QUERY_MAX_LIMIT).default(50),
  })
  .strict();

export const MethodParamsSchemas = {
  // RunRequestSchema, whose result the engine takes without validating it again.
  'run.submit': SubmitParamsSchema,
  'run.wait': z.object({ runId: Id }).strict(),
  'run.get': z.object({ runId: Id }).strict(),
  'run.history': z.object({ runId: Id }).strict(),
  'runs.query': RunsQueryParamsSchema,
  'run.cancel': z.object({ runId: Id, reason: z.string().max(1000).optional() }).strict(),
  'session.stop': z.object({ sessionId: Id }).strict(),
  // The wait lane (docs/runs.md, "A queue you can see and change").
  'lane.list': z.object({ sessionId: Id }).strict(),
  'lane.withdraw': z.object({ runId: Id }).strict(),
  'lane.move': z.object({ runId: Id, position: z.number().int().min(1) }).strict(),
  'lane.promote': z.object({ runId: Id }).strict(),
  'lane.edit': z.object({ runId: Id, input: z.string() }).strict(),
  'events.subscribe': EventsSubscribeParamsSchema,
  'events.unsubscribe': z.object({ subscriptionId: Id }).strict(),
  'approval.respond': z.object({ approvalId: Id, decision: ApprovalDecisionSchema }).strict(),
  'engine.snapshot': NoParams,
  // The partial config itself, in the TOML vocabulary; the engine validates its keys.
  'config.update': z.record(z.string(), z.unknown()),
  'inspect.subscribe': NoParams,
  'nodes.list': NoParams,
} as const;

export type MethodName = keyof typeof MethodParamsSchemas;
export type MethodParams<M extends MethodName> = z.input<(typeof MethodParamsSchemas)[M]>;

export interface MethodResults {
  'run.submit': SubmitResult;
  'run.wait': RunResult;
  'run.get': RunStatus;
  'run.history': RunEvent[];
  'runs.query': RunPage;
  'run.cancel': { cancelled: boolean };
  'session.stop': { cancelled?: string; purged: number };
  'lane.list': LaneListing;
  'lane.withdraw': LaneChangeResult;
  'lane.move': LaneChangeResult;
  'lane.promote': LaneChangeResult;
  'lane.edit': LaneChangeResult;
  'events.subscribe': { subscriptionId: string };
  'events.unsubscribe': { ok: true };
  'approval.respond': { ok: boolean };
  'engine.snapshot': EngineSnapshot;
  'config.update': { applied: string[]; restartRequired: string[] };
  'inspect.subscribe': { subscriptionId: string };
  'nodes.list': { nodes: NodeInfo[] };
}

export function isMethodName(method: string): method is MethodName {
  return Object.hasOwn(MethodParamsSchemas, method);
}

/** What the server pushes, by notification method. */
export interface Notifications {
  /** A run (or engine-wide) event of an `events.subscribe` subscription. */
  event: { subscriptionId: string; event: StreamEvent };
  /** An XState inspection event of an `inspect.subscribe` subscription. */
  inspect: { subscriptionId: string; event: SerializedInspectionEvent };
  /** Pushed to every connection whenever a run asks a human for approval. */
  'approval.requested': { approvalId: string; runId: string; callId: string; action: unknown };
}

export type NotificationName = keyof Notifications;
