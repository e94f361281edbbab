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
  /**
   * The text of runs a starting run may have to be told about (rolled back, or dropped by
   * `summarize_oldest`), kept from when they left — or, after a restart, read back by recovery.
   */
  private readonly inputs = new Map<string, string>();

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

  /** `rolledBack` was cancelled for the message `by`, which runs next (the session's lane entry says so). */
  rolledBack(rolledBack: string, _by: string): void {
    this.keepInput(rolledBack);
  }

  /** After a restart: the text of a run a notice will name (recovery read it from the store). */
  rememberInput(runId: string, input: string): void {
    this.inputs.set(runId, input);
  }

  /**
   * The session admits `runId`: the `collect` messages it carries merge into its input (one
   * record write consumes them all), and it is told what was dropped or rolled back before it.
   */
  admitting(
    runId: string,
    { carries = [], summarizes = [], rollsBack }: { carries?: string[]; summarizes?: string[]; rollsBack?: string },
  ): void {
    const { table, ledger, steers } = this.deps;
    const handle = table.get(runId);
    if (!handle) return;
    const notices: string[] = [];
    if (rollsBack !== undefined) {
      const input = this.takeInput(rollsBack);
      if (input !== undefined) notices.push(rollbackNotice({ runId: rollsBack, input }));
    }
    const dropped = summarizes.flatMap((id) => {
      const input = this.takeInput(id);
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
        // Its own record ends, so it is not open any more; its id answers for the carrier (the steer record).
        ledger.endRun(message, { state: 'cancelled', reason: 'merged' });
        ledger.settleRun(message);
      }
    }
    if (notices.length > 0) ledger.postFirst(handle, ...notices.map((content) => ({ role: 'user' as const, content })));
  }

  private keepInput(runId: string): void {
    const input = this.deps.table.get(runId)?.request.input;
    if (input !== undefined) this.inputs.set(runId, input);
  }

  private takeInput(runId: string): string | undefined {
    const input = this.inputs.get(runId) ?? this.deps.table.get(runId)?.request.input;
    this.inputs.delete(runId);
    return input;
  }
}
