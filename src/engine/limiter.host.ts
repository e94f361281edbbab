/*
 * Hosts machines/limiter.machine.ts: the limiter actor that grants run permits. It owns
 * the actor and forwards what the limiter announces to a handler table the engine supplies.
 */
import { createActor, type Actor, type AnyActorRef } from 'xstate';
import type { Priority, PriorityWeights, LimiterEmitted } from '../../machines/limiter.machine.js';
import { waitingCount } from '../../machines/limiter.machine.js';
import { limiterMachine } from '../../machines/limiter.machine.js';
import type { Clock } from '../core/clock.js';
import type { InspectionHub } from './inspection.js';

/** What the engine does with the limiter's announcements. Contract: none may throw. */
export interface LimiterHandlers {
  /** The run holds its permits now: start it. */
  granted(runId: string): void;
  /** The run waits for permits at this 1-based position in the limiter's service order. */
  waiting(runId: string, position: number): void;
  /** The run gave its permits back. */
  released(runId: string): void;
}

/** The limiter's permits in use against their limits, and how many runs wait for one. */
export interface LimiterFigures {
  global: { inUse: number; max: number };
  perAgent: Record<string, { inUse: number; max: number }>;
  waiting: number;
}

/**
 * @example
 * const limiter = new LimiterHost({ maxGlobal: 8, maxPerAgent: 3 }, clock, inspection, handlers);
 * limiter.acquire('run-1', 'main', 'interactive'); // handlers.granted('run-1') or handlers.waiting('run-1', n)
 */
export class LimiterHost {
  private readonly actor: Actor<typeof limiterMachine>;

  constructor(
    limits: { maxGlobal: number; maxPerAgent: number; weights?: PriorityWeights },
    clock: Clock,
    inspection: InspectionHub,
    handlers: LimiterHandlers,
  ) {
    this.actor = createActor(limiterMachine, { input: limits, clock, inspect: inspection.option, id: 'limiter' });
    this.actor.on('*', (emitted) => {
      const event = emitted as LimiterEmitted;
      if (event.type === 'granted') handlers.granted(event.runId);
      else if (event.type === 'waiting') handlers.waiting(event.runId, event.position);
      else handlers.released(event.runId);
    });
    this.actor.start();
  }

  get ref(): AnyActorRef {
    return this.actor;
  }

  acquire(runId: string, agentId: string, priority: Priority = 'interactive'): void {
    this.actor.send({ type: 'ACQUIRE', runId, agentId, priority });
  }

  release(runId: string): void {
    this.actor.send({ type: 'RELEASE', runId });
  }

  reconfigure(maxGlobal: number, maxPerAgent: number, weights?: PriorityWeights): void {
    this.actor.send({ type: 'RECONFIGURE', maxGlobal, maxPerAgent, ...(weights ? { weights } : {}) });
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
}
