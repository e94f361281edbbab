/*
 * A SimulatedClock that keeps the delay of every timer set on it and knows which are still
 * pending. A test of a wait (a retry's backoff, a reconnect) reads what the code asked the
 * clock for and moves the clock itself: it asserts on the waits and on the order of what
 * follows, never on wall-clock time.
 */
import { SimulatedClock } from 'xstate';

export class RecordingClock extends SimulatedClock {
  /** Each timer's delay in ms, in the order the timers were set. */
  readonly delays: number[] = [];
  private readonly waiting = new Set<number>();

  override setTimeout(fn: (...args: unknown[]) => void, timeout: number): number {
    this.delays.push(timeout);
    const id = super.setTimeout((...args: unknown[]) => {
      this.waiting.delete(id);
      fn(...args);
    }, timeout);
    this.waiting.add(id);
    return id;
  }

  override clearTimeout(id: number): void {
    this.waiting.delete(id);
    super.clearTimeout(id);
  }

  /** Timers set and neither fired nor cleared: what would still happen if the clock moved on. */
  pending(): number {
    return this.waiting.size;
  }
}
