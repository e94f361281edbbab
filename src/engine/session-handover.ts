/*
 * Handing sessions between processes (a cluster, docs/cluster.md): taking one over (its
 * recovery, recoverSession), whether a session has anything live here, letting an idle one go,
 * and dropping one another process has taken over.
 */
import type { Conversations } from '../harness/conversation.js';
import { recoverSession, type Recovered, type RecoveryDeps } from './recovery.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';

export interface SessionHandoverDeps {
  table: RunTable;
  sessions: SessionHost;
  ledger: RunLedger;
  conversations: Conversations;
  /** Cancels a run and the runs it delegated. Must not throw. */
  cancelRunTree: (runId: string, reason: string) => void;
  recovery: RecoveryDeps;
}

export class SessionHandover {
  constructor(private readonly deps: SessionHandoverDeps) {}

  /** This process now owns the session: it picks up what the last owner left in the store. */
  async adopt(sessionId: string): Promise<Recovered> {
    await this.deps.conversations.settled(sessionId);
    this.deps.conversations.forget(sessionId);
    this.deps.sessions.resume(sessionId);
    return recoverSession(this.deps.recovery, sessionId);
  }

  /** The session has an actor (an active run or a waiting message) or a run not yet settled here. */
  busy(sessionId: string): boolean {
    return this.deps.sessions.has(sessionId) || this.handlesOf(sessionId).some((h) => !h.settled);
  }

  /**
   * Lets an idle session go: its cached conversation is forgotten, since the next process to
   * own it may append to it. False, keeping everything, while it is busy or still writing.
   */
  release(sessionId: string): boolean {
    if (this.busy(sessionId)) return false;
    return this.deps.conversations.forget(sessionId);
  }

  /**
   * Another process owns the session now: nothing of it is admitted here any more, its runs
   * stop (their writes are refused by the store's fence, so the new owner's recovery ends them
   * there), and what this process knew of them is forgotten — their state is the store's.
   */
  drop(sessionId: string, reason: string): void {
    const { sessions, ledger, table, cancelRunTree, conversations } = this.deps;
    sessions.drop(sessionId);
    // Twice: a cancelled run hands its unread steers to a follow-up, which must end too.
    for (let pass = 0; pass < 2; pass++) {
      for (const handle of this.handlesOf(sessionId)) {
        if (handle.ended) continue;
        if (handle.actor) cancelRunTree(handle.status.runId, reason);
        else ledger.endQueued(handle.status.runId, reason);
      }
    }
    for (const handle of this.handlesOf(sessionId)) if (handle.settled) table.delete(handle.status.runId);
    // The stopped runs' last conversation writes are refused by the store, but reach the cache first.
    void conversations.settled(sessionId).then(() => conversations.forget(sessionId));
  }

  private handlesOf(sessionId: string): RunHandle[] {
    return [...this.deps.table.handles()].filter((h) => h.status.sessionId === sessionId);
  }
}
