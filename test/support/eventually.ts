/*
 * Waiting for a condition, two ways, named for what is waited on. The wall-clock bound of
 * both is only a fail-safe that turns a hang into a failure naming what never happened; no
 * test asserts on how long the wait took.
 *
 * - `until`: state of this process (an actor's snapshot, a fake model's queue, a counter a
 *   callback bumps). Checked once per event-loop turn, so it returns on the first turn the
 *   condition holds, without sleeping; promise chains and I/O callbacks run in between.
 * - `eventually`: state outside this event loop (a child process, a file, a Redis key, an
 *   answer over a socket), possibly read asynchronously. Polled gently, every `everyMs`, so
 *   the polling does not take the CPU from the processes it waits for.
 */

export interface EventuallyOptions {
  /** Fail-safe: give up (and fail, naming `what`) after this long. Default 20 s. */
  withinMs?: number;
  /** The pause between two checks. Default 20 ms. */
  everyMs?: number;
}

/** Polls `condition` (sync or async) every `everyMs` until it holds; throws after `withinMs`. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  what: string,
  { withinMs = 20_000, everyMs = 20 }: EventuallyOptions = {},
): Promise<void> {
  const giveUpAt = Date.now() + withinMs;
  while (!(await condition())) {
    if (Date.now() > giveUpAt) throw new Error(`never happened within ${withinMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Checks `condition` once per event-loop turn until it holds; throws after `failSafeMs`. */
export async function until(condition: () => boolean, what: string, failSafeMs = 10_000): Promise<void> {
  const giveUpAt = Date.now() + failSafeMs;
  while (!condition()) {
    if (Date.now() > giveUpAt) throw new Error(`never happened: ${what}`);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
