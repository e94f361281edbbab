/*
 * A SimulatedClock that keeps the delay of every timer set on it. A test of a wait (a retry's
 * backoff, a reconnect) reads what the code asked the clock for and moves the clock itself:
 * it asserts on the waits and on the order of what follows, never on wall-clock time.
 */
import { SimulatedClock } from 'xstate';

export class RecordingClock extends SimulatedClock {
  /** Each timer's delay in ms, in the order the timers were set. */
  readonly delays: number[] = [];

  override setTimeout(fn: (...args: unknown[]) => void, timeout: number): number {
    this.delays.push(timeout);
    return super.setTimeout(fn, timeout);
  }
}
