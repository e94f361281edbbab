/*
 * The lane operations (docs/runs.md, "A queue you can see and change"): list, withdraw, move,
 * promote to a steer, edit. The session chart decides each — a message that started or left
 * answers `not_waiting` whatever raced it — and this carries out what it decided: the event on
 * the message's log, the edited text in its record, and the answer only once all of it is durable.
 */
import type { LaneChange } from '../../machines/session.machine.js';
import { nowOf, type Clock } from '../core/clock.js';
import { EngineError } from '../core/errors.js';
import type { LaneChangeResult, LaneListing } from '../core/lane.js';
import { runOfSteer } from '../core/steer.js';
import type { Store } from '../store/types.js';
import { firstWords } from './collect.js';
import type { RunLedger } from './run-ledger.js';
import type { RunTable } from './run-table.js';
import type { LaneAnswer, LaneOperation, SessionHost } from './session.host.js';
import type { Steers } from './steers.js';

export interface LaneOperationsDeps {
  table: RunTable;
  ledger: RunLedger;
  sessions: SessionHost;
  steers: Steers;
  store: Store;
  clock: Clock;
}

/** The longest text `lane.edit` accepts (as a message, it is unbounded; an edit of one need not be). */
export const MAX_EDIT_CHARS = 1_000_000;

export class LaneOperations {
  /** The text an `edit` being decided brings, applied when the session confirms the message waits. */
  private pendingEdit: { runId: string; input: string } | undefined;

  constructor(private readonly deps: LaneOperationsDeps) {}

  list(sessionId: string): LaneListing {
    const { activeRunId, entries } = this.deps.sessions.lane(sessionId);
    const now = nowOf(this.deps.clock);
    return {
      sessionId,
      ...(activeRunId !== undefined ? { activeRunId } : {}),
      entries: entries.flatMap((entry) => {
        const handle = this.deps.table.get(entry.runId);
        if (!handle) return [];
        const { request, status } = handle;
        return [
          {
            ...entry,
            busyPolicy: request.busyPolicy,
            agentId: request.agentId,
            createdAt: status.createdAt,
            ageMs: Math.max(0, now - Date.parse(status.createdAt)),
            preview: firstWords(request.input, 12),
          },
        ];
      }),
    };
  }

  withdraw(runId: string): Promise<LaneChangeResult> {
    return this.operate({ type: 'WITHDRAW', runId });
  }

  async move(runId: string, position: number): Promise<LaneChangeResult> {
    if (!Number.isInteger(position) || position < 1)
      throw new EngineError('invalid_request', `position must be a whole number from 1; got ${String(position)}`, {
        runId,
        position,
      });
    return this.operate({ type: 'MOVE', runId, position });
  }

  promote(runId: string): Promise<LaneChangeResult> {
    return this.operate({ type: 'PROMOTE', runId });
  }

  async edit(runId: string, patch: { input: string }): Promise<LaneChangeResult> {
    const input: unknown = patch?.input;
    if (typeof input !== 'string' || input.length > MAX_EDIT_CHARS)
      throw new EngineError('invalid_request', `edit needs { input: string } of at most ${MAX_EDIT_CHARS} characters`, {
        runId,
      });
    this.pendingEdit = { runId, input };
    try {
      // The session decides synchronously, before operate's first await: the finally comes after.
      return await this.operate({ type: 'EDIT', runId });
    } finally {
      this.pendingEdit = undefined;
    }
  }

  /** The session changed the lane: the message's log says how (its edited text applied first). */
  changed(runId: string, change: LaneChange, lane: string[], intoRunId?: string): void {
    const handle = this.deps.table.get(runId);
    if (!handle) return;
    let input: string | undefined;
    if (change === 'edited' && this.pendingEdit?.runId === runId) {
      input = this.pendingEdit.input;
      this.deps.ledger.editInput(handle, input);
    }
    if (change === 'promoted' && intoRunId !== undefined) {
      // Its waiters follow the steer: wait() goes on to the run that reads it (or its follow-up).
      this.deps.table.get(intoRunId)?.waiters.push(...handle.waiters.splice(0));
    }
    const position = lane.indexOf(runId);
    this.deps.ledger.append(handle, 'lane.changed', {
      change,
      lane,
      ...(position >= 0 ? { position: position + 1 } : {}),
      ...(intoRunId !== undefined ? { intoRunId } : {}),
      ...(input !== undefined ? { input } : {}),
    });
  }

  private async operate(operation: LaneOperation): Promise<LaneChangeResult> {
    const { runId } = operation;
    const sessionId = this.deps.table.get(runId)?.status.sessionId;
    const answer: LaneAnswer =
      sessionId !== undefined
        ? this.deps.sessions.laneOperation(sessionId, operation)
        : { ok: false, code: 'not_waiting', why: 'it is not in the lane' };
    if (!answer.ok) throw await this.refusal(runId, operation.type, answer);
    await this.deps.store.durable();
    return {
      runId,
      sessionId: sessionId!,
      change: answer.change,
      lane: answer.lane,
      ...(answer.intoRunId !== undefined ? { intoRunId: answer.intoRunId } : {}),
    };
  }

  /** The error for a refused operation, naming the message's state now. */
  private async refusal(
    runId: string,
    op: LaneOperation['type'],
    answer: Extract<LaneAnswer, { ok: false }>,
  ): Promise<EngineError> {
    const verb = { WITHDRAW: 'withdrawn', MOVE: 'moved', PROMOTE: 'promoted', EDIT: 'edited' }[op];
    const now = await this.stateOf(runId);
    if (!now) return new EngineError('not_found', `no message "${runId}"`, { runId });
    if (answer.code === 'not_steerable')
      return new EngineError(
        'not_steerable',
        `message "${runId}" waits but cannot steer the active run: ${answer.why}; it keeps its place`,
        { runId, ...now },
      );
    const where = now.state === 'queued' && now.queuedFor === 'limits' ? ' for run permits (it left the lane)' : '';
    const into = now.intoRunId !== undefined ? `, into run ${now.intoRunId}` : '';
    return new EngineError(
      'not_waiting',
      `message "${runId}" is not waiting in its session's lane (state ${now.state}${where}${into}): ` +
        `it can no longer be ${verb}`,
      { runId, ...now },
    );
  }

  /** Where a message is now: its run's state, or for a steered / merged message the run that carries it. */
  private async stateOf(
    runId: string,
  ): Promise<{ state: string; queuedFor?: string; intoRunId?: string; reason?: string } | undefined> {
    const steer = this.deps.steers.get(runId) ?? (await this.deps.store.getSteer(runId));
    if (steer && runOfSteer(steer) !== runId)
      return { state: steer.state === 'merged' ? 'merged' : 'steered', intoRunId: runOfSteer(steer) };
    const status = this.deps.table.get(runId)?.status ?? (await this.deps.store.getRun(runId));
    if (!status) return undefined;
    return {
      state: status.state,
      ...(status.queuedFor !== undefined ? { queuedFor: status.queuedFor } : {}),
      ...(status.reason !== undefined ? { reason: status.reason } : {}),
    };
  }
}
