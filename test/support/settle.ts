/*
 * settle: let what is already under way in this process run, without waiting for time.
 *
 * One turn is one macrotask (setImmediate): every promise chain queued before it runs to its
 * next await, and the I/O callbacks already due run too. `settle(n)` passes n turns, so work
 * that hands itself on up to n times finishes. No timer of any clock fires (a SimulatedClock
 * moves only when the test moves it) and nothing waits for wall-clock time, so a test that
 * settles and then asserts "not yet" is not a timing window: it asserts on what is queued.
 */

/** Passes `turns` macrotask turns (default 10): queued promise chains and due callbacks run. */
export async function settle(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
