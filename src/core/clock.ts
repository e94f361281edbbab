/*
 * The engine's notion of time. XState's Clock (setTimeout/clearTimeout) plus an optional
 * now(): SimulatedClock has both, so a test can drive deadlines, lane expiry and model
 * latency in virtual time.
 */
/** Structurally XState's Clock (which SimulatedClock implements), plus an optional now(). */
export interface Clock {
  setTimeout(fn: (...args: unknown[]) => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  now?(): number;
}

export const systemClock: Clock = {
  setTimeout: (fn: (...args: unknown[]) => void, ms: number) => setTimeout(fn, ms),
  clearTimeout: (id: unknown) => clearTimeout(id as NodeJS.Timeout),
  now: () => Date.now(),
};

export function nowOf(clock: Clock): number {
  return clock.now ? clock.now() : Date.now();
}

/** The clock's time as an ISO string: what every stored timestamp and event `at` holds. */
export function isoNow(clock: Clock): string {
  const ms = nowOf(clock);
  // Timestamps come in bursts within one millisecond: format each millisecond once.
  if (ms !== lastIso.ms) lastIso = { ms, iso: new Date(ms).toISOString() };
  return lastIso.iso;
}

let lastIso = { ms: Number.NaN, iso: '' };

/** setTimeout clamps larger delays to 1 ms, which would fire a long timer at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A duration in seconds (from config) as a timer delay in ms, capped at MAX_TIMER_MS. */
export function timerMs(seconds: number): number {
  return Math.min(seconds * 1000, MAX_TIMER_MS);
}

/** Waits `ms` on the given clock; rejects with the signal's reason when aborted first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clock.clearTimeout(id);
      reject(abortReason(signal!));
    };
    const id = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const error = new Error(typeof reason === 'string' ? reason : 'aborted');
  error.name = 'AbortError';
  return error;
}
