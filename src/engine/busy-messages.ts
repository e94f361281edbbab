/*
 * What the engine does for the session's `collect`, `reject`, `rollback` and `summarize_oldest`
 * decisions (docs/runs.md, "Busy sessions"): merges the carried messages into the run that
 * carries them — its record, with the merged input and `carries`, is the one write that
 * consumes them — tells a starting run what was dropped or rolled back, and keeps a refusal
 * until admission answers it.
 */
import { EngineError } from '../core/errors.js';
import type { Store } from '../store/types.js';
import { collectedInput, overflowNotice, rollbackNotice } from './collect.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { Steers } from './steers.js';

export interface BusyMessagesDeps {
  table: RunTable;
  ledger: RunLedger;
  steers: Steers;
  store: Store;
}

type Rejection = { code: 'lane_full' | 'session_busy'; activeRunId?: string };

export class BusyMessages {
  /** Refusals not yet answered by admission, by message id. */
  private readonly rejections = new Map<string, Rejection>();
  /** A rollback message's id → the run it rolled back, until the message starts. */
  private readonly rollbacks = new Map<string, string>();

  constructor(private readonly deps: BusyMessagesDeps) {}

  /** The session refused the message: it is forgotten; admission answers with the error. */
  rejected(runId: string, rejection: Rejection): void {
    this.deps.table.delete(runId);
    this.rejections.set(runId, rejection);
  }

  /** The error admission answers a refused message with (once), or undefined. */
  takeRejection(runId: string, sessionId: string, laneCapacity: number): EngineError | undefined {
    const rejection = this.rejections.get(runId);
    if (!rejection) return undefined;
    this.rejections.delete(runId);
    if (rejection.code === 'session_busy') {
      const running =
        rejection.activeRunId !== undefined ? `run "${rejection.activeRunId}" is active` : 'messages are waiting';
      return new EngineError(
        'session_busy',
        `session "${sessionId}" is busy (${running}) and the message's busyPolicy is "reject": nothing ` +
          `was stored; send it again once the run ended, or choose another busyPolicy`,
        {
          sessionId,
          ...(rejection.activeRunId !== undefined ? { activeRunId: rejection.activeRunId } : {}),
        },
      );
    }
    return new EngineError(
      'lane_full',
      `session "${sessionId}" has ${laneCapacity} messages waiting; retry later or raise execution.wait_lane_capacity`,
      { sessionId },
    );
  }

  /** `rolledBack` was cancelled for the message `by`, which runs next. */
  rolledBack(rolledBack: string, by: string): void {
    this.rollbacks.set(by, rolledBack);
  }

  /**
   * The session admits `runId`: the `collect` messages it carries merge into its input (one
   * record write consumes them all), and it is told what was dropped or rolled back before it.
   */
  admitting(runId: string, { carries = [], summarizes = [] }: { carries?: string[]; summarizes?: string[] }): void {
    const { table, ledger, steers } = this.deps;
    const handle = table.get(runId);
    if (!handle) return;
    const notices: string[] = [];
    const rolledBack = this.rollbacks.get(runId);
    this.rollbacks.delete(runId);
    if (rolledBack !== undefined) {
      const input = table.get(rolledBack)?.request.input;
      if (input !== undefined) notices.push(rollbackNotice({ runId: rolledBack, input }));
    }
    const dropped = summarizes.flatMap((id) => {
      const input = table.get(id)?.request.input;
      return input !== undefined ? [{ runId: id, input }] : [];
    });
    if (dropped.length > 0) notices.push(overflowNotice(dropped));
    const carried = carries.map((id) => table.get(id)).filter((h): h is RunHandle => h !== undefined && !h.ended);
    if (carried.length > 0) {
      const all = [handle, ...carried];
      const input = collectedInput(
        all.map((h) => ({
          runId: h.status.runId,
          input: h.request.input,
          ...(h.request.metadata ? { metadata: h.request.metadata } : {}),
          createdAt: h.status.createdAt,
        })),
      );
      // The one write that consumes them: recovery reads `carries` and never queues them again.
      ledger.mergeCollected(
        handle,
        input,
        all.map((h) => h.status.runId),
      );
      for (const message of carried) {
        table.delete(message.status.runId);
        handle.waiters.push(...message.waiters.splice(0));
        steers.collected(message, runId);
      }
    }
    if (notices.length > 0) ledger.postFirst(handle, ...notices.map((content) => ({ role: 'user' as const, content })));
  }
}
