/*
 * A run and the runs it delegated to (session_send), cancelled together: a running run gets
 * CANCEL, a waiting one leaves its lane, and so on down the tree.
 */
import type { RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';

export type CancelRunTree = (runId: string, reason: string) => void;

/** Cancels a run (running or queued) and every run it delegated to. Must not throw. */
export function runTreeCanceller(table: RunTable, sessions: Pick<SessionHost, 'cancelQueued'>): CancelRunTree {
  const cancelRunTree = (runId: string, reason: string): void => {
    const handle = table.get(runId);
    if (handle?.actor && !handle.ended) handle.actor.send({ type: 'CANCEL', reason });
    else if (handle && !handle.ended) sessions.cancelQueued(handle.status.sessionId, runId, reason);
    for (const child of table.childrenOf(runId)) cancelRunTree(child, `parent ${reason}`);
  };
  return cancelRunTree;
}
