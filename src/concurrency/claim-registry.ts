/*
 * The claim registry every tool call passes before it executes (docs/claims.md, "Claims across
 * runs"): the port, and its in-process implementation over one ClaimQueue per workspace. A
 * cluster-wide implementation (a shared store) keeps the same contract; see the port's notes.
 */
import type { Claim } from './claims.js';
import { ClaimQueue, type ClaimBlock, type ClaimHolder } from './claim-queue.js';

export interface ClaimRequest extends ClaimHolder {
  /** Claims meet only inside one workspace: a path in workspace A never meets one in B. */
  workspace: string;
  claim: Claim;
}

/** What a waiting call hears. Contract: neither may throw. */
export interface ClaimListener {
  /** Called at most once, before `held`, when the call must wait. */
  waiting(block: ClaimBlock): void;
  /** Called once the whole claim is held: synchronously inside acquire() when nothing is in the way, later otherwise. */
  held(): void;
}

export interface ClaimTicket {
  /** Gives the claim back, or leaves the queue while still waiting. Idempotent. */
  release(): void;
}

/**
 * The port. An implementation must: take the whole claim at once or queue the call holding
 * nothing; serve conflicting waiters in arrival order; never make calls of one run wait for
 * each other; keep workspaces apart; and call `held` only for a ticket not yet released.
 */
export interface ClaimRegistry {
  acquire(request: ClaimRequest, listener: ClaimListener): ClaimTicket;
}

/**
 * @example
 * const registry = new InProcessClaimRegistry();
 * const ticket = registry.acquire({ workspace: '/w', runId: 'r1', callId: 'c1', tool: 'file_write', claim }, listener);
 * ticket.release(); // the next waiter of /w hears held()
 */
export class InProcessClaimRegistry implements ClaimRegistry {
  private readonly queues = new Map<string, ClaimQueue>();
  private readonly listeners = new Map<string, ClaimListener>();
  private tickets = 0;

  acquire(request: ClaimRequest, listener: ClaimListener): ClaimTicket {
    const key = String(++this.tickets);
    const { workspace, ...claim } = request;
    let queue = this.queues.get(workspace);
    if (!queue) {
      queue = new ClaimQueue();
      this.queues.set(workspace, queue);
    }
    const block = queue.enter({ ...claim, key });
    if (block === undefined) {
      listener.held();
    } else {
      this.listeners.set(key, listener);
      listener.waiting(block);
    }
    let released = false;
    const owner = queue;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.listeners.delete(key);
        const now = owner.leave(key);
        if (owner.size === 0) this.queues.delete(workspace);
        // After a microtask: whatever the releasing call still does in this step (its
        // tool.finished) comes before the next holder's tool.started. A ticket released
        // meanwhile has left the listeners and hears nothing.
        for (const next of now) queueMicrotask(() => this.notifyHeld(next.key));
      },
    };
  }

  private notifyHeld(key: string): void {
    const listener = this.listeners.get(key);
    if (!listener) return;
    this.listeners.delete(key);
    listener.held();
  }

  /** Calls waiting for a claim, across workspaces. */
  get waiting(): number {
    return this.listeners.size;
  }
}
