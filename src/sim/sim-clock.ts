/*
 * Virtual time for the simulator. One XState SimulatedClock per simulation; each engine
 * incarnation sees it through its own IncarnationClock, which knows its pending timers (so
 * the simulator can jump straight to the next one) and can be stopped: a crashed engine's
 * timers are cancelled and any it sets later never fire, so it cannot act after its crash.
 */
import { SimulatedClock } from 'xstate';
import type { Clock } from '../core/clock.js';

export class IncarnationClock implements Clock {
  /** Pending timers of this incarnation: base timer id -> virtual time it is due. */
  private readonly due = new Map<number, number>();
  private stopped = false;

  constructor(private readonly base: SimulatedClock) {}

  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown {
    if (this.stopped) return -1;
    const id: number = this.base.setTimeout(() => {
      this.due.delete(id);
      fn();
    }, ms);
    this.due.set(id, this.base.now() + Math.max(0, ms));
    return id;
  }

  clearTimeout(id: unknown): void {
    if (typeof id === 'number' && this.due.delete(id)) this.base.clearTimeout(id);
  }

  now(): number {
    return this.base.now();
  }

  /** The virtual time the earliest pending timer is due, if any. */
  nextDue(): number | undefined {
    let next: number | undefined;
    for (const at of this.due.values()) if (next === undefined || at < next) next = at;
    return next;
  }

  /** The engine crashed: cancel its timers and ignore any it sets from now on. */
  stop(): void {
    this.stopped = true;
    for (const id of this.due.keys()) this.base.clearTimeout(id);
    this.due.clear();
  }
}
