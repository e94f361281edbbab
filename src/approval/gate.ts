/*
 * The approval gate (README, "Approval, command policy and the sandbox"): where a call that must be
 * confirmed waits for a person or a programmatic approver. One gate serves the whole engine;
 * pending approvals are keyed by approval id and indexed by run and call id, so parallel gated
 * calls wait side by side. The first answer wins — `respond`, the approver, the timeout on the
 * engine clock, or the run's AbortSignal — and every later one is refused.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ApprovalVerdict } from '../../machines/tool-call.machine.js';
import type { Clock } from '../core/clock.js';
import { actionFingerprint } from './fingerprint.js';
import type { SessionGrants } from './grants.js';
import type { ActionSummary } from './summary.js';

export const ApprovalDecisionSchema = z.enum(['allow_once', 'allow_session', 'deny']);
export type ApprovalDecision = z.infer<typeof ApprovalDecisionSchema>;

/** What a person (or an approver) is asked to decide; `action` is already redacted. */
export interface ApprovalRequest {
  approvalId: string;
  runId: string;
  sessionId: string;
  callId: string;
  tool: string;
  action: ActionSummary;
  /** Why this call needs confirmation (the tier, an override or a floor). */
  reason: string;
}

/**
 * What is said of a waiting call to whoever may answer it: the fields of the `approval.requested`
 * event (and of the gateway's notification), so a process that only reads the log can say it too.
 */
export type ApprovalNotice = Pick<ApprovalRequest, 'approvalId' | 'runId' | 'sessionId' | 'callId' | 'action'>;

export type ApprovalResolvedBy = 'approver' | 'respond' | 'timeout' | 'grant' | 'cancelled';

export interface ApprovalResolution {
  approvalId: string;
  runId: string;
  callId: string;
  decision: ApprovalDecision | 'timeout' | 'cancelled';
  by: ApprovalResolvedBy;
}

export interface ApprovalGateOptions {
  clock: Clock;
  /** [approval] timeout_seconds in ms, read for each request so a reload applies to the next one. */
  timeoutMs(): number;
  /** A programmatic approver; it races with `respond`. A throw or a bad answer denies. */
  approver?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  grants: SessionGrants;
  /** A call is waiting: emit `approval.requested {approvalId, callId, action}`. */
  onRequested(request: ApprovalRequest): void;
  /** An approval settled: emit `approval.resolved {approvalId, decision, by}`. */
  onResolved(resolution: ApprovalResolution): void;
  newId?(): string;
}

export interface ApprovalGateRequest {
  runId: string;
  sessionId: string;
  callId: string;
  tool: string;
  /** The arguments the call will run with; the grant fingerprint is taken from them. */
  args: unknown;
  summary: ActionSummary;
  reason: string;
  /** Nobody is there to answer: fail closed at once. */
  unattended: boolean;
  /** The run's signal: aborting it (cancel, deadline) ends the wait. */
  signal?: AbortSignal;
}

interface Pending {
  request: ApprovalRequest;
  settle(decision: ApprovalDecision | 'timeout' | 'cancelled', by: ApprovalResolvedBy, detail?: string): void;
}

export class ApprovalGate {
  private readonly waiting = new Map<string, Pending>();
  private readonly byCall = new Map<string, string>();

  constructor(private readonly options: ApprovalGateOptions) {}

  /**
   * Asks for a decision on one call. A call whose fingerprint this session granted earlier is
   * allowed at once and reported as resolved `by: 'grant'` (no `approval.requested`); an
   * unattended call is refused at once with `approval_unavailable` and reports nothing.
   */
  request(input: ApprovalGateRequest): Promise<ApprovalVerdict> {
    const { grants } = this.options;
    const fingerprint = actionFingerprint(input.tool, input.args);
    if (grants.has(input.sessionId, fingerprint)) {
      this.options.onResolved({
        approvalId: this.newId(),
        runId: input.runId,
        callId: input.callId,
        decision: 'allow_session',
        by: 'grant',
      });
      return Promise.resolve({ allowed: true });
    }
    if (input.unattended) {
      return Promise.resolve(
        denied(
          'approval_unavailable',
          `${headline(input.summary)} needs confirmation (${input.reason}), but this run is unattended; it was not run`,
        ),
      );
    }
    if (input.signal?.aborted)
      return Promise.resolve(
        denied('cancelled', `the run was cancelled before ${headline(input.summary)} was approved`),
      );

    const request: ApprovalRequest = {
      approvalId: this.newId(),
      runId: input.runId,
      sessionId: input.sessionId,
      callId: input.callId,
      tool: input.tool,
      action: input.summary,
      reason: input.reason,
    };
    const callKey = `${input.runId}\u0000${input.callId}`;
    const timeoutMs = this.options.timeoutMs();

    return new Promise<ApprovalVerdict>((resolve) => {
      const onAbort = () => pending.settle('cancelled', 'cancelled');
      const timer = this.options.clock.setTimeout(() => pending.settle('timeout', 'timeout'), timeoutMs);
      /** False when this approval already settled. */
      const release = (): boolean => {
        if (this.waiting.get(request.approvalId) !== pending) return false;
        this.waiting.delete(request.approvalId);
        if (this.byCall.get(callKey) === request.approvalId) this.byCall.delete(callKey);
        this.options.clock.clearTimeout(timer);
        input.signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const pending: Pending = {
        request,
        settle: (decision, by, detail) => {
          if (!release()) return;
          if (decision === 'allow_session') grants.add(input.sessionId, fingerprint);
          this.options.onResolved({
            approvalId: request.approvalId,
            runId: request.runId,
            callId: request.callId,
            decision,
            by,
          });
          resolve(verdictOf(decision, request, timeoutMs, detail));
        },
      };
      this.waiting.set(request.approvalId, pending);
      this.byCall.set(callKey, request.approvalId);
      input.signal?.addEventListener('abort', onAbort, { once: true });

      try {
        this.options.onRequested(request);
      } catch (error) {
        // Nobody was told the call is waiting, so nobody can answer it: withdraw it.
        release();
        throw error;
      }
      if (this.options.approver && this.waiting.get(request.approvalId) === pending)
        this.ask(this.options.approver, pending);
    });
  }

  /**
   * Answers a pending approval. False when the id is unknown or the approval already settled
   * (answered, timed out, cancelled); a decision other than allow_once, allow_session or deny
   * is a TypeError.
   */
  respond(approvalId: string, decision: ApprovalDecision): boolean {
    const parsed = ApprovalDecisionSchema.safeParse(decision);
    if (!parsed.success) {
      throw new TypeError(
        `respond: decision must be "allow_once", "allow_session" or "deny"; got ${JSON.stringify(decision)}`,
      );
    }
    const pending = this.waiting.get(approvalId);
    if (!pending) return false;
    pending.settle(parsed.data, 'respond');
    return true;
  }

  /** Approvals waiting for an answer, oldest first. */
  pending(): ApprovalRequest[] {
    return [...this.waiting.values()].map((p) => p.request);
  }

  /** The approval a call of a run is waiting on, if any. */
  pendingFor(runId: string, callId: string): ApprovalRequest | undefined {
    const approvalId = this.byCall.get(`${runId}\u0000${callId}`);
    return approvalId === undefined ? undefined : this.waiting.get(approvalId)?.request;
  }

  private ask(approver: NonNullable<ApprovalGateOptions['approver']>, pending: Pending): void {
    const failClosed = (why: string) => pending.settle('deny', 'approver', why);
    let answer: Promise<ApprovalDecision>;
    try {
      answer = approver(pending.request);
    } catch (error) {
      failClosed(`the approver threw: ${messageOf(error)}`);
      return;
    }
    Promise.resolve(answer).then(
      (decision) => {
        const parsed = ApprovalDecisionSchema.safeParse(decision);
        if (parsed.success) pending.settle(parsed.data, 'approver');
        else failClosed(`the approver answered ${JSON.stringify(decision)}, not allow_once, allow_session or deny`);
      },
      (error: unknown) => failClosed(`the approver failed: ${messageOf(error)}`),
    );
  }

  private newId(): string {
    return this.options.newId ? this.options.newId() : randomUUID();
  }
}

function verdictOf(
  decision: ApprovalResolution['decision'],
  request: ApprovalRequest,
  timeoutMs: number,
  detail: string | undefined,
): ApprovalVerdict {
  const action = headline(request.action);
  switch (decision) {
    case 'allow_once':
    case 'allow_session':
      return { allowed: true };
    case 'deny':
      return denied(
        'approval_denied',
        detail === undefined
          ? `approval denied for ${action}; it was not run`
          : `approval denied for ${action} (${detail}); it was not run`,
      );
    case 'timeout':
      return denied(
        'approval_denied',
        `approval for ${action} timed out after ${timeoutMs / 1000} s without an answer; it was not run`,
      );
    case 'cancelled':
      return denied('cancelled', `the run was cancelled while ${action} waited for approval`);
  }
}

function denied(code: string, message: string): ApprovalVerdict {
  return { allowed: false, error: { code, message } };
}

function headline(summary: ActionSummary): string {
  return summary.summary.split('\n', 1)[0] ?? summary.tool;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
