/*
 * run.wait for a run that executes on another process (or did, before a takeover): the run's
 * terminal event in its log, read or followed live, and the stored record beside it. A steer's
 * id waits for the run that read it — or, when that run ended first, for the follow-up that
 * carries it, which is only known once the steer is settled; so a steer still pending when its
 * run ended is looked at again until it is.
 */
import { abortReason, MAX_TIMER_MS } from '../core/clock.js';
import { runOfSteer } from '../core/steer.js';
import { EngineError, isTerminalEvent, type RunEvent, type RunResult, type WaitOptions } from '../engine/index.js';
import { resultOf } from '../core/run-status.js';
import type { RedisStore } from '../store/redis-store.js';
import { eventsOfEntries, lastEventOf } from '../store/redis-log-entry.js';
import type { StreamEntry, StreamFollower } from './stream-follower.js';

/** How often a steer still pending after its run ended is looked at again. */
const STEER_SETTLE_POLL_MS = 50;

export async function waitInCluster(
  store: RedisStore,
  follower: StreamFollower,
  id: string,
  options: WaitOptions = {},
): Promise<RunResult> {
  const stop = stopper(id, options);
  try {
    for (;;) {
      const target = await targetOf(store, id);
      if (!target) throw new EngineError('not_found', `no run "${id}"`, { runId: id });
      const terminal = await Promise.race([terminalEventOf(store, follower, target.runId, stop.onClear), stop.promise]);
      if (target.pendingSteer) {
        await Promise.race([sleep(STEER_SETTLE_POLL_MS), stop.promise]);
        continue;
      }
      const record = await store.getRun(target.runId);
      if (!record) throw new EngineError('not_found', `no run "${target.runId}"`, { runId: target.runId });
      const denied = terminal.type === 'run.completed' ? terminal.denied : undefined;
      return resultOf({ ...record, ...(denied ? { denied } : {}) });
    }
  } finally {
    stop.clear();
  }
}

/** The run an id answers for, and whether it is a steer not yet settled. */
async function targetOf(store: RedisStore, id: string): Promise<{ runId: string; pendingSteer: boolean } | undefined> {
  if (await store.getRun(id)) return { runId: id, pendingSteer: false };
  const steer = await store.getSteer(id);
  if (!steer) return undefined;
  return { runId: runOfSteer(steer), pendingSteer: steer.state === 'pending' };
}

/** The run's terminal event: read when it is stored already, otherwise awaited live. */
async function terminalEventOf(
  store: RedisStore,
  follower: StreamFollower,
  runId: string,
  onClear: (fn: () => void) => void,
): Promise<RunEvent> {
  const key = store.keys.runEvents(runId);
  const [last] = (await store.client.xrevrange(key, '+', '-', 'COUNT', 1)) as StreamEntry[];
  const lastEvent = last ? lastEventOf(last) : undefined;
  if (lastEvent && isTerminalEvent(lastEvent)) return lastEvent;
  return new Promise<RunEvent>((resolve) => {
    const unfollow = follower.follow(key, last?.[0] ?? '0-0', (entries) => {
      const terminal = eventsOfEntries(entries).find(isTerminalEvent);
      if (!terminal) return;
      unfollow();
      resolve(terminal);
    });
    onClear(unfollow);
  });
}

/** A promise that rejects on the wait's signal or timeout (the run goes on either way). */
function stopper(id: string, { signal, timeoutMs }: WaitOptions) {
  let reject!: (error: Error) => void;
  const promise = new Promise<never>((_, fail) => (reject = fail));
  promise.catch(() => {});
  const onAbort = () => reject(abortReason(signal!));
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(
          () =>
            reject(
              new EngineError(
                'timeout',
                `run "${id}" did not finish within ${timeoutMs} ms; it goes on: wait again or cancel it`,
                { runId: id },
              ),
            ),
          Math.min(timeoutMs, MAX_TIMER_MS),
        );
  const cleanups: (() => void)[] = [];
  return {
    promise,
    onClear: (fn: () => void) => void cleanups.push(fn),
    clear: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      for (const fn of cleanups.splice(0)) fn();
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
