/*
 * The approval gate wired to the run log: every request and every resolution is an event of
 * the run whose tool call asked (approval.requested / approval.resolved). Whoever may answer
 * (the gateway's clients) hears of a request through a listener, not by reading every event.
 */
import { ApprovalGate, type ApprovalDecision, type ApprovalRequest, type SessionGrants } from '../approval/index.js';
import { timerMs, type Clock } from '../core/clock.js';
import type { Config } from '../config/index.js';
import type { RunLedger } from './run-ledger.js';
import type { RunTable } from './run-table.js';

export type ApprovalRequestListener = (request: ApprovalRequest) => void;

/** The listeners of engine.onApprovalRequested; a listener's throw goes to `onError`, not to the tool call. */
export class ApprovalListeners {
  private readonly listeners = new Set<ApprovalRequestListener>();

  constructor(private readonly onError: (error: unknown) => void) {}

  /** Returns the unsubscribe function. */
  add(listener: ApprovalRequestListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  notify(request: ApprovalRequest): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(request);
      } catch (error) {
        this.onError(error);
      }
    }
  }
}

export interface ApprovalWiring {
  clock: Clock;
  config: () => Config;
  grants: SessionGrants;
  table: RunTable;
  ledger: RunLedger;
  listeners: ApprovalListeners;
  approver?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
}

export function approvalGateFor({
  clock,
  config,
  grants,
  table,
  ledger,
  listeners,
  approver,
}: ApprovalWiring): ApprovalGate {
  return new ApprovalGate({
    clock,
    timeoutMs: () => timerMs(config().approval.timeout_seconds),
    ...(approver ? { approver } : {}),
    grants,
    onRequested: (request) => {
      const handle = table.get(request.runId);
      if (!handle) return;
      ledger.append(handle, 'approval.requested', {
        approvalId: request.approvalId,
        callId: request.callId,
        action: request.action,
      });
      // After the event: a listener that reads the run's log finds the request in it.
      listeners.notify(request);
    },
    onResolved: (resolution) => {
      const handle = table.get(resolution.runId);
      if (handle)
        ledger.append(handle, 'approval.resolved', {
          approvalId: resolution.approvalId,
          decision: resolution.decision,
          by: resolution.by,
        });
    },
  });
}
