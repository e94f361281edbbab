/**
 * The cluster on one redis-server (started here, appendonly yes, appendfsync everysec):
 * admission throughput and submit -> run.started latency with 1, 2 and 3 `switchyard serve`
 * processes (clients spread their submits over all of them; the baseline is one process), and
 * the cost of appending an event to the Redis store against the lowdb file store, awaited one
 * at a time and in 100-event bursts, in rounds alternating between the two stores.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '../src/core/run-events.js';
import { LowdbStore, type Store } from '../src/store/index.js';
import { connectRedis } from '../src/store/redis-client.js';
import { RedisStore } from '../src/store/redis-store.js';
import { redisUnavailable, startRedisServer, type RedisServer } from '../test/cluster/redis-server.js';
import {
  startServeProcess,
  stopServeProcess,
  type ClusterLayout,
  type ServeProcess,
} from '../test/cluster/serve-process.js';
import type { BenchFigure, Benchmark } from './types.js';

const RUNS = 600;
const SESSIONS = 120;
const IN_FLIGHT = 32;
const LATENCY_SAMPLES = 150;

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

interface ClusterFigures {
  runsPerSecond: number;
  p50: number;
  p99: number;
}

async function measureCluster(redis: RedisServer, root: string, processes: number): Promise<ClusterFigures> {
  const layout: ClusterLayout = {
    root: join(root, `p${processes}`),
    redisUrl: redis.url,
    keyPrefix: `bench${processes}:`,
    token: randomBytes(32).toString('base64url'),
    leaseSeconds: 10,
    extraToml: [
      '[execution]',
      'max_runs_global = 8',
      'max_runs_per_agent = 8',
      `wait_lane_capacity = ${RUNS}`,
      'busy_policy = "queue"',
    ].join('\n'),
  };
  const nodes: ServeProcess[] = await Promise.all(
    Array.from({ length: processes }, (_, i) => startServeProcess(layout, `n${i + 1}`)),
  );
  try {
    const feed = nodes[0]!.client.subscribe({});
    await feed.ready;
    const startedAt = new Map<string, number>();
    const submittedAt = new Map<string, number>();
    let completed = 0;
    let allDone!: () => void;
    const done = new Promise<void>((resolve) => (allDone = resolve));
    let expected = RUNS;
    const reading = (async () => {
      for await (const event of feed) {
        if (event.type === 'run.started') startedAt.set((event as RunEvent).runId, performance.now());
        if (event.type === 'run.completed' && ++completed === expected) allDone();
      }
    })();
    // Throughput: every process takes submits, each session's messages queue behind each other.
    const began = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let i = next++; i < RUNS; i = next++) {
          await nodes[i % processes]!.client.submit({
            sessionId: `s${i % SESSIONS}`,
            agentId: `a${i % 4}`,
            input: `message ${i}`,
          });
        }
      }),
    );
    await done;
    const runsPerSecond = RUNS / ((performance.now() - began) / 1000);
    // Latency: one message at a time, each on a fresh session, through the processes in turn.
    const latencies: number[] = [];
    expected = RUNS + LATENCY_SAMPLES;
    for (let i = 0; i < LATENCY_SAMPLES; i++) {
      const at = performance.now();
      const { runId } = await nodes[i % processes]!.client.submit({ sessionId: `latency-${i}`, input: 'hi' });
      submittedAt.set(runId, at);
      await nodes[i % processes]!.client.wait(runId);
      const started = startedAt.get(runId);
      if (started !== undefined) latencies.push(started - at);
    }
    feed.close();
    await reading.catch(() => {});
    latencies.sort((a, b) => a - b);
    return { runsPerSecond, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
  } finally {
    await Promise.all(nodes.map(stopServeProcess));
  }
}

/** Numbers each run's and session's events on, as the engine does. */
function appender(store: Store) {
  const seq = new Map<number, number>();
  const sessionSeq = new Map<number, number>();
  return (run: number): void | Promise<void> => {
    const s = (seq.get(run) ?? 0) + 1;
    const ss = (sessionSeq.get(run % 10) ?? 0) + 1;
    seq.set(run, s);
    sessionSeq.set(run % 10, ss);
    const event: RunEvent = {
      type: 'model.delta',
      runId: `run-${run}`,
      sessionId: `session-${run % 10}`,
      seq: s,
      sessionSeq: ss,
      at: new Date().toISOString(),
      turn: 0,
      text: 'a model streams its answer a few words at a time, ',
    };
    return store.appendEvent(event);
  };
}

/** µs/event for each store, over rounds alternating between them. */
async function appendCost(
  redisUrl: string,
  root: string,
): Promise<{ awaited: [number, number]; bursts: [number, number] }> {
  const client = await connectRedis(redisUrl);
  const redisStore = await RedisStore.open({ client, keyPrefix: 'bench-append:' });
  const lowdb = await LowdbStore.open(join(root, 'lowdb'));
  const stores = { redis: appender(redisStore), lowdb: appender(lowdb) };
  const patterns = {
    awaited: async (append: (run: number) => void | Promise<void>) => {
      for (let i = 0; i < 50; i++) await append(0);
    },
    bursts: async (append: (run: number) => void | Promise<void>) => {
      await Promise.all(Array.from({ length: 100 }, (_, i) => append(i % 10)));
    },
  };
  const result = { awaited: [0, 0] as [number, number], bursts: [0, 0] as [number, number] };
  try {
    for (const [name, pattern] of Object.entries(patterns) as [keyof typeof patterns, (typeof patterns)['awaited']][]) {
      const events = name === 'awaited' ? 50 : 100;
      const rounds = 40;
      const micros = { redis: 0, lowdb: 0 };
      for (let round = 0; round < rounds; round++) {
        for (const which of round % 2 === 0 ? (['redis', 'lowdb'] as const) : (['lowdb', 'redis'] as const)) {
          const began = performance.now();
          await pattern(stores[which]);
          micros[which] += (performance.now() - began) * 1000;
        }
      }
      result[name] = [micros.redis / (rounds * events), micros.lowdb / (rounds * events)];
    }
  } finally {
    await lowdb.close();
    await redisStore.close();
    client.disconnect();
  }
  return result;
}

const benchmark: Benchmark = async () => {
  const missing = redisUnavailable();
  if (missing) {
    console.error(`cluster bench skipped: ${missing}`);
    return [];
  }
  const redis = await startRedisServer({ appendonly: true, appendfsync: 'everysec' });
  const root = await mkdtemp(join(tmpdir(), 'switchyard-bench-cluster-'));
  try {
    await writeFile(join(root, 'placeholder'), '');
    const byProcesses: ClusterFigures[] = [];
    for (const processes of [1, 2, 3]) byProcesses.push(await measureCluster(redis, root, processes));
    const append = await appendCost(redis.url, root);
    const one = byProcesses[0]!;
    const note =
      `${RUNS} runs over ${SESSIONS} sessions on an instant scripted model, ${IN_FLIGHT} submits in ` +
      `flight, spread over the processes; max_runs_global 8; one machine, all processes and Redis ` +
      `sharing its cores`;
    return [
      ...byProcesses.map((f, i): BenchFigure => ({
        figure: `cluster: admission, ${i + 1} process${i === 0 ? '' : 'es'} on one Redis (baseline: 1)`,
        value: f.runsPerSecond,
        unit: 'runs/s',
        baseline: one.runsPerSecond,
        ratio: f.runsPerSecond / one.runsPerSecond,
        ...(i === 0 ? { note } : {}),
      })),
      ...byProcesses.flatMap((f, i): BenchFigure[] => [
        {
          figure: `cluster: submit -> run.started p50, ${i + 1} process${i === 0 ? '' : 'es'}`,
          value: f.p50 * 1000,
          unit: 'µs',
        },
        {
          figure: `cluster: submit -> run.started p99, ${i + 1} process${i === 0 ? '' : 'es'}`,
          value: f.p99 * 1000,
          unit: 'µs',
        },
      ]),
      {
        figure: 'cluster: event append on Redis, awaited one at a time (baseline: lowdb file store)',
        value: append.awaited[0],
        unit: 'µs/event',
        baseline: append.awaited[1],
        ratio: append.awaited[0] / append.awaited[1],
      },
      {
        figure: 'cluster: event append on Redis, 100-event bursts (baseline: lowdb file store)',
        value: append.bursts[0],
        unit: 'µs/event',
        baseline: append.bursts[1],
        ratio: append.bursts[0] / append.bursts[1],
        note: 'each Redis append is one script call writing the run log, the session log and the feed; appendfsync everysec',
      },
    ];
  } finally {
    await redis.close();
    await rm(root, { recursive: true, force: true });
  }
};

export default benchmark;
