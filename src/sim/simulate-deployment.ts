/*
 * simulateDeployment(): a workload (workload.ts) replayed in virtual time against the real
 * engine with a candidate configuration — the simulator's own machinery (simulation.ts), its
 * invariant checks included, fed by workload-scenario.ts and measured by deployment-metrics.ts.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/index.js';
import type { MemoryStore } from '../store/memory-store.js';
import {
  DeploymentMeter,
  type DeploymentMetrics,
  type ProcessMetrics,
  type TimelinePoint,
  type Utilisation,
} from './deployment-metrics.js';
import { runScenario, type SimulationViolation } from './simulation.js';
import { buildWorkloadScenario, type DeploymentFaults } from './workload-scenario.js';
import type { Workload } from './workload.js';

export interface DeploymentOptions {
  /** Seed of arrivals, sessions, turns and faults (default 1): the same seed gives the same report. */
  seed?: number;
  /** Multiplies every arrival rate (default 1; 3 is "three times the traffic"). */
  scale?: number;
  /** Virtual time to simulate arrivals for, in ms (default one hour); runs still going at the end are let finish. */
  durationMs?: number;
  /** Hour of day (UTC) the period starts at (default: the hour with the most traffic in the workload). */
  startHour?: number;
  /** Faults on top of the workload (default none but each agent's recorded model error rate). */
  faults?: DeploymentFaults;
  /** Send every message with this busy policy instead of its recorded one. */
  busyPolicy?: string;
  /**
   * Gateway processes of a cluster (default 1). With more, each runs an engine in virtual time
   * on one shared store and one shared limiter; a session belongs to one process, and a crash
   * kills one process, whose sessions the others take over once its leases ran out (the
   * candidate's [cluster] lease_seconds). The report then has per-process figures.
   */
  processes?: number;
  /**
   * Keep the simulated history: the run logs go to a lowdb store in `<recordTo>/store` (slower:
   * real file I/O), which `deriveWorkload` and `switchyard simulate --from-store` read back.
   */
  recordTo?: string;
  /** Keep the simulated history in this memory store instead (fast; for tests and notebooks). */
  recordInto?: MemoryStore;
}

export interface DeploymentReport {
  seed: number;
  scale: number;
  durationMs: number;
  startHour: number;
  /** Virtual time until the last run ended. */
  virtualMs: number;
  overall: DeploymentMetrics;
  agents: Record<string, DeploymentMetrics>;
  utilisation: Utilisation;
  timeline: TimelinePoint[];
  crashes: number;
  /** Processes simulated (1: a single engine). */
  processes: number;
  /** With several processes: each one's figures (slot p1 … pN, over all its lives). */
  perProcess?: ProcessMetrics[];
  /** Messages whose recorded busy policy this engine does not know, sent as `queue`, by policy. */
  unknownPolicies: Record<string, number>;
  invariants: { checks: number; violations: SimulationViolation[] };
  /** The limits the candidate ran with. */
  limits: {
    max_runs_global: number;
    max_runs_per_agent: number;
    wait_lane_capacity: number;
    busy_policy: string;
    parallel_tool_concurrency: number;
    collect_quiet_ms: number;
    /** How long a dead process's sessions wait for a takeover (several processes). */
    lease_seconds: number;
  };
}

const HOUR_MS = 3_600_000;

/**
 * Replays `workload` against the real engine configured by `config` (its `[execution]` and
 * `[tool_service]`; models and tools are the simulator's scripted ones) in virtual time.
 *
 * @example
 * const workload = await deriveWorkload(await LowdbStore.open('./data'));
 * const report = await simulateDeployment(workload, await loadConfig('candidate.toml'), { scale: 3, faults: { crashesPerHour: 1 } });
 * console.log(report.overall.runLatencyMs.p95, report.overall.rejected.lane_full);
 */
export async function simulateDeployment(
  workload: Workload,
  config: Config,
  options: DeploymentOptions = {},
): Promise<DeploymentReport> {
  const seed = options.seed ?? 1;
  const scale = options.scale ?? 1;
  const durationMs = options.durationMs ?? HOUR_MS;
  const startHour = options.startHour ?? busiestHour(workload);
  const processes = options.processes ?? 1;
  if (!Number.isInteger(processes) || processes < 1)
    throw new RangeError(`processes must be a whole number of processes, at least 1 (not ${processes})`);
  const tempRoot = mkdtempSync(join(tmpdir(), 'switchyard-deploy-sim-'));
  const dataDir = options.recordTo ?? tempRoot;
  mkdirSync(dataDir, { recursive: true });
  try {
    const { scenario, unknownPolicies } = buildWorkloadScenario(
      workload,
      config,
      {
        seed,
        scale,
        durationMs,
        startHour,
        faults: options.faults ?? {},
        processes,
        store: options.recordTo !== undefined ? 'lowdb' : 'memory',
        ...(options.busyPolicy !== undefined ? { busyPolicy: options.busyPolicy } : {}),
      },
      dataDir,
    );
    if (options.recordInto !== undefined) scenario.memoryStore = options.recordInto;
    const submitted = new Map<string, { agentId: string; atMs: number; policy: string }>();
    for (const op of scenario.ops)
      if (op.op === 'submit')
        for (const m of op.messages) submitted.set(m.runId, { agentId: m.agentId, atMs: op.at, policy: m.policy });
    const meter = new DeploymentMeter(submitted, durationMs);
    const { report } = await runScenario(scenario, meter.probe);
    const { processes: perProcess, ...measured } = meter.result(report.virtualMs);
    const exec = scenario.config.execution;
    return {
      seed,
      scale,
      durationMs,
      startHour,
      virtualMs: report.virtualMs,
      ...measured,
      crashes: report.faults.crash,
      processes,
      ...(perProcess !== undefined ? { perProcess } : {}),
      unknownPolicies,
      invariants: { checks: report.checks, violations: report.violations },
      limits: {
        max_runs_global: exec.max_runs_global,
        max_runs_per_agent: exec.max_runs_per_agent,
        wait_lane_capacity: exec.wait_lane_capacity,
        busy_policy: exec.busy_policy,
        parallel_tool_concurrency: scenario.config.tool_service.parallel_tool_concurrency,
        collect_quiet_ms: exec.collect_quiet_ms,
        lease_seconds: scenario.config.cluster.lease_seconds,
      },
    };
  } finally {
    rmSync(tempRoot, { recursive: true, force: true });
  }
}

/** The hour of day with the most arrivals over all agents (the first such). */
export function busiestHour(workload: Workload): number {
  let best = 0;
  let most = -1;
  for (let h = 0; h < 24; h++) {
    const total = Object.values(workload.agents).reduce((sum, a) => sum + a.arrivalsPerHour[h]!, 0);
    if (total > most) {
      most = total;
      best = h;
    }
  }
  return best;
}
