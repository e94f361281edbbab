/*
 * Cluster nodes in one test process, each on its own connections to a real redis-server (one
 * per file, a fresh key prefix per test): what any process answers for any session —
 * submits handed to the session's owner, waits and subscriptions for runs executed elsewhere,
 * approvals raised on one process answered through another, cluster-wide limits and
 * snapshots, config changes that reach every process, an idle session moving — and what
 * happens when a process is cut off from Redis past its lease: the others take its sessions,
 * and when it comes back its writes are refused and it lets the sessions go.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ClusterNode } from '../../src/cluster/index.js';
import type { PartialConfig } from '../../src/config/index.js';
import { z } from 'zod';
import { scriptedModel, type ScriptTurn } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import type { RunEvent, StreamEvent } from '../../src/engine/index.js';
import {
  clusterConfig,
  endsBeforeStart,
  feedOf,
  gaps,
  mostRunningAtOnce,
  overlappingRuns,
  sessionLogOf,
} from './fixtures.js';
import { redisFixture } from './redis-fixture.js';
import { eventually } from '../support/eventually.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

const redis = redisFixture('the cluster tests');

let prefix: string;
const nodes: ClusterNode[] = [];
const proxies: TcpProxy[] = [];

afterEach(async () => {
  for (const proxy of proxies.splice(0)) proxy.heal();
  await Promise.all(nodes.splice(0).map((node) => node.close()));
  await Promise.all(proxies.map((p) => p.close()));
});

const quiet = () => {};

/** A tool that is neither read-only nor idempotent: tier "ask" asks before it runs. */
const launch = defineTool({
  name: 'launch',
  description: 'Launches.',
  input: z.object({}),
  execute: async () => 'launched',
});

async function startNode(
  nodeId: string,
  script: ScriptTurn[] | ((ctx: { turn: number; input: string }) => ScriptTurn),
  more: PartialConfig = {},
  url = redis.server.url,
): Promise<ClusterNode> {
  const node = await ClusterNode.start({
    config: clusterConfig(url, prefix, nodeId, more),
    models: { scripted: scriptedModel(script) },
    tools: [launch],
    log: quiet,
    onError: quiet,
  });
  nodes.push(node);
  return node;
}

function collect(stream: AsyncIterable<StreamEvent>): StreamEvent[] {
  const seen: StreamEvent[] = [];
  void (async () => {
    for await (const event of stream) seen.push(event);
  })();
  return seen;
}

describe.skipIf(!redis.available)('a cluster of processes on one Redis', () => {
  it('hands a submit for a busy session to its owner, and any process follows and waits for its runs', async () => {
    prefix = `c${randomUUID().slice(0, 8)}:`;
    const script: ScriptTurn[] = [{ text: 'working', delayMs: 150 }];
    const a = await startNode('A', script);
    const b = await startNode('B', script);
    const following = b.events({ sessionId: 's1', fromSeq: 0 });
    const seen = collect(following);
    const first = await a.submit({ sessionId: 's1', input: 'one' });
    const second = await b.submit({ sessionId: 's1', input: 'two', busyPolicy: 'queue' });
    expect(first.outcome).toBe('started');
    expect(second).toMatchObject({ outcome: 'queued', position: 1 });
    expect(await b.wait(first.runId)).toMatchObject({ state: 'completed', output: 'working' });
    expect(await b.wait(second.runId)).toMatchObject({ state: 'completed', output: 'working' });
    await eventually(
      () => seen.filter((e) => e.type === 'run.completed').length === 2,
      'the follower saw both runs end',
    );
    following.close();
    const started = seen.filter((e) => e.type === 'run.started') as RunEvent[];
    // Both ran on the session's owner, where the first message arrived.
    expect(started.map((e) => [e.runId, 'node' in e ? e.node : undefined])).toEqual([
      [first.runId, 'A'],
      [second.runId, 'A'],
    ]);
    expect(gaps(seen as RunEvent[], (e) => e.sessionSeq)).toEqual([]);
    expect((await b.history(second.runId)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(await b.getRun(first.runId)).toMatchObject({ state: 'completed' });
  });

  it('holds max_runs_global across processes, in arrival order, and reports it cluster-wide', async () => {
    prefix = `l${randomUUID().slice(0, 8)}:`;
    const script: ScriptTurn[] = [{ text: 'done', delayMs: 200 }];
    const more: PartialConfig = { execution: { max_runs_global: 2, max_runs_per_agent: 5 } };
    const a = await startNode('A', script, more);
    const b = await startNode('B', script, more);
    const results = [];
    for (let i = 0; i < 8; i++)
      results.push(await (i % 2 === 0 ? a : b).submit({ sessionId: `s${i}`, input: `m${i}` }));
    expect(results.map((r) => r.outcome)).toEqual([
      'started',
      'started',
      'queued',
      'queued',
      'queued',
      'queued',
      'queued',
      'queued',
    ]);
    const snapshot = await a.snapshot();
    expect(snapshot.global).toEqual({ inUse: 2, max: 2 });
    expect(snapshot.waiting).toBe(6);
    expect(snapshot.running).toHaveLength(2);
    for (const r of results) expect((await b.wait(r.runId)).state).toBe('completed');
    const feed = await feedOf(redis.client, prefix);
    expect(mostRunningAtOnce(feed)).toBe(2);
    // Granted in the order the messages arrived, whichever process they arrived at: the i-th
    // waited for i - 1 runs to end. (Two grants of one release round may append their starts
    // in either order: each process writes its own.)
    const ends = endsBeforeStart(
      feed,
      results.map((r) => r.runId),
    );
    expect(ends.map((n, i) => n >= i - 1)).toEqual(results.map(() => true));
    expect(ends.slice(0, 2)).toEqual([0, 0]);
  });

  it('answers an approval raised on one process through another, which also notifies its own clients', async () => {
    prefix = `p${randomUUID().slice(0, 8)}:`;
    const script: ScriptTurn[] = [{ toolCalls: [{ id: 'l', name: 'launch', args: {} }] }, { text: 'launched' }];
    const more: PartialConfig = { approval: { tier: 'ask' } };
    const a = await startNode('A', script, more);
    const b = await startNode('B', script, more);
    const everything = b.events({});
    const seen = collect(everything);
    const { runId } = await a.submit({ sessionId: 's1', input: 'launch it' });
    await eventually(() => seen.some((e) => e.type === 'approval.requested'), 'B saw the approval A raised');
    const requested = seen.find((e) => e.type === 'approval.requested') as RunEvent & { approvalId: string };
    expect(requested.runId).toBe(runId);
    expect(await b.respondApproval('no-such-approval', 'allow_once')).toBe(false);
    expect(await b.respondApproval(requested.approvalId, 'allow_once')).toBe(true);
    expect(await b.wait(runId)).toMatchObject({ state: 'completed', output: 'launched' });
    expect((await b.history(runId)).find((e) => e.type === 'approval.resolved')).toMatchObject({
      decision: 'allow_once',
    });
    everything.close();
  });

  it('cancels a run and stops a session through a process that does not own them', async () => {
    prefix = `x${randomUUID().slice(0, 8)}:`;
    const script: ScriptTurn[] = [{ text: 'slow', delayMs: 5_000 }];
    const a = await startNode('A', script);
    const b = await startNode('B', script);
    const running = await a.submit({ sessionId: 's1', input: 'one' });
    const queued = await a.submit({ sessionId: 's1', input: 'two', busyPolicy: 'queue' });
    expect(await b.cancel(running.runId, 'changed my mind')).toBe(true);
    expect(await b.wait(running.runId)).toMatchObject({ state: 'cancelled', reason: 'changed my mind' });
    await eventually(async () => (await b.getRun(queued.runId))?.state === 'running', 'the queued run started');
    const third = await b.submit({ sessionId: 's1', input: 'three', busyPolicy: 'queue' });
    expect(await b.stopSession('s1')).toEqual({ cancelled: queued.runId, purged: 1 });
    expect(await a.wait(third.runId)).toMatchObject({ state: 'cancelled', reason: 'purged' });
    expect(await b.cancel(running.runId)).toBe(false);
  });

  it('applies a config change made through one process on every process, limits included', async () => {
    prefix = `g${randomUUID().slice(0, 8)}:`;
    const a = await startNode('A', [{ text: 'done' }]);
    const b = await startNode('B', [{ text: 'done' }]);
    expect(await b.reconfigure({ execution: { max_runs_global: 5, wait_lane_capacity: 7 } })).toMatchObject({
      applied: ['execution.max_runs_global', 'execution.wait_lane_capacity'],
    });
    await eventually(() => a.engine.currentConfig().execution.wait_lane_capacity === 7, 'A applied the change');
    expect(a.engine.currentConfig().execution.max_runs_global).toBe(5);
    expect((await a.snapshot()).global.max).toBe(5);
    // A process that joins later takes the cluster's change over its own file.
    const c = await startNode('C', [{ text: 'done' }]);
    expect(c.engine.currentConfig().execution.wait_lane_capacity).toBe(7);
  });

  it('lets an idle session go, so the next message makes another process its owner', async () => {
    prefix = `i${randomUUID().slice(0, 8)}:`;
    const a = await startNode('A', [{ text: 'done' }]);
    const b = await startNode('B', [{ text: 'done' }]);
    const first = await a.submit({ sessionId: 's1', input: 'one' });
    await a.wait(first.runId);
    // Idle for a whole renewal round, then released.
    await eventually(async () => (await redis.client.exists(`${prefix}lease:s1`)) === 0, 'A let the idle session go');
    const second = await b.submit({ sessionId: 's1', input: 'two' });
    expect(await b.wait(second.runId)).toMatchObject({ state: 'completed' });
    const log = await sessionLogOf(redis.client, prefix, 's1');
    expect(log.filter((e) => e.type === 'run.started').map((e) => ('node' in e ? e.node : undefined))).toEqual([
      'A',
      'B',
    ]);
    expect(gaps(log, (e) => e.sessionSeq)).toEqual([]);
  });

  it('a process that shuts down leaves its waiting messages to the others, which run them', async () => {
    prefix = `q${randomUUID().slice(0, 8)}:`;
    const script = (ctx: { input: string }): ScriptTurn => ({
      text: `did ${ctx.input}`,
      delayMs: ctx.input === 'long' ? 5_000 : 20,
    });
    const a = await startNode('A', script);
    const b = await startNode('B', script);
    const long = await a.submit({ sessionId: 's1', input: 'long' });
    const waiting = await b.submit({ sessionId: 's1', input: 'next', busyPolicy: 'queue' });
    expect(waiting.outcome).toBe('queued');
    await a.close();
    expect(await b.wait(long.runId)).toMatchObject({ state: 'cancelled' });
    expect(await b.wait(waiting.runId)).toMatchObject({ state: 'completed', output: 'did next' });
    const log = await sessionLogOf(redis.client, prefix, 's1');
    expect(log.filter((e) => e.type === 'run.started').map((e) => ('node' in e ? e.node : undefined))).toEqual([
      'A',
      'B',
    ]);
  });

  it('takes over the sessions of a process cut off from Redis past its lease; back, its writes are refused and it lets them go', async () => {
    prefix = `t${randomUUID().slice(0, 8)}:`;
    const proxy = await startTcpProxy(redis.server.port);
    proxies.push(proxy);
    // "long" works in short turns, writing events all the time, also while it is cut off.
    const script = (ctx: { turn: number; input: string }): ScriptTurn =>
      ctx.input === 'long' && ctx.turn < 100
        ? { toolCalls: [{ name: 'file_read', args: { path: 'none' } }], delayMs: 100 }
        : { text: `did ${ctx.input}`, delayMs: 50 };
    const a = await startNode('A', script, {}, proxy.url);
    const b = await startNode('B', script);
    const long = await a.submit({ sessionId: 's1', input: 'long' });
    const waiting = await a.submit({ sessionId: 's1', input: 'next', busyPolicy: 'queue' });
    proxy.cut();
    // B takes s1 once A's lease ran out: the run A was running fails, the waiting message runs on B.
    expect(await b.wait(long.runId, { timeoutMs: 15_000 })).toMatchObject({
      state: 'failed',
      error: { code: 'interrupted' },
    });
    expect(await b.wait(waiting.runId, { timeoutMs: 15_000 })).toMatchObject({
      state: 'completed',
      output: 'did next',
    });
    const refusedBefore = Number((await redis.client.get(`${prefix}stats:refused-writes`)) ?? 0);
    proxy.heal();
    // A's writes made while it was cut off reach Redis now, under its old token: refused; and it lets s1 go.
    await eventually(
      async () => Number((await redis.client.get(`${prefix}stats:refused-writes`)) ?? 0) > refusedBefore,
      'a write of A was refused',
    );
    await eventually(() => !a.engine.handover.busy('s1'), 'A let s1 go');
    const log = await sessionLogOf(redis.client, prefix, 's1');
    expect(overlappingRuns(log)).toEqual([]);
    expect(gaps(log, (e) => e.sessionSeq)).toEqual([]);
    expect(log.filter((e) => e.type === 'run.started').map((e) => [e.runId, 'node' in e ? e.node : undefined])).toEqual(
      [
        [long.runId, 'A'],
        [waiting.runId, 'B'],
      ],
    );
    const longLog = await b.history(long.runId);
    expect(gaps(longLog, (e) => e.seq)).toEqual([]);
    expect(longLog.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'interrupted' } });
    // A answers for s1 again, by handing it to B.
    const again = await a.submit({ sessionId: 's1', input: 'again' });
    expect(await a.wait(again.runId)).toMatchObject({ state: 'completed', output: 'did again' });
  }, 60_000);
});
