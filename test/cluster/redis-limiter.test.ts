/*
 * The cluster's limiter script on a real Redis, with two limiters standing for two processes:
 * the limiter chart's rules (arrival order across processes, skipping a waiter whose agent is at
 * its cap, raising admits, lowering preempts nothing) and the cluster's (a waiter of a session
 * with a newer owner is dropped; a permit held under an old fence is freed by the new owner
 * once it has ended that run; a grant a process was not told about is found by polling).
 */
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { ClusterKeys, RedisLimiter } from '../../src/cluster/index.js';
import { eventually } from '../support/eventually.js';
import { redisFixture } from './redis-fixture.js';

const redis = redisFixture('the limiter tests');

let keys: ClusterKeys;

beforeEach(() => {
  keys = new ClusterKeys(`m${randomUUID().slice(0, 8)}:`);
});

interface Process {
  limiter: RedisLimiter;
  log: string[];
  fenced: string[];
  /** run id -> session */
  runs: Map<string, string>;
  /** session -> token this process holds it under */
  tokens: Map<string, string>;
}

/** Two processes whose grants reach each other only when `tell` is on. */
function processes(limits: { maxGlobal: number; maxPerAgent: number }, tell = true): [Process, Process] {
  const made: Process[] = [];
  for (const nodeId of ['A', 'B']) {
    const p: Process = {
      log: [],
      fenced: [],
      runs: new Map(),
      tokens: new Map(),
      limiter: undefined as unknown as RedisLimiter,
    };
    p.limiter = new RedisLimiter({
      client: redis.client,
      keys,
      nodeId,
      limits,
      handlers: {
        granted: (runId) => p.log.push(`granted ${runId}`),
        waiting: (runId, position) => p.log.push(`waiting ${runId} at ${position}`),
        released: (runId) => p.log.push(`released ${runId}`),
      },
      sessionOf: (runId) => p.runs.get(runId),
      tokenOf: (sessionId) => p.tokens.get(sessionId),
      tellGranted: (to, runId) => {
        if (tell) made.find((_, i) => ['A', 'B'][i] === to)?.limiter.onGranted(runId);
      },
      onFenced: (sessionId) => p.fenced.push(sessionId),
      onError: (error) => {
        throw error;
      },
    });
    made.push(p);
  }
  return made as [Process, Process];
}

/** The process owns the session under token 1, and asks for a permit for a run of it. */
async function ask(p: Process, runId: string, agent = 'main', sessionId = `session-of-${runId}`): Promise<void> {
  await redis.client.set(keys.fence(sessionId), p.tokens.get(sessionId) ?? '1');
  if (!p.tokens.has(sessionId)) p.tokens.set(sessionId, '1');
  p.runs.set(runId, sessionId);
  p.limiter.acquire(runId, agent);
  await p.limiter.answered(runId);
}

describe.skipIf(!redis.available)('the cluster limiter', () => {
  it('grants in arrival order across processes, each release to the next waiter wherever it waits', async () => {
    const [a, b] = processes({ maxGlobal: 1, maxPerAgent: 5 });
    await ask(a, 'r1');
    await ask(b, 'r2');
    await ask(a, 'r3');
    expect(a.log).toEqual(['granted r1', 'waiting r3 at 2']);
    expect(b.log).toEqual(['waiting r2 at 1']);
    a.limiter.release('r1');
    await eventually(() => b.log.includes('granted r2'), 'B was told r2 is granted');
    expect(a.log).not.toContain('granted r3');
    b.limiter.release('r2');
    await eventually(() => a.log.includes('granted r3'), 'A was told r3 is granted');
    expect((await a.limiter.poll()).global).toEqual({ inUse: 1, max: 1 });
  });

  it('skips a waiter whose agent is at its cap, so another agent is not blocked', async () => {
    const [a, b] = processes({ maxGlobal: 3, maxPerAgent: 1 });
    await ask(a, 'x1', 'x');
    await ask(b, 'x2', 'x');
    await ask(a, 'y1', 'y');
    expect(a.log).toEqual(['granted x1', 'granted y1']);
    expect(b.log).toEqual(['waiting x2 at 1']);
    const figures = await a.limiter.poll();
    expect(figures).toEqual({
      global: { inUse: 2, max: 3 },
      perAgent: { x: { inUse: 1, max: 1 }, y: { inUse: 1, max: 1 } },
      waiting: 1,
    });
  });

  it('admits waiters when a limit is raised, and preempts nothing when it is lowered', async () => {
    const [a, b] = processes({ maxGlobal: 1, maxPerAgent: 5 });
    await ask(a, 'r1');
    await ask(b, 'r2');
    a.limiter.reconfigure(2, 5);
    await eventually(() => b.log.includes('granted r2'), 'the raise admitted r2');
    b.limiter.reconfigure(1, 5);
    await ask(a, 'r3');
    expect(a.log).toContain('waiting r3 at 1');
    expect((await a.limiter.poll()).global).toEqual({ inUse: 2, max: 1 });
    a.limiter.release('r1');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(a.log).not.toContain('granted r3');
    b.limiter.release('r2');
    await eventually(() => a.log.includes('granted r3'), 'r3 runs once usage is below the new limit');
  });

  it('drops a waiter whose session has a newer owner; a permit under an old fence waits for the new owner to free it', async () => {
    const [a, b] = processes({ maxGlobal: 1, maxPerAgent: 5 });
    await ask(a, 'r1', 'main', 's');
    await ask(a, 'r2', 'main', 's');
    expect(a.log).toEqual(['granted r1', 'waiting r2 at 1']);
    // B takes session s over: its fence moves on.
    await redis.client.set(keys.fence('s'), '2');
    b.tokens.set('s', '2');
    await ask(b, 'r3', 'main', 'other');
    expect(b.log).toEqual(['waiting r3 at 1']);
    expect(a.fenced).toEqual([]);
    // r2 (old fence) is gone from the queue; r1 still holds its permit until the new owner ends it.
    expect((await b.limiter.poll()).waiting).toBe(1);
    await b.limiter.releaseSession('s', '2');
    await eventually(() => b.log.includes('granted r3'), 'the permit r1 held went to r3');
    // A asks again for s under its old token: refused, and A is told to let s go.
    a.runs.set('r4', 's');
    a.limiter.acquire('r4', 'main');
    await a.limiter.answered('r4');
    expect(a.fenced).toEqual(['s']);
    expect(a.log).not.toContain('granted r4');
  });

  it('a process that lost a session can neither take nor give back what its run holds under the new owner', async () => {
    const [a, b] = processes({ maxGlobal: 1, maxPerAgent: 5 });
    await ask(a, 'blocker', 'main', 'other');
    await ask(a, 'r', 'main', 's');
    expect(a.log).toEqual(['granted blocker', 'waiting r at 1']);
    // B takes s over and queues r again (recovery does), keeping r's place in the queue.
    await redis.client.set(keys.fence('s'), '2');
    b.tokens.set('s', '2');
    await ask(b, 'r', 'main', 's');
    expect(b.log).toEqual(['waiting r at 1']);
    // A, not knowing yet, asks again under its old token, then lets r go: neither touches B's place.
    a.limiter.acquire('r', 'main');
    await a.limiter.answered('r');
    expect(a.fenced).toEqual(['s']);
    a.limiter.release('r');
    expect((await b.limiter.poll()).waiting).toBe(1);
    a.limiter.release('blocker');
    await eventually(() => b.log.includes('granted r'), 'r, queued by its new owner, got the permit');
    // Nor can A give back the permit r now holds under B.
    a.limiter.release('r');
    expect((await b.limiter.poll()).global.inUse).toBe(1);
  });

  it('finds a grant it was not told about when it polls', async () => {
    const [a, b] = processes({ maxGlobal: 1, maxPerAgent: 5 }, false);
    await ask(a, 'r1');
    await ask(b, 'r2');
    a.limiter.release('r1');
    await eventually(async () => (await a.limiter.poll()).global.inUse === 1, 'r2 holds the permit in Redis');
    expect(b.log).toEqual(['waiting r2 at 1']);
    await b.limiter.poll();
    expect(b.log).toEqual(['waiting r2 at 1', 'granted r2']);
  });
});
