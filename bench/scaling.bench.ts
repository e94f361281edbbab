/**
 * Scaling: what a run costs when 10,000 sessions are in flight at once against when 100 are.
 * Both cases run 10,000 runs in total on the memory store with an instant scripted model, one
 * run per session per wave, every run of a wave submitted together (so all its sessions hold a
 * run, running or waiting for a permit, at the same time): 100 sessions take 100 waves, 10,000
 * sessions one wave. A cost that grows with the sessions in flight (a scan of every session,
 * of the limiter's waiters, of the run table) shows as a ratio above 1.
 */
import { createEngine } from '../src/engine/index.js';
import { scriptedModel } from '../src/model/index.js';
import type { BenchFigure, Benchmark } from './types.js';

const RUNS = 10_000;
const FEW = 100;
const MANY = 10_000;
const ROUNDS = 2;

/** Milliseconds per run with `sessions` sessions in flight per wave. */
async function costPerRun(sessions: number, runs = RUNS): Promise<number> {
  const engine = await createEngine({
    models: { scripted: scriptedModel([{ text: 'ok' }]) },
    config: { execution: { max_runs_global: 8, max_runs_per_agent: 8, wait_lane_capacity: 4, busy_policy: 'queue' } },
  });
  const started = performance.now();
  for (let wave = 0; wave < runs / sessions; wave++) {
    const submitted = await Promise.all(
      Array.from({ length: sessions }, (_, s) =>
        engine.submit({ sessionId: `s${s}`, agentId: `a${s % 4}`, input: `message ${wave}` }),
      ),
    );
    await Promise.all(submitted.map(({ runId }) => engine.wait(runId)));
  }
  const elapsed = performance.now() - started;
  await engine.close();
  return elapsed / runs;
}

const benchmark: Benchmark = async () => {
  await costPerRun(FEW, 1_000);
  await costPerRun(MANY / 10, 1_000);
  let few = Infinity;
  let many = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    few = Math.min(few, await costPerRun(FEW));
    many = Math.min(many, await costPerRun(MANY));
  }
  return [
    {
      figure: 'scaling: per-run cost at 10,000 concurrent sessions vs 100',
      value: many * 1000,
      unit: 'µs',
      baseline: few * 1000,
      ratio: many / few,
      target: '<= 1.5',
      note: '10,000 runs in both cases, one run per session per wave, a wave submitted at once (100 sessions: 100 waves; 10,000 sessions: one); memory store',
    },
  ] satisfies BenchFigure[];
};

export default benchmark;
