/*
 * Simulating a deployment, validated end to end: a synthetic history is generated from a
 * workload whose parameters we know (the ground truth) under a known configuration; the
 * workload derived from that history must recover the parameters, and simulating the derived
 * workload with the configuration the history ran under — another seed, so other arrivals —
 * must reproduce the history's recorded latency percentiles within the stated tolerances.
 */
import { describe, expect, it } from 'vitest';
import { defaultConfig, mergeConfig, type Config } from '../../src/config/index.js';
import {
  deploymentHtml,
  deriveWorkload,
  parseWorkload,
  simulateDeployment,
  type DeploymentReport,
  type Workload,
} from '../../src/sim/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/types.js';

/** Stated tolerances (docs/simulate.md, "Validation"): relative error of simulated against recorded. */
export const TOLERANCE = { arrivalRate: 0.2, p50: 0.2, p95: 0.25 };

const hourly = (rate: number) => Array.from({ length: 24 }, (_, h) => (h === 0 ? rate : 0));

/** The ground truth: two agents, reads and writes, queue and steer, a 1 % model error rate. */
const TRUTH: Workload = parseWorkload({
  version: 1,
  source: { runs: 0, days: 1 },
  agents: {
    support: {
      arrivalsPerHour: hourly(900),
      messagesPerSession: [2, 4, 6],
      busyPolicies: { queue: 4, steer: 1 },
      turnsPerRun: [1, 2, 3],
      modelLatencyMs: [400, 800, 1600, 2400],
      toolBatchSize: [1, 2, 3],
      tools: { lookup: 3, write_ticket: 1 },
      modelErrorRate: 0.01,
      failureRate: 0,
    },
    coder: {
      arrivalsPerHour: hourly(150),
      messagesPerSession: [3, 6],
      busyPolicies: { queue: 1 },
      turnsPerRun: [1, 3],
      modelLatencyMs: [1000, 2000, 4000],
      toolBatchSize: [1, 4],
      tools: { edit: 1, run_tests: 1 },
      modelErrorRate: 0.01,
      failureRate: 0,
    },
  },
  tools: {
    lookup: { claim: 'shared', durationMs: [50, 150, 400], errorRate: 0.02 },
    write_ticket: { claim: 'paths', durationMs: [200, 600], errorRate: 0 },
    edit: { claim: 'paths', durationMs: [100, 300], errorRate: 0 },
    run_tests: { claim: 'nodes', durationMs: [1000, 4000], errorRate: 0.1 },
  },
});

/** The configuration the history ran under: tight enough that runs wait for the limiter. */
const RAN_UNDER: Config = mergeConfig(defaultConfig(), {
  execution: { max_runs_global: 10, max_runs_per_agent: 6, wait_lane_capacity: 8 },
});
/** A smaller deployment, for what more traffic does to it. */
const TIGHT: Config = mergeConfig(defaultConfig(), {
  execution: { max_runs_global: 3, max_runs_per_agent: 2, wait_lane_capacity: 8 },
});
const PERIOD_MS = 20 * 60_000;

/** What the stored history says, from run records alone: submit to end of each completed run. */
async function recordedLatencies(store: Store): Promise<number[]> {
  const page = await store.queryRuns({ limit: 500, states: ['completed'] });
  expect(page.cursor).toBeUndefined();
  return page.runs.map((r) => Date.parse(r.endedAt!) - Date.parse(r.createdAt));
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

const relative = (simulated: number, recorded: number) => Math.abs(simulated - recorded) / recorded;

describe('simulateDeployment() validated against a synthetic history with a known ground truth', () => {
  it('derives the ground truth back from the stored logs and reproduces the recorded latency percentiles within the stated tolerances', async () => {
    const history = new MemoryStore();
    const generated = await simulateDeployment(TRUTH, RAN_UNDER, {
      seed: 7,
      durationMs: PERIOD_MS,
      recordInto: history,
    });
    expect(generated.invariants.violations).toEqual([]);
    // The period was busy enough to matter: runs waited for the limiter.
    expect(generated.overall.admissionWaitMs.p95 + generated.overall.laneWaitMs.p95).toBeGreaterThan(0);

    const derived = await deriveWorkload(history);
    expect(Object.keys(derived.agents)).toEqual(['coder', 'support']);
    for (const agent of ['support', 'coder'] as const) {
      const truth = TRUTH.agents[agent]!.arrivalsPerHour[0]!;
      expect(relative(derived.agents[agent]!.arrivalsPerHour[0]!, truth)).toBeLessThan(TOLERANCE.arrivalRate);
      // Model latency: the recorded values are the ground truth's (no other ones appear, but for the steered turns' 20 ms answers).
      expect(new Set(derived.agents[agent]!.modelLatencyMs.filter((ms) => ms !== 20))).toEqual(
        new Set(TRUTH.agents[agent]!.modelLatencyMs),
      );
    }
    expect(derived.tools['sim_read']?.claim).toBe('shared');
    expect(derived.tools['sim_write']?.claim).toBe('paths');
    expect(derived.tools['sim_node']?.claim).toBe('nodes');
    expect(JSON.stringify(derived)).not.toContain('message ');

    const recorded = await recordedLatencies(history);
    const replayed: DeploymentReport = await simulateDeployment(derived, RAN_UNDER, {
      seed: 8,
      durationMs: PERIOD_MS,
      startHour: 0,
    });
    expect(replayed.invariants.violations).toEqual([]);
    const simulated = replayed.overall.runLatencyMs;
    expect(relative(simulated.p50, percentile(recorded, 0.5))).toBeLessThan(TOLERANCE.p50);
    expect(relative(simulated.p95, percentile(recorded, 0.95))).toBeLessThan(TOLERANCE.p95);
  }, 600_000);

  it('gives the same report for the same seed, and more traffic waits longer', async () => {
    const options = { seed: 3, durationMs: 5 * 60_000 };
    const once = JSON.stringify(await simulateDeployment(TRUTH, TIGHT, options));
    expect(JSON.stringify(await simulateDeployment(TRUTH, TIGHT, options))).toBe(once);
    const tripled = await simulateDeployment(TRUTH, TIGHT, { ...options, scale: 3 });
    const base = JSON.parse(once) as DeploymentReport;
    expect(tripled.overall.messages).toBeGreaterThan(2 * base.overall.messages);
    expect(tripled.overall.admissionWaitMs.p95).toBeGreaterThan(base.overall.admissionWaitMs.p95);
    expect(tripled.utilisation.global).toBeGreaterThan(base.utilisation.global);

    // The HTML report opens offline: inline SVG, nothing to fetch, no script.
    const html = deploymentHtml([
      { label: 'tight', report: base },
      { label: 'tight ×3', report: tripled },
    ]);
    expect(html.match(/<svg /g)).toHaveLength(4);
    expect(html).not.toMatch(/<script|<link|<img|src=|href=/);
    expect(html).toContain('What the model assumes');
  }, 600_000);
});
