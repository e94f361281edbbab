/*
 * Load on a cluster and the account of it, shared by the process tests and the soak: clients
 * submit each session's messages one after another (sessions side by side) to random live
 * processes with mixed busy policies; afterwards every accepted message must have reached an
 * outcome, and the stored logs are checked — each log numbered without a gap and ended once,
 * no session with two runs at a time, never more runs holding permits than the global limit.
 */
import { Redis } from 'ioredis';
import { ClientError } from '../../src/client/index.js';
import { isTerminalEvent, type RunEvent, type RunResult } from '../../src/engine/index.js';
import { Random } from '../../src/sim/random.js';
import { eventsOfEntries } from '../../src/store/redis-log-entry.js';
import { feedOf, gaps, mostRunningAtOnce, overlappingRuns, sessionLogOf } from './fixtures.js';
import type { ServeProcess } from './serve-process.js';

export interface Accepted {
  id: string;
  sessionId: string;
  outcome: 'started' | 'queued' | 'steered';
  policy: 'steer' | 'interrupt' | 'queue';
  via: string;
}

export interface LoadOutcome {
  accepted: Accepted[];
  /** Refused with an engine error (lane_full, …): not accepted, nothing to account for. */
  refused: string[];
  /** Sent to a process that died before answering: neither accepted nor refused as far as the client knows. */
  unanswered: number;
}

export interface LoadOptions {
  /** The processes a message may go to (the live ones, at the moment it is sent). */
  targets: () => ServeProcess[];
  sessions: string[];
  messagesPerSession: number;
  seed: number;
  /** Called after each accepted message with how many were accepted so far. */
  afterAccepted?: (count: number) => Promise<void> | void;
}

const POLICIES = { queue: 3, steer: 2, interrupt: 1 } as const;

export async function submitLoad(options: LoadOptions): Promise<LoadOutcome> {
  const outcome: LoadOutcome = { accepted: [], refused: [], unanswered: 0 };
  await Promise.all(
    options.sessions.map(async (sessionId) => {
      const random = Random.derive(options.seed, sessionId);
      for (let i = 0; i < options.messagesPerSession; i++) {
        const target = random.pick(options.targets());
        const policy = random.weighted(POLICIES);
        try {
          const result = await target.client.submit({
            sessionId,
            input: `${sessionId} message ${i}`,
            busyPolicy: policy,
          });
          outcome.accepted.push({ id: result.runId, sessionId, outcome: result.outcome, policy, via: target.nodeId });
          await options.afterAccepted?.(outcome.accepted.length);
        } catch (error) {
          if (error instanceof ClientError && error.code === -32000)
            outcome.refused.push(String((error.data as { code?: string })?.code));
          else outcome.unanswered += 1;
        }
      }
    }),
  );
  return outcome;
}

export interface ClusterAccount {
  accepted: number;
  /** Accepted messages whose wait ended with a terminal result, checked against the store. */
  accounted: number;
  runs: number;
  interrupted: number;
  overlaps: string[];
  gaps: string[];
  mostRunning: number;
  byNode: Record<string, number>;
}

/** Waits for every accepted message (through `via`) and checks the stored logs. */
export async function accountFor(
  accepted: Accepted[],
  via: ServeProcess,
  redisUrl: string,
  keyPrefix: string,
  waitMs: number,
): Promise<ClusterAccount> {
  const redis = new Redis(redisUrl);
  redis.on('error', () => {});
  try {
    const results = await Promise.all(
      accepted.map((a) =>
        withTimeout(via.client.wait(a.id), waitMs, `the outcome of ${a.id} (${a.outcome} via ${a.via})`),
      ),
    );
    let accounted = 0;
    const problems: string[] = [];
    for (const [i, a] of accepted.entries()) {
      const result = results[i]!;
      const fate = await fateOf(redis, keyPrefix, a, result);
      if (fate === undefined) accounted += 1;
      else problems.push(fate);
    }
    const sessions = [...new Set(accepted.map((a) => a.sessionId))];
    const overlaps: string[] = [];
    const logGaps: string[] = [...problems];
    const runIds = new Set<string>();
    for (const sessionId of sessions) {
      const log = await sessionLogOf(redis, keyPrefix, sessionId);
      overlaps.push(...overlappingRuns(log).map((o) => `${sessionId}: ${o}`));
      logGaps.push(...gaps(log, (e) => e.sessionSeq).map((g) => `${sessionId}: ${g}`));
      for (const event of log) runIds.add(event.runId);
    }
    let interrupted = 0;
    const byNode: Record<string, number> = {};
    for (const runId of runIds) {
      const log = await runLogOf(redis, keyPrefix, runId);
      logGaps.push(...gaps(log, (e) => e.seq));
      const terminals = log.filter(isTerminalEvent);
      if (terminals.length !== 1 || terminals[0] !== log.at(-1))
        logGaps.push(`${runId}: ${terminals.length} terminal events, the last event is ${log.at(-1)?.type}`);
      const last = log.at(-1);
      if (last?.type === 'run.failed' && last.error.code === 'interrupted') interrupted += 1;
      const started = log.find((e) => e.type === 'run.started');
      if (started && 'node' in started && started.node) byNode[started.node] = (byNode[started.node] ?? 0) + 1;
    }
    return {
      accepted: accepted.length,
      accounted,
      runs: runIds.size,
      interrupted,
      overlaps,
      gaps: logGaps,
      mostRunning: mostRunningAtOnce(await feedOf(redis, keyPrefix)),
      byNode,
    };
  } finally {
    redis.disconnect();
  }
}

/** Undefined when the message's stored fate agrees with its result; otherwise what is wrong. */
async function fateOf(redis: Redis, keyPrefix: string, a: Accepted, result: RunResult): Promise<string | undefined> {
  const record = await redis.get(`${keyPrefix}run:${a.id}`);
  if (a.outcome !== 'steered') {
    if (!record) return `${a.id}: accepted as ${a.outcome}, but no run is stored`;
    const run = JSON.parse(record) as { state: string };
    return run.state === result.state ? undefined : `${a.id}: stored ${run.state}, waited ${result.state}`;
  }
  const steer = await redis.get(`${keyPrefix}steer:${a.id}`);
  if (!steer) return `${a.id}: accepted as a steer, but no steer is stored`;
  const { state, into, followUp } = JSON.parse(steer) as { state: string; into: string; followUp?: string };
  if (state === 'consumed') {
    const read = (await runLogOf(redis, keyPrefix, into)).some((e) => e.type === 'run.steered' && e.steerId === a.id);
    return read ? undefined : `${a.id}: consumed, but ${into} never read it`;
  }
  if (state === 'requeued' || state === 'merged') {
    const carrier = await redis.get(`${keyPrefix}run:${followUp ?? a.id}`);
    return carrier ? undefined : `${a.id}: ${state}, but its follow-up ${followUp} is not stored`;
  }
  return `${a.id}: a steer still ${state} after its wait ended`;
}

async function runLogOf(redis: Redis, keyPrefix: string, runId: string): Promise<RunEvent[]> {
  const entries = (await redis.xrange(`${keyPrefix}events:${runId}`, '-', '+')) as [string, string[]][];
  return eventsOfEntries(entries);
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms)),
    ),
  ]);
}
