/*
 * The permits of a simulated cluster: one limiter (the limiter chart itself, on the virtual
 * clock) that every process of the simulation asks through its SessionOwnership port, as the
 * processes of a real cluster share the limiter in Redis (src/cluster/redis-limiter.ts). Each
 * process gets a Limiter of its own that forwards to the shared chart and hears back only
 * about its runs. A process that died hears nothing more; what its runs hold is given back
 * when another process takes their session over, as the Redis limiter does.
 */
import { createActor, type Actor } from 'xstate';
import { limiterMachine, waitingCount, type LimiterEmitted } from '../../machines/limiter.machine.js';
import type { Clock } from '../core/clock.js';
import type { Limiter } from '../engine/index.js';
import type { LimiterFigures, LimiterHandlers } from '../engine/index.js';

interface Asker {
  node: string;
  sessionId: string | undefined;
  handlers: LimiterHandlers;
}

export class SharedLimiter {
  private readonly actor: Actor<typeof limiterMachine>;
  /** Every run that asked for permits and has not given them back, and who asked. */
  private readonly askers = new Map<string, Asker>();
  private readonly dead = new Set<string>();

  constructor(limits: { maxGlobal: number; maxPerAgent: number }, clock: Clock) {
    this.actor = createActor(limiterMachine, { input: limits, clock, id: 'limiter' });
    this.actor.on('*', (emitted) => {
      const event = emitted as LimiterEmitted;
      const asker = this.askers.get(event.runId);
      if (event.type === 'released') this.askers.delete(event.runId);
      if (asker === undefined || this.dead.has(asker.node)) return;
      if (event.type === 'granted') asker.handlers.granted(event.runId);
      else if (event.type === 'waiting') asker.handlers.waiting(event.runId, event.position);
      else asker.handlers.released(event.runId);
    });
    this.actor.start();
  }

  /** The limiter process `node`'s engine uses (SessionOwnership.limiter). */
  for(node: string, handlers: LimiterHandlers, sessionOf: (runId: string) => string | undefined): Limiter {
    return {
      acquire: (runId, agentId, priority) => {
        // A run a dead process held, recovered here under its id: the dead one's permits go first.
        const earlier = this.askers.get(runId);
        if (earlier !== undefined && this.dead.has(earlier.node)) this.release(runId);
        this.askers.set(runId, { node, sessionId: sessionOf(runId), handlers });
        this.actor.send({ type: 'ACQUIRE', runId, agentId, ...(priority ? { priority } : {}) });
      },
      release: (runId) => this.release(runId),
      reconfigure: (maxGlobal, maxPerAgent, weights) =>
        this.actor.send({ type: 'RECONFIGURE', maxGlobal, maxPerAgent, ...(weights ? { weights } : {}) }),
      figures: () => this.figures(),
      // The chart outlives any one process; the simulation stops it at the end.
      stop: () => {},
    };
  }

  /**
   * Process `node` died: it hears nothing more. Its runs waiting for permits leave the queue
   * now (a dead process would never start them); the permits its running runs hold stay
   * taken until their sessions are taken over (releaseSession).
   */
  died(node: string): void {
    this.dead.add(node);
    const waiting = new Set(this.waitingRuns());
    for (const [runId, asker] of [...this.askers]) if (asker.node === node && waiting.has(runId)) this.release(runId);
  }

  /** Another process took `sessionId` over from `node`: what `node`'s runs of it held is given back. */
  releaseSession(node: string, sessionId: string): void {
    for (const [runId, asker] of [...this.askers])
      if (asker.node === node && asker.sessionId === sessionId) this.release(runId);
  }

  /** Gives a holder's permits back (the chart announces `released`) or takes a waiter out of the queue. */
  private release(runId: string): void {
    this.actor.send({ type: 'RELEASE', runId });
    this.askers.delete(runId);
  }

  figures(): LimiterFigures {
    const c = this.actor.getSnapshot().context;
    const perAgent: LimiterFigures['perAgent'] = {};
    for (const [agentId, inUse] of Object.entries(c.perAgent)) perAgent[agentId] = { inUse, max: c.maxPerAgent };
    return { global: { inUse: c.inUse, max: c.maxGlobal }, perAgent, waiting: waitingCount(c) };
  }

  stop(): void {
    this.actor.stop();
  }

  private waitingRuns(): string[] {
    const c = this.actor.getSnapshot().context;
    return [...this.askers.keys()].filter((runId) => !(runId in c.holders));
  }
}
