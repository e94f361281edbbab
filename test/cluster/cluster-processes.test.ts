/*
 * Three real `switchyard serve` processes on one real redis-server (appendonly yes), clients
 * on every process: one process killed with SIGKILL under load, one paused with SIGSTOP past
 * its lease and resumed, and Redis itself restarted under load. After each, every accepted
 * message is accounted for, and the stored logs show no gap, no session running two runs at
 * once and never more runs than max_runs_global; runs of a dead or paused process end
 * `failed` / `interrupted` and the messages waiting behind them run elsewhere, in order; a
 * paused process's late writes are refused and nothing it was running is done twice.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent, StreamEvent } from '../../src/engine/index.js';
import { accountFor, submitLoad, type Accepted } from './cluster-load.js';
import { sessionLogOf } from './fixtures.js';
import { eventually } from '../support/eventually.js';
import { startRedisServer, type RedisServer } from './redis-server.js';
import { hasRedis } from '../support/real-parts.js';
import { startServeProcess, stopServeProcess, type ClusterLayout, type ServeProcess } from './serve-process.js';

const redisRuns = hasRedis('the cluster process tests');

const LEASE_SECONDS = 3;
const MAX_RUNS_GLOBAL = 3;

let redis: RedisServer;
let admin: Redis;
let layout: ClusterLayout;
const processes = new Map<string, ServeProcess>();
const live = () => [...processes.values()].filter((p) => p.child.exitCode === null && p.child.signalCode === null);

/** Every turn runs a command that leaves a line in the session's workspace, so executions can be counted. */
const TURN = { toolCalls: [{ name: 'bash', args: { command: 'echo ran >> executions.log' } }], delayMs: 120 };

beforeAll(async () => {
  if (!redisRuns) return;
  redis = await startRedisServer({ appendonly: true });
  admin = new Redis(redis.url);
  // Redis is restarted on purpose: commands wait for it, the error events are expected.
  admin.on('error', () => {});
  const root = await mkdtemp(join(tmpdir(), 'switchyard-cluster-'));
  await writeFile(join(root, 'turns.json'), JSON.stringify([TURN, { text: 'done', delayMs: 120 }]));
  await writeFile(
    join(root, 'slow.json'),
    JSON.stringify([...Array.from({ length: 30 }, () => TURN), { text: 'done slowly' }]),
  );
  layout = {
    root,
    redisUrl: redis.url,
    keyPrefix: 'sy:',
    token: randomBytes(32).toString('base64url'),
    leaseSeconds: LEASE_SECONDS,
    extraToml: [
      '[execution]',
      `max_runs_global = ${MAX_RUNS_GLOBAL}`,
      'max_runs_per_agent = 3',
      'wait_lane_capacity = 64',
      '[approval]',
      'tier = "full"',
      '[sandbox]',
      'backend = "none"',
      'allow_unsandboxed = true',
      `workspace_root = "${join(root, 'workspaces')}"`,
      '[models.scripted]',
      'kind = "scripted"',
      `script = "${join(root, 'turns.json')}"`,
      '[models.slow]',
      'kind = "scripted"',
      `script = "${join(root, 'slow.json')}"`,
    ].join('\n'),
  };
  const started = await Promise.all(['n1', 'n2', 'n3'].map((nodeId) => startServeProcess(layout, nodeId)));
  for (const p of started) processes.set(p.nodeId, p);
}, 180_000);

afterAll(async () => {
  await Promise.all([...processes.values()].map(stopServeProcess));
  admin?.disconnect();
  await redis?.close();
  if (layout) await rm(layout.root, { recursive: true, force: true });
}, 60_000);

function node(id: string): ServeProcess {
  return processes.get(id)!;
}

async function startedOn(sessionId: string, runId: string): Promise<string | undefined> {
  const started = (await sessionLogOf(admin, layout.keyPrefix, sessionId)).find(
    (e) => e.type === 'run.started' && e.runId === runId,
  );
  return started && 'node' in started ? started.node : undefined;
}

function executionsOf(sessionId: string): Promise<number> {
  const dir = createHash('sha256').update(sessionId).digest('hex').slice(0, 16);
  return readFile(join(layout.root, 'workspaces', dir, 'executions.log'), 'utf8').then(
    (text) => text.split('\n').filter(Boolean).length,
    () => 0,
  );
}

function collect(subscription: AsyncIterable<StreamEvent>): StreamEvent[] {
  const seen: StreamEvent[] = [];
  void (async () => {
    for await (const event of subscription) seen.push(event);
  })().catch(() => {});
  return seen;
}

describe.skipIf(!redisRuns)('three switchyard serve processes on one Redis', () => {
  it('one killed with SIGKILL under load: every accepted message is accounted for, waiting ones run elsewhere in order', async () => {
    const following = node('n1').client.subscribe({});
    await following.ready;
    const seen = collect(following);
    // n3 owns "ordered": a long run there, three messages queued behind it through the others.
    const first = await node('n3').client.submit({ sessionId: 'ordered', input: 'long', model: 'slow' });
    const queued: Accepted[] = [];
    for (const via of ['n1', 'n2', 'n1']) {
      const r = await node(via).client.submit({
        sessionId: 'ordered',
        input: `after ${queued.length}`,
        busyPolicy: 'queue',
      });
      expect(r).toMatchObject({ outcome: 'queued', position: queued.length + 1 });
      queued.push({ id: r.runId, sessionId: 'ordered', outcome: 'queued', policy: 'queue', via });
    }
    let killed = false;
    const load = await submitLoad({
      targets: live,
      sessions: Array.from({ length: 8 }, (_, i) => `k${i}`),
      messagesPerSession: 5,
      seed: 15,
      afterAccepted: (count) => {
        if (count === 12 && !killed) {
          killed = node('n3').child.kill('SIGKILL');
        }
      },
    });
    expect(killed).toBe(true);
    await node('n3').exited;
    const all: Accepted[] = [
      { id: first.runId, sessionId: 'ordered', outcome: 'started', policy: 'queue', via: 'n3' },
      ...queued,
      ...load.accepted,
    ];
    const account = await accountFor(all, node('n1'), layout.redisUrl, layout.keyPrefix, 60_000);
    console.log(
      `SIGKILL under load: ${account.accepted} accepted, ${account.accounted} accounted, ${load.refused.length} refused, ${load.unanswered} unanswered; ` +
        `${account.runs} runs (${account.interrupted} interrupted), by node ${JSON.stringify(account.byNode)}; ` +
        `overlaps ${account.overlaps.length}; most running at once ${account.mostRunning} (limit ${MAX_RUNS_GLOBAL})`,
    );
    expect(account.accounted).toBe(account.accepted);
    expect(account.overlaps).toEqual([]);
    expect(account.gaps).toEqual([]);
    expect(account.mostRunning).toBeLessThanOrEqual(MAX_RUNS_GLOBAL);
    // The run n3 was running ended interrupted; the messages behind it ran elsewhere, in the order they came.
    expect(await node('n1').client.wait(first.runId)).toMatchObject({
      state: 'failed',
      error: { code: 'interrupted' },
    });
    const ordered = await sessionLogOf(admin, layout.keyPrefix, 'ordered');
    const starts = ordered.filter((e): e is Extract<RunEvent, { type: 'run.started' }> => e.type === 'run.started');
    expect(starts.map((e) => e.runId)).toEqual([first.runId, ...queued.map((q) => q.id)]);
    expect(starts.map((e) => e.node)).toEqual(['n3', ...queued.map(() => expect.not.stringMatching(/^n3$/))]);
    for (const q of queued) expect((await node('n2').client.wait(q.id)).state).toBe('completed');
    // A follower on n1 saw runs executed on the other processes.
    const nodesSeen = new Set(seen.flatMap((e) => (e.type === 'run.started' && 'node' in e && e.node ? [e.node] : [])));
    expect([...nodesSeen].sort()).toEqual(['n1', 'n2', 'n3']);
    following.close();
  }, 120_000);

  it('one paused with SIGSTOP past its lease: the others take over, its late writes are refused, nothing runs twice', async () => {
    const first = await node('n2').client.submit({ sessionId: 'paused', input: 'long', model: 'slow' });
    const behind = [];
    for (let i = 0; i < 2; i++)
      behind.push(await node('n1').client.submit({ sessionId: 'paused', input: `behind ${i}`, busyPolicy: 'queue' }));
    await eventually(async () => (await startedOn('paused', first.runId)) === 'n2', 'n2 runs the long run');
    const refused = async () => Number((await admin.get(`${layout.keyPrefix}stats:refused-writes`)) ?? 0);
    const refusedBefore = await refused();
    node('n2').child.kill('SIGSTOP');
    try {
      expect(await node('n1').client.wait(first.runId)).toMatchObject({
        state: 'failed',
        error: { code: 'interrupted' },
      });
      for (const b of behind) expect(await node('n1').client.wait(b.runId)).toMatchObject({ state: 'completed' });
    } finally {
      node('n2').child.kill('SIGCONT');
    }
    await eventually(
      async () => (await refused()) > refusedBefore,
      'a write n2 made after its lease ran out was refused',
    );
    // n2 answers for the session again, handing it to its owner now.
    const again = await node('n2').client.submit({ sessionId: 'paused', input: 'again', busyPolicy: 'queue' });
    expect(await node('n2').client.wait(again.runId)).toMatchObject({ state: 'completed' });
    const log = await sessionLogOf(admin, layout.keyPrefix, 'paused');
    const starts = log.filter((e) => e.type === 'run.started');
    expect(starts.map((e) => e.runId)).toEqual([first.runId, ...behind.map((b) => b.runId), again.runId]);
    const account = await accountFor(
      [first, ...behind, again].map((r) => ({
        id: r.runId,
        sessionId: 'paused',
        outcome: r.outcome,
        policy: 'queue' as const,
        via: 'n1',
      })),
      node('n1'),
      layout.redisUrl,
      layout.keyPrefix,
      30_000,
    );
    expect(account.overlaps).toEqual([]);
    expect(account.gaps).toEqual([]);
    // Every command that ran has its tool.started in the log: nothing n2 did after losing the session went unrecorded.
    const recordedStarts = log.filter((e) => e.type === 'tool.started').length;
    const executions = await executionsOf('paused');
    console.log(
      `SIGSTOP past the lease: ${recordedStarts} commands recorded, ${executions} executed; ${(await refused()) - refusedBefore} late writes refused`,
    );
    expect(executions).toBeLessThanOrEqual(recordedStarts);
  }, 120_000);

  it('Redis restarted under load (appendonly yes): the cluster goes on and loses nothing accepted', async () => {
    let restarted: Promise<void> | undefined;
    const load = await submitLoad({
      targets: live,
      sessions: Array.from({ length: 6 }, (_, i) => `r${i}`),
      messagesPerSession: 4,
      seed: 7,
      afterAccepted: (count) => {
        if (count === 6)
          restarted ??= redis
            .stop('graceful')
            .then(() => new Promise((resolve) => setTimeout(resolve, 300)))
            .then(() => redis.start());
      },
    });
    await restarted;
    const account = await accountFor(load.accepted, node('n1'), layout.redisUrl, layout.keyPrefix, 60_000);
    console.log(
      `Redis restart under load: ${account.accepted} accepted, ${account.accounted} accounted, ` +
        `${load.refused.length} refused, ${load.unanswered} unanswered; ` +
        `${account.runs} runs (${account.interrupted} interrupted); overlaps ${account.overlaps.length}; most running at once ${account.mostRunning}`,
    );
    expect(load.unanswered).toBe(0);
    expect(account.accounted).toBe(account.accepted);
    expect(account.overlaps).toEqual([]);
    expect(account.gaps).toEqual([]);
    expect(account.mostRunning).toBeLessThanOrEqual(MAX_RUNS_GLOBAL);
  }, 120_000);
});
