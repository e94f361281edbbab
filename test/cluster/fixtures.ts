/*
 * What the cluster tests share: a config for one process of a cluster on a test's Redis, and
 * readers of the stored logs the invariants are checked against (the all-runs feed, in the
 * order Redis stored it, and each session's log).
 */
import { Redis } from 'ioredis';
import { defaultConfig, mergeConfig, type Config, type PartialConfig } from '../../src/config/index.js';
import { isTerminalEvent, type RunEvent } from '../../src/engine/index.js';
import { eventsOfEntries } from '../../src/store/redis-log-entry.js';

export function clusterConfig(url: string, keyPrefix: string, nodeId: string, more: PartialConfig = {}): Config {
  return mergeConfig(defaultConfig(), {
    ...more,
    store: { kind: 'redis', url, key_prefix: keyPrefix },
    cluster: { lease_seconds: 1.5, node_id: nodeId, ...more.cluster },
  });
}

/** Every event of the feed, in the order Redis stored them. */
export async function feedOf(client: Redis, keyPrefix: string): Promise<RunEvent[]> {
  const entries = (await client.xrange(`${keyPrefix}feed`, '-', '+')) as [string, string[]][];
  return eventsOfEntries(entries);
}

export async function sessionLogOf(client: Redis, keyPrefix: string, sessionId: string): Promise<RunEvent[]> {
  const entries = (await client.xrange(`${keyPrefix}session-events:${sessionId}`, '-', '+')) as [string, string[]][];
  return eventsOfEntries(entries);
}

/** The most runs holding a permit at once, walking the feed in stored order (a start until its end). */
export function mostRunningAtOnce(feed: RunEvent[]): number {
  const running = new Set<string>();
  let most = 0;
  for (const event of feed) {
    if (event.type === 'run.started') running.add(event.runId);
    else if (isTerminalEvent(event)) running.delete(event.runId);
    most = Math.max(most, running.size);
  }
  return most;
}

/**
 * For each run, in the given (arrival) order: how many runs had ended in the feed before it
 * started. With permits granted in arrival order at a limit of `max`, the run at index i starts
 * only after i - max + 1 runs ended, whichever process appended its start first.
 */
export function endsBeforeStart(feed: RunEvent[], runIds: readonly string[]): number[] {
  let ended = 0;
  const atStart = new Map<string, number>();
  for (const event of feed) {
    if (event.type === 'run.started') atStart.set(event.runId, ended);
    else if (isTerminalEvent(event)) ended += 1;
  }
  return runIds.map((runId) => atStart.get(runId) ?? -1);
}

/** Runs of one session that overlap in its log: a run starting while another has not ended. */
export function overlappingRuns(log: RunEvent[]): string[] {
  let active: string | undefined;
  const overlaps: string[] = [];
  for (const event of log) {
    if (event.type === 'run.started') {
      if (active !== undefined && active !== event.runId) overlaps.push(`${event.runId} started while ${active} ran`);
      active = event.runId;
    } else if (isTerminalEvent(event) && event.runId === active) active = undefined;
  }
  return overlaps;
}

/** Checks a log numbers its events 1..n without a gap. */
export function gaps(events: RunEvent[], seqOf: (e: RunEvent) => number): string[] {
  return events.flatMap((e, i) => (seqOf(e) === i + 1 ? [] : [`${e.runId}: event ${i + 1} has number ${seqOf(e)}`]));
}
