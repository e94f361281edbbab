/*
 * What a process does every third of a lease (docs/cluster.md, "Takeover"): says it is alive;
 * renews the leases of its busy sessions and lets an idle one go after it stayed idle for a
 * whole round; drops a session whose lease another process has taken (the fence moved on);
 * takes over every session with work in the store that nobody owns (its owner died, stalled
 * or shut down); picks up permits granted while it was not told; applies a newer cluster config.
 */
import type { PartialConfig } from '../config/index.js';
import type { Engine } from '../engine/index.js';
import type { RedisStore } from '../store/redis-store.js';
import type { ClusterConfig } from './cluster-config.js';
import type { ClusterMembers } from './cluster-members.js';
import type { RedisLimiter } from './redis-limiter.js';
import type { SessionLeases } from './session-leases.js';
import type { SessionRouter } from './session-router.js';

export interface LeaseKeeperDeps {
  leases: SessionLeases;
  router: SessionRouter;
  engine: () => Engine;
  store: RedisStore;
  members: ClusterMembers;
  limiter: () => RedisLimiter | undefined;
  config: ClusterConfig;
  applyConfig: (partial: PartialConfig) => void;
  /** Another process owns the session now: let it go here. Must not throw. */
  lost: (sessionId: string) => void;
  leaseMs: number;
  onError: (error: unknown) => void;
}

export class LeaseKeeper {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  /** Sessions found idle at the last round: let go at this one if they still are. */
  private readonly idle = new Set<string>();

  constructor(private readonly deps: LeaseKeeperDeps) {}

  /** Runs a round now, then every third of a lease. */
  async start(): Promise<void> {
    await this.tick();
    this.timer = setInterval(() => void this.tick(), Math.max(10, this.deps.leaseMs / 3));
  }

  /** A round as soon as the current one is over (a write was refused: a lease may be lost). */
  soon(): void {
    if (this.ticking) this.again = true;
    else void this.tick();
  }

  stop(): Promise<void> {
    clearInterval(this.timer);
    return this.ticking ?? Promise.resolve();
  }

  tick(): Promise<void> {
    if (this.ticking) return this.ticking;
    this.ticking = this.round()
      .catch(this.deps.onError)
      .finally(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          void this.tick();
        }
      });
    return this.ticking;
  }

  private async round(): Promise<void> {
    const { members, limiter, config, applyConfig } = this.deps;
    await members.heartbeat();
    await this.renewAll();
    await this.takeOrphans();
    await limiter()?.poll();
    const newer = await config.newer();
    if (newer) {
      config.applied = newer.version;
      applyConfig(newer.partial);
    }
  }

  private async renewAll(): Promise<void> {
    const { leases, router, engine } = this.deps;
    await Promise.all(
      leases.sessions().map(async (sessionId) => {
        if (router.busy(sessionId) || engine().handover.busy(sessionId)) this.idle.delete(sessionId);
        else if (!this.idle.has(sessionId)) this.idle.add(sessionId);
        else if (engine().handover.release(sessionId)) {
          this.idle.delete(sessionId);
          await leases.release(sessionId);
          return;
        }
        if (!(await leases.renew(sessionId))) {
          this.idle.delete(sessionId);
          this.deps.lost(sessionId);
        }
      }),
    );
  }

  /** Sessions with work in the store (open runs, waiting messages, pending steers) that nobody owns. */
  private async takeOrphans(): Promise<void> {
    const { store, leases, router } = this.deps;
    const [open, lanes, steers] = await Promise.all([store.openRuns(), store.readLanes(), store.pendingSteers()]);
    const sessions = new Set([
      ...open.map((r) => r.sessionId),
      ...Object.keys(lanes),
      ...steers.map((s) => s.sessionId),
    ]);
    await Promise.all(
      [...sessions]
        .filter((sessionId) => !leases.holds(sessionId) && !router.busy(sessionId))
        .map(async (sessionId) => {
          if ((await leases.ownerOf(sessionId)) === undefined) await router.take(sessionId);
        }),
    );
  }
}
