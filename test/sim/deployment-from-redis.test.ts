/*
 * `switchyard simulate --from-redis URL`: the workload derived from run logs kept in a Redis
 * store (a real redis-server on 127.0.0.1) is the one derived from the same history kept in a
 * lowdb directory (--from-store). The history is synthetic — a simulated deployment recorded
 * into memory — and is copied run by run, event by event, into both stores.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultConfig, mergeConfig } from '../../src/config/index.js';
import { deriveWorkload, parseWorkload, runSimulateCommand, simulateDeployment } from '../../src/sim/index.js';
import { LowdbStore } from '../../src/store/lowdb-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { RedisStore } from '../../src/store/redis-store.js';
import type { RunEvent } from '../../src/core/run-events.js';
import type { Store } from '../../src/store/types.js';
import { redisFixture } from '../cluster/redis-fixture.js';

const redis = redisFixture('simulate --from-redis');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const hourly = (rate: number) => Array.from({ length: 24 }, (_, h) => (h === 3 ? rate : 0));

/** Every run record, then every run's log, from one store into another: each session's events in their order. */
async function copyHistory(from: Store, to: Store): Promise<number> {
  const runs = [];
  let before: string | undefined;
  do {
    const page = await from.queryRuns({ limit: 100, ...(before !== undefined ? { before } : {}) });
    runs.push(...page.runs);
    before = page.cursor;
  } while (before !== undefined);
  const events: RunEvent[] = [];
  for (const summary of runs.reverse()) {
    await to.saveRun((await from.getRun(summary.runId))!);
    events.push(...(await from.readEvents(summary.runId)));
  }
  // A session's log is one stream numbered by sessionSeq (Redis refuses an event out of order).
  events.sort((a, b) => a.sessionId.localeCompare(b.sessionId) || a.sessionSeq - b.sessionSeq);
  for (const event of events) await to.appendEvent(event);
  await to.flush();
  return runs.length;
}

async function savedWorkload(argv: string[]): Promise<unknown> {
  const file = join(mkdtempSync(join(tmpdir(), 'switchyard-workload-')), 'workload.json');
  dirs.push(join(file, '..'));
  let err = '';
  const code = await runSimulateCommand([...argv, '--save-workload', file], {
    out: () => {},
    err: (text) => (err += text),
  });
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(readFileSync(file, 'utf8'));
}

describe.skipIf(!redis.available)('switchyard simulate --from-redis', () => {
  it('derives from a Redis store the workload --from-store derives from the same history in a lowdb directory', async () => {
    const history = new MemoryStore();
    const generated = await simulateDeployment(
      parseWorkload({
        version: 1,
        source: { runs: 0, days: 1 },
        agents: {
          support: {
            arrivalsPerHour: hourly(600),
            messagesPerSession: [2, 5],
            busyPolicies: { queue: 2, collect: 2, rollback: 1, steer: 1 },
            turnsPerRun: [1, 2, 3],
            modelLatencyMs: [300, 900, 2000],
            toolBatchSize: [1, 2],
            tools: { lookup: 2, write_ticket: 1 },
            modelErrorRate: 0.02,
            failureRate: 0,
          },
          coder: {
            arrivalsPerHour: hourly(120),
            messagesPerSession: [3],
            busyPolicies: { queue: 1 },
            turnsPerRun: [2, 4],
            modelLatencyMs: [1000, 3000],
            toolBatchSize: [1, 3],
            tools: { run_tests: 1 },
            modelErrorRate: 0,
            failureRate: 0,
          },
        },
        tools: {
          lookup: { claim: 'shared', durationMs: [40, 200], errorRate: 0.05 },
          write_ticket: { claim: 'paths', durationMs: [150, 500], errorRate: 0 },
          run_tests: { claim: 'nodes', durationMs: [800, 2500], errorRate: 0.1 },
        },
      }),
      mergeConfig(defaultConfig(), { execution: { max_runs_global: 4, max_runs_per_agent: 3 } }),
      { seed: 11, durationMs: 4 * 60_000, recordInto: history },
    );
    expect(generated.invariants.violations).toEqual([]);

    const dir = mkdtempSync(join(tmpdir(), 'switchyard-history-'));
    dirs.push(dir);
    const lowdb = await LowdbStore.open(dir);
    const copied = await copyHistory(history, lowdb);
    await lowdb.close();
    const keyPrefix = `history-${process.pid}:`;
    const redisStore = await RedisStore.open({ client: redis.client, keyPrefix });
    expect(await copyHistory(history, redisStore)).toBe(copied);
    await redisStore.close();
    expect(copied).toBeGreaterThan(30);

    const fromStore = await savedWorkload(['--from-store', dir]);
    const fromRedis = await savedWorkload(['--from-redis', redis.server.url, '--key-prefix', keyPrefix]);
    expect(fromRedis).toEqual(fromStore);
    // …and both are what the history says, read straight from memory.
    expect(fromRedis).toEqual(JSON.parse(JSON.stringify(await deriveWorkload(history))));
    const derived = parseWorkload(fromRedis);
    expect(derived.source.runs).toBe(copied);
    expect(Object.keys(derived.agents)).toEqual(['coder', 'support']);
    // Busy policies are recorded per message: collect and rollback come back as themselves (a steer into an idle session is a run too).
    expect(Object.keys(derived.agents['support']!.busyPolicies).sort()).toEqual([
      'collect',
      'queue',
      'rollback',
      'steer',
    ]);

    // Another prefix is another store: nothing to derive from.
    const empty = parseWorkload(await savedWorkload(['--from-redis', redis.server.url, '--key-prefix', 'nobody:']));
    expect(empty.source.runs).toBe(0);
  }, 300_000);
});
