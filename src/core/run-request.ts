/*
 * RunRequest: the one shape every entry point (library, gateway, CLI) accepts, validated
 * with zod, and its admitted form with every default filled in.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import { describeIssue, describeValue } from '../config/issue-text.js';
import { MAX_TIMER_MS, timerMs } from './clock.js';
import { EngineError } from './errors.js';
import { requestFingerprintOf } from './request-fingerprint.js';
import type { BusyPolicy } from '../../machines/session.machine.js';

/** The one bound of every id a client may give (runId, sessionId, agentId, approvalId, ...; docs/protocol.md). */
export const MAX_ID_LENGTH = 500;
/** An id at the boundary: non-empty, at most MAX_ID_LENGTH characters. */
export const IdSchema = z.string().min(1).max(MAX_ID_LENGTH);

export const RunRequestSchema = z
  .object({
    runId: IdSchema.optional(),
    sessionId: IdSchema,
    agentId: IdSchema.optional(),
    input: z.string(),
    attachments: z
      .array(
        z
          .object({ name: z.string(), mediaType: z.string(), data: z.string().optional(), url: z.string().optional() })
          .strict(),
      )
      .optional(),
    metadata: z.record(z.string(), z.string()).optional(),
    timeoutMs: z.number().int().positive().max(MAX_TIMER_MS).optional(),
    maxIterations: z.number().int().positive().optional(),
    model: z.string().min(1).optional(),
    workspace: z.string().min(1).optional(),
    sandbox: z
      .object({ backend: z.enum(['auto', 'bwrap', 'none']).optional(), network: z.boolean().optional() })
      .strict()
      .optional(),
    busyPolicy: z.enum(['steer', 'interrupt', 'queue', 'collect', 'reject', 'rollback']).optional(),
    /** The approval tier of this run, in place of [approval] tier (floors and [approval.tools] still apply). */
    approvalTier: z.enum(['plan', 'ask', 'auto', 'full']).optional(),
    unattended: z.boolean().optional(),
    parentRunId: IdSchema.optional(),
    expectedRunId: IdSchema.optional(),
    /** The caller's W3C trace context (a `traceparent` header value): the run's trace continues it. */
    traceparent: z
      .string()
      .regex(
        /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/,
        'must be a W3C traceparent: 00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>',
      )
      .optional(),
    /** The limiter's class for this run (docs/runs.md, "Priorities"). */
    priority: z.enum(['interactive', 'background', 'batch']).optional(),
    /** The run must start by this time, or it ends failed with `deadline_unmeetable` then. */
    startBy: z.iso.datetime({ offset: true }).optional(),
    /** The same, relative to the submit. */
    startWithinMs: z.number().int().nonnegative().max(MAX_TIMER_MS).optional(),
    /** As a steer: how long it may wait for the running run's next turn boundary before it escalates. */
    steerDeadlineMs: z.number().int().positive().max(MAX_TIMER_MS).optional(),
    /** As a steer past its deadline: cancel the run and run this message next, or move it to the lane. */
    steerEscalation: z.enum(['interrupt', 'queue']).optional(),
  })
  .strict()
  .refine((req) => req.startBy === undefined || req.startWithinMs === undefined, {
    message: 'give startBy or startWithinMs, not both',
    path: ['startWithinMs'],
  });

export type RunRequest = z.input<typeof RunRequestSchema>;

/** Requests the gateway's run.submit schema accepted, by identity: admission takes them without parsing again. */
const validated = new WeakSet<object>();

/**
 * The params schema of the gateway's run.submit: RunRequestSchema, and its result is marked so
 * that the engine's admission uses it as it is — a request through the gateway is validated
 * once, there, and a library call once, in admitRequest. The parsed object is the gateway's
 * own copy (zod builds it), so nothing changes it between the two.
 */
export const SubmitParamsSchema = RunRequestSchema.transform((request) => {
  validated.add(request);
  return request;
});

export type RunPriority = NonNullable<z.output<typeof RunRequestSchema>['priority']>;

/** A request after validation, with the defaults of the config in force at submit time. */
export interface AdmittedRequest extends Omit<z.output<typeof RunRequestSchema>, 'startWithinMs'> {
  runId: string;
  agentId: string;
  busyPolicy: BusyPolicy;
  priority: RunPriority;
  steerEscalation: 'interrupt' | 'queue';
  timeoutMs: number;
  maxIterations: number;
  model: string;
  /** The model the caller asked for, if any: a steer may only name the running run's model. */
  modelOverride?: string;
  /** Carries no attachments and no timeout / iteration / sandbox override: may steer. */
  plainText: boolean;
  /**
   * requestFingerprintOf the request as given: a resubmit with the same runId and the same
   * fingerprint is a retry and answers with the first outcome. Absent in records stored before it.
   */
  fingerprint?: string;
}

/** `now` (the engine clock, ms) turns `startWithinMs` into the `startBy` the admitted request carries. */
export function admitRequest(raw: unknown, config: Config, now = Date.now()): AdmittedRequest {
  const valid = validRequest(raw);
  const { startWithinMs, ...req } = valid;
  if (req.workspace !== undefined && !req.workspace.startsWith('/')) {
    const message = `must be an absolute path, got ${describeValue(req.workspace)}`;
    throw new EngineError('invalid_request', `invalid run request: workspace: ${message}`, {
      issues: [{ path: 'workspace', message }],
    });
  }
  const exec = config.execution;
  const steerDeadlineMs =
    req.steerDeadlineMs ??
    (exec.steer_deadline_seconds !== undefined ? timerMs(exec.steer_deadline_seconds) : undefined);
  return {
    ...req,
    runId: req.runId ?? randomUUID(),
    agentId: req.agentId ?? 'main',
    busyPolicy: req.busyPolicy ?? exec.busy_policy,
    priority: req.priority ?? 'interactive',
    steerEscalation: req.steerEscalation ?? 'interrupt',
    ...(steerDeadlineMs !== undefined ? { steerDeadlineMs } : {}),
    ...(startWithinMs !== undefined ? { startBy: new Date(now + startWithinMs).toISOString() } : {}),
    timeoutMs: req.timeoutMs ?? timerMs(exec.default_timeout_seconds),
    maxIterations: req.maxIterations ?? exec.max_iterations,
    model: req.model ?? exec.default_model,
    modelOverride: req.model,
    plainText: isPlainText(req),
    fingerprint: requestFingerprintOf(valid),
  };
}

/** The request as RunRequestSchema gives it: parsed here unless the gateway's schema already did. */
function validRequest(raw: unknown): z.output<typeof RunRequestSchema> {
  if (typeof raw === 'object' && raw !== null && validated.has(raw)) return raw as z.output<typeof RunRequestSchema>;
  const parsed = RunRequestSchema.safeParse(raw, { reportInput: true });
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({ path: issue.path.join('.'), message: describeIssue(issue) }));
  const summary = issues.map((i) => `${i.path || '(request)'}: ${i.message}`).join('; ');
  throw new EngineError('invalid_request', `invalid run request: ${summary}`, { issues });
}

/** Only plain text may steer a running run (docs/runs.md, "Busy sessions"). */
function isPlainText(req: RunRequest): boolean {
  return (
    (req.attachments?.length ?? 0) === 0 &&
    req.timeoutMs === undefined &&
    req.maxIterations === undefined &&
    req.sandbox === undefined
  );
}

/** `RunRequest.model` is "provider" or "provider:model": the provider id and, if named, the model. */
export function splitModel(model: string): [string, string | undefined] {
  const colon = model.indexOf(':');
  return colon < 0 ? [model, undefined] : [model.slice(0, colon), model.slice(colon + 1)];
}
