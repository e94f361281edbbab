/**
 * Redis work per run: the commands Redis executed (script calls and the commands inside them)
 * and the CPU time of the redis-server process, read from the server before and after a batch
 * of runs of one cluster process (redis-work.ts), for three kinds of run — an instant answer;
 * a turn with a batch of three tool calls, then the answer; messages queued behind each other
 * in their sessions' lanes. The per-command breakdown is printed as each figure's note. The
 * lease rounds, heartbeats and permit calls that happen meanwhile count: a polled key shows up
 * here. Targets (issue 28): ≤ 25 commands and ≤ 0.1 ms of Redis CPU per instant run, ≤ 60
 * commands with a 3-call batch.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Redis } from 'ioredis';
import { ClusterNode } from '../src/cluster/index.js';
import { defaultConfig, mergeConfig } from '../src/config/index.js';
import { scriptedModel, type ScriptTurn } from '../src/model/index.js';
import { defineTool } from '../src/tools/index.js';
import { redisUnavailable, startRedisServer } from '../test/cluster/redis-server.js';
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
    return figures;
  } finally {
    await redis.close();
  }
};

export default benchmark;
