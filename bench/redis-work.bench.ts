/**
 * Redis work per run: the commands Redis executed (script calls and the commands inside them)
 * and the CPU time of the redis-server process, read from the server before and after a batch
 * of runs of one cluster process (redis-work.ts), for three kinds of run — an instant answer;
 * a turn with a batch of three tool calls, then the answer; messages queued behind each other
 * in their sessions' lanes. The per-command breakdown is printed as each figure's note. The
 * lease rounds, heartbeats and permit calls that happen meanwhile count: a polled key shows up
 * here. Targets (issue 28): ≤ 25 commands and ≤ 0.1 ms of Redis CPU per instant run, ≤ 60
 * commands with a 3-call batch.
 *
 * Then the processes table: runs/s, Redis commands per run and Redis CPU per run for 1, 2 and 3
 * real `switchyard serve` processes on one Redis, the limits out of the way, instant runs
 * submitted through every process's gateway (issue 28.2: throughput must not fall as processes
 * are added).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { Redis } from 'ioredis';
import { ClusterNode } from '../src/cluster/index.js';
import { defaultConfig, mergeConfig } from '../src/config/index.js';
import { scriptedModel, type ScriptTurn } from '../src/model/index.js';
import { defineTool } from '../src/tools/index.js';
import { redisUnavailable, startRedisServer } from '../test/cluster/redis-server.js';
import { startServeProcess, stopServeProcess, type ServeProcess } from '../test/cluster/serve-process.js';
import { breakdownPerRun, readRedis, workBetween, type RedisWork } from './redis-work.js';
import type { BenchFigure, Benchmark } from './types.js';

const SESSIONS = 40;

interface Kind {
  name: string;
  script: (ctx: { turn: number }) => ScriptTurn;
  /** Messages per session, all submitted at once (the later ones queue) or one after another. */
  perSession: number;
  queued: boolean;
  commandTarget: number;
  cpuTargetMs?: number;
}

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a key up.',
  input: z.object({ key: z.string() }),
  readOnly: true,
  idempotent: true,
  execute: async ({ key }) => `value of ${key}`,
});

const KINDS: Kind[] = [
  {
    name: 'instant run',
    script: () => ({ text: 'done' }),
    perSession: 5,
    queued: false,
    commandTarget: 25,
    cpuTargetMs: 0.1,
  },
  {
    name: 'run with a 3-call tool batch',
    script: ({ turn }) =>
      turn === 0
        ? { toolCalls: ['a', 'b', 'c'].map((key) => ({ id: key, name: 'lookup', args: { key } })) }
        : { text: 'looked up' },
    perSession: 3,
    queued: false,
    commandTarget: 60,
  },
  { name: 'queued message', script: () => ({ text: 'done' }), perSession: 5, queued: true, commandTarget: 25 },
];

async function measure(url: string, kind: Kind): Promise<{ work: RedisWork; runs: number }> {
  const prefix = `work-${randomUUID().slice(0, 8)}:`;
  const config = mergeConfig(defaultConfig(), {
    store: { kind: 'redis', url, key_prefix: prefix },
    cluster: { lease_seconds: 10, node_id: 'bench' },
    execution: { max_runs_global: 1000, max_runs_per_agent: 1000, busy_policy: 'queue', wait_lane_capacity: 1000 },
  });
  const node = await ClusterNode.start({
    config,
    models: { scripted: scriptedModel(kind.script) },
    tools: [lookup],
    log: () => {},
    onError: () => {},
  });
  const probe = new Redis(url);
  try {
    // Warm: the scripts are loaded and every session is owned before the reading starts.
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) =>
        node.wait((await node.submit({ sessionId: `s${s}`, input: 'warm' })).runId),
      ),
    );
    await node.store.durable();
    const before = await readRedis(probe);
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        const sessionId = `s${s}`;
        if (kind.queued) {
          const ids = await Promise.all(
            Array.from({ length: kind.perSession }, (_, i) => node.submit({ sessionId, input: `m${i}` })),
          );
          for (const { runId } of ids) await node.wait(runId);
        } else {
          for (let i = 0; i < kind.perSession; i++)
            await node.wait((await node.submit({ sessionId, input: `m${i}` })).runId);
        }
      }),
    );
    await node.store.durable();
    const after = await readRedis(probe);
    return { work: workBetween(before, after), runs: SESSIONS * kind.perSession };
  } finally {
    probe.disconnect();
    await node.close();
  }
}

/** The processes table: instant runs through the gateways of 1, 2 and 3 `switchyard serve` processes. */
const PROCESS_RUNS = 600;
const PROCESS_SESSIONS = 120;
const IN_FLIGHT = 32;

interface ProcessesFigures {
  runsPerSecond: number;
  work: RedisWork;
  /** Runs that did not complete (a process that stalls past its lease under load interrupts its runs). */
  failed: number;
}

/**
 * Real processes on one Redis, limits out of the way (max_runs_global large), clients spreading
 * their submits over every process, each session's messages queued behind each other; Redis's
 * work read around the batch, after every session is owned (warm).
 */
async function measureProcesses(url: string, root: string, processes: number): Promise<ProcessesFigures> {
  const layout = {
    root: join(root, `p${processes}`),
    redisUrl: url,
    keyPrefix: `procs${processes}:`,
    token: randomBytes(32).toString('base64url'),
    leaseSeconds: 10,
    extraToml: [
      '[execution]',
      'max_runs_global = 100000',
      'max_runs_per_agent = 100000',
      `wait_lane_capacity = ${PROCESS_RUNS}`,
      'busy_policy = "queue"',
    ].join('\n'),
  };
  const nodes: ServeProcess[] = await Promise.all(
    Array.from({ length: processes }, (_, i) => startServeProcess(layout, `n${i + 1}`)),
  );
  const probe = new Redis(url);
  try {
    await Promise.all(
      Array.from({ length: PROCESS_SESSIONS }, async (_, s) => {
        const node = nodes[s % processes]!;
        await node.client.wait((await node.client.submit({ sessionId: `s${s}`, input: 'warm' })).runId);
      }),
    );
    const feed = nodes[0]!.client.subscribe({});
    await feed.ready;
    let ended = 0;
    let failed = 0;
    let allDone!: () => void;
    const done = new Promise<void>((resolve) => (allDone = resolve));
    const reading = (async () => {
      for await (const event of feed) {
        if (event.type !== 'run.completed' && event.type !== 'run.failed' && event.type !== 'run.cancelled') continue;
        if (event.type !== 'run.completed') failed += 1;
        if (++ended === PROCESS_RUNS) allDone();
      }
    })();
    const before = await readRedis(probe);
    const began = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (let i = next++; i < PROCESS_RUNS; i = next++) {
          await nodes[i % processes]!.client.submit({
            sessionId: `s${i % PROCESS_SESSIONS}`,
            agentId: `a${i % 4}`,
            input: `message ${i}`,
          });
        }
      }),
    );
    await done;
    const runsPerSecond = PROCESS_RUNS / ((performance.now() - began) / 1000);
    const after = await readRedis(probe);
    feed.close();
    await reading.catch(() => {});
    return { runsPerSecond, work: workBetween(before, after), failed };
  } finally {
    probe.disconnect();
    await Promise.all(nodes.map(stopServeProcess));
  }
}

function processesFigures(byProcesses: ProcessesFigures[]): BenchFigure[] {
  const one = byProcesses[0]!;
  const label = (i: number) => `${i + 1} process${i === 0 ? '' : 'es'}`;
  return byProcesses.flatMap((f, i): BenchFigure[] => [
    {
      figure: `redis work: runs/s, ${label(i)} on one Redis (baseline: 1)`,
      value: f.runsPerSecond,
      unit: 'runs/s',
      baseline: one.runsPerSecond,
      ratio: f.runsPerSecond / one.runsPerSecond,
      ...(i === 0
        ? {
            note:
              `${PROCESS_RUNS} instant runs over ${PROCESS_SESSIONS} sessions through the gateways of real ` +
              `switchyard serve processes (127.0.0.1), ${IN_FLIGHT} submits in flight spread over the processes, ` +
              "busy_policy queue, max_runs_global 100000; the processes, Redis and the clients share one machine's cores",
          }
        : {}),
    },
    {
      figure: `redis work: commands per run, ${label(i)}`,
      value: f.work.commands / PROCESS_RUNS,
      unit: 'commands',
      note: `${f.failed} of ${PROCESS_RUNS} runs did not complete; per run: ${breakdownPerRun(f.work, PROCESS_RUNS)}`,
    },
    {
      figure: `redis work: Redis CPU per run, ${label(i)}`,
      value: (f.work.cpuMs / PROCESS_RUNS) * 1000,
      unit: 'µs',
    },
  ]);
}

const benchmark: Benchmark = async () => {
  const missing = redisUnavailable();
  if (missing) {
    console.error(`redis-work bench skipped: ${missing}`);
    return [];
  }
  const redis = await startRedisServer({ appendonly: true, appendfsync: 'everysec' });
  try {
    const figures: BenchFigure[] = [];
    for (const kind of KINDS) {
      const { work, runs } = await measure(redis.url, kind);
      const note = `${runs} runs over ${SESSIONS} sessions, one process; per run: ${breakdownPerRun(work, runs)}`;
      figures.push(
        {
          figure: `redis work: commands per ${kind.name}`,
          value: work.commands / runs,
          unit: 'commands',
          target: `≤ ${kind.commandTarget}`,
          note,
        },
        {
          figure: `redis work: Redis CPU per ${kind.name}`,
          value: (work.cpuMs / runs) * 1000,
          unit: 'µs',
          ...(kind.cpuTargetMs ? { target: `≤ ${kind.cpuTargetMs * 1000}` } : {}),
        },
      );
    }
    const root = await mkdtemp(join(tmpdir(), 'switchyard-bench-redis-work-'));
    try {
      const byProcesses: ProcessesFigures[] = [];
      for (const processes of [1, 2, 3]) {
        try {
          byProcesses.push(await measureProcesses(redis.url, root, processes));
        } catch (error) {
          // A count that could not be measured (a process that failed to start, under load) is said, not hidden.
          console.error(`redis-work: ${processes} processes not measured: ${String(error)}`);
          byProcesses.push({ runsPerSecond: NaN, work: { calls: new Map(), commands: NaN, cpuMs: NaN }, failed: NaN });
        }
      }
      figures.push(...processesFigures(byProcesses));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    return figures;
  } finally {
    await redis.close();
  }
};

export default benchmark;
