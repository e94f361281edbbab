/*
 * What every store shares to answer Store.queryRuns alike (its contract is in types.ts): the
 * row built from a record, the outcome code filters match on, and the checks of a query.
 */
import { isTerminalState, type RunFields } from '../core/run-status.js';
import type { RunQuery, RunRecord, RunState, RunSummary } from './types.js';

export const RUN_QUERY_MAX_LIMIT = 500;
export const RUN_SUMMARY_INPUT_CHARS = 200;

/** "completed", a failed run's error code, a cancelled run's reason; undefined while not ended. */
export function runOutcomeOf(run: Pick<RunFields, 'state' | 'error' | 'reason'>): string | undefined {
  if (run.state === 'completed') return 'completed';
  if (run.state === 'failed') return run.error?.code ?? 'failed';
  if (run.state === 'cancelled') return run.reason ?? 'cancelled';
  return undefined;
}

export function runSummaryOf(record: RunRecord): RunSummary {
  const input = record.request.input;
  const outcome = runOutcomeOf(record);
  const parentRunId = record.request.parentRunId;
  return {
    runId: record.runId,
    sessionId: record.sessionId,
    agentId: record.agentId,
    state: record.state,
    createdAt: record.createdAt,
    ...(record.startedAt !== undefined ? { startedAt: record.startedAt } : {}),
    ...(record.endedAt !== undefined ? { endedAt: record.endedAt } : {}),
    ...(outcome !== undefined ? { outcome } : {}),
    ...(record.error !== undefined ? { error: record.error } : {}),
    ...(record.queuedFor !== undefined ? { queuedFor: record.queuedFor } : {}),
    ...(record.turns !== undefined ? { turns: record.turns } : {}),
    ...(record.toolCalls !== undefined ? { toolCalls: record.toolCalls } : {}),
    ...(record.usage !== undefined ? { usage: record.usage } : {}),
    ...(parentRunId !== undefined ? { parentRunId } : {}),
    ...(record.carries !== undefined ? { carries: record.carries } : {}),
    input: input.length > RUN_SUMMARY_INPUT_CHARS ? `${input.slice(0, RUN_SUMMARY_INPUT_CHARS - 1)}…` : input,
  };
}

/** Whether a run in `state` with `outcome` passes the state and outcome filters of `query`. */
export function passesStateFilters(query: RunQuery, state: RunState, outcome: string | undefined): boolean {
  if (query.states && query.states.length > 0 && !query.states.includes(state)) return false;
  return query.outcome === undefined || query.outcome === outcome;
}

/** The states a query can find: those asked for, or all. */
export function statesOf(query: RunQuery): RunState[] {
  const all: RunState[] = ['queued', 'running', 'completed', 'cancelled', 'failed'];
  const wanted = query.states && query.states.length > 0 ? all.filter((state) => query.states!.includes(state)) : all;
  // An outcome belongs to ended runs only.
  return query.outcome === undefined ? wanted : wanted.filter(isTerminalState);
}

/** The position below which a query looks (Infinity for the first page); throws RangeError for a bad limit or cursor. */
export function checkRunQuery(query: RunQuery): number {
  if (!Number.isInteger(query.limit) || query.limit < 1 || query.limit > RUN_QUERY_MAX_LIMIT) {
    throw new RangeError(`limit must be a whole number from 1 to ${RUN_QUERY_MAX_LIMIT}; got ${String(query.limit)}`);
  }
  if (query.before === undefined) return Number.POSITIVE_INFINITY;
  if (!/^[1-9]\d{0,15}$/.test(query.before)) {
    throw new RangeError(
      `before must be the cursor of a previous page (a position such as "42"); got ${JSON.stringify(query.before)}`,
    );
  }
  return Number(query.before);
}

export function cursorOf(position: number): string {
  return String(position);
}
