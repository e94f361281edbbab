/*
 * Where a request for a session runs (docs/cluster.md, "Routing"): here when this process
 * owns the session; at its owner, through the owner's inbox, when another process does; and
 * when nobody does, here, after taking the session over (its lease, then its recovery). An
 * owner that does not answer (it died or stalled) is asked again until its lease has run out
 * and the session can be taken.
 */
import { EngineError, isEngineError, type Engine } from '../engine/index.js';
import type { NodeInbox } from './node-inbox.js';
import type { SessionLeases } from './session-leases.js';

export interface SessionRouterDeps {
  leases: SessionLeases;
  engine: () => Engine;
  inbox: NodeInbox;
  leaseMs: number;
  log: (line: string) => void;
  /** The session was taken over under `token` and recovered (its last owner's permits may go). */
  adopted: (sessionId: string, token: string) => Promise<void>;
}

export class SessionRouter {
  private readonly taking = new Map<string, Promise<boolean>>();
  private readonly inflight = new Map<string, number>();

  constructor(private readonly deps: SessionRouterDeps) {}

  /** Runs `local` where the session is owned: here (taking it if nobody owns it), or asks its owner `method`. */
  async route<T>(sessionId: string, local: () => Promise<T>, method: string, params: unknown): Promise<T> {
    const { leases, inbox, leaseMs } = this.deps;
    // Long enough for an owner that died to lose its lease, and for a takeover after it.
    const deadline = Date.now() + 4 * leaseMs;
    for (;;) {
      await this.taking.get(sessionId);
      if (leases.holds(sessionId)) return this.runHere(sessionId, local);
      const owner = await leases.ownerOf(sessionId);
      if (owner === undefined) {
        await this.take(sessionId);
        continue;
      }
      try {
        if (owner === leases.nodeId)
          throw new EngineError('node_unavailable', 'a lease of an earlier life of this process has not run out yet');
        return await inbox.request<T>(owner, method, params, Math.max(1, Math.min(leaseMs, deadline - Date.now())));
      } catch (error) {
        if (!isEngineError(error) || error.code !== 'node_unavailable' || Date.now() >= deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(200, leaseMs / 10)));
      }
    }
  }

  /** On the owner: runs a request another process forwarded, if this process still owns the session. */
  async asOwner<T>(sessionId: string, local: () => Promise<T>): Promise<T> {
    await this.taking.get(sessionId);
    if (!this.deps.leases.holds(sessionId)) {
      throw new EngineError(
        'node_unavailable',
        `process ${this.deps.leases.nodeId} does not own session "${sessionId}" any more; ask again`,
      );
    }
    return this.runHere(sessionId, local);
  }

  /** Takes a session nobody owns: its lease, then its recovery. False when another process was faster. */
  take(sessionId: string): Promise<boolean> {
    const running = this.taking.get(sessionId);
    if (running) return running;
    const taking = this.adopt(sessionId).finally(() => this.taking.delete(sessionId));
    this.taking.set(sessionId, taking);
    return taking;
  }

  /** A request of the session is running here, or it is being taken over: it is not idle. */
  busy(sessionId: string): boolean {
    return this.taking.has(sessionId) || (this.inflight.get(sessionId) ?? 0) > 0;
  }

  private async adopt(sessionId: string): Promise<boolean> {
    const { leases, engine, log } = this.deps;
    const lease = await leases.acquire(sessionId);
    if (!lease.acquired) return false;
    try {
      const recovered = await engine().handover.adopt(sessionId);
      await this.deps.adopted(sessionId, lease.token);
      const what = [
        recovered.interrupted.length > 0 ? `${recovered.interrupted.length} interrupted` : '',
        recovered.requeued.length > 0 ? `${recovered.requeued.length} requeued` : '',
        recovered.repaired.length > 0 ? `${recovered.repaired.length} repaired` : '',
      ].filter(Boolean);
      if (what.length > 0) log(`took over session ${sessionId} (fence ${lease.token}): ${what.join(', ')}`);
      return true;
    } catch (error) {
      // Recovery could not read or write: give the session back, so this or another process tries again.
      engine().handover.drop(sessionId, 'owner_lost');
      await leases.release(sessionId).catch(() => {});
      throw error;
    }
  }

  private async runHere<T>(sessionId: string, local: () => Promise<T>): Promise<T> {
    this.inflight.set(sessionId, (this.inflight.get(sessionId) ?? 0) + 1);
    try {
      return await local();
    } finally {
      const left = (this.inflight.get(sessionId) ?? 1) - 1;
      if (left > 0) this.inflight.set(sessionId, left);
      else this.inflight.delete(sessionId);
    }
  }
}
