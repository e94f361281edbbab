/*
 * The approval gate wired to the run log: every request and every resolution is an event of
 * the run whose tool call asked (approval.requested / approval.resolved).
 */
import { ApprovalGate, type ApprovalDecision, type ApprovalRequest, type SessionGrants } from '../approval/index.js';
import { timerMs, type Clock } from '../core/clock.js';
import type { Config } from '../config/index.js';
import type { RunLedger } from './run-ledger.js';
import type { RunTable } from './run-table.js';

export interface ApprovalWiring {
  clock: Clock;
  config: () => Config;
  grants: SessionGrants;
  table: RunTable;
  ledger: RunLedger;
  approver?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
}

export function approvalGateFor({ clock, config, grants, table, ledger, approver }: ApprovalWiring): ApprovalGate {
  return new ApprovalGate({
    clock,
    timeoutMs: () => timerMs(config().approval.timeout_seconds),
    ...(approver ? { approver } : {}),
    grants,
    onRequested: (request) => {
      const handle = table.get(request.runId);
      if (handle)
        ledger.append(handle, 'approval.requested', {
          approvalId: request.approvalId,
          callId: request.callId,
          action: request.action,
        });
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
