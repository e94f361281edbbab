/*
 * A workload model turned into a simulator scenario (scenario.ts): Poisson arrivals per agent at
 * the workload's hourly rates (times the scale), sessions that live for a drawn number of
 * messages, and per message a plan of model turns and tool-call batches drawn from the
 * workload's distributions. Pure: the same workload, config and seed give the same scenario;
 * each agent's arrivals and each message draw from their own streams.
 */
import { join } from 'node:path';
import type { BusyPolicy } from '../../machines/session.machine.js';
import type { Config } from '../config/index.js';
import { defaultConfig } from '../config/index.js';
import { Random } from './random.js';
import {
  FAULT_KINDS,
  type CallPlan,
  type FaultKind,
  type MessagePlan,
  type Scenario,
  type SimOp,
  type SimTool,
  type TurnPlan,
} from './scenario.js';
import type { AgentWorkload, Empirical, ToolClaimKind, Workload } from './workload.js';

const HOUR_MS = 3_600_000;
/** The busy policies the engine takes; a message whose recorded policy is another goes in as `queue` (counted). */
const ENGINE_POLICIES: readonly BusyPolicy[] = ['steer', 'interrupt', 'queue', 'collect', 'reject', 'rollback'];

/** What simulateDeployment() injects on top of the workload. */
export interface DeploymentFaults {
  /** Process crashes (abandon the engine, recover on the same store), per hour of virtual time. */
  crashesPerHour?: number;
  /** Share of model turns that fail, in place of each agent's recorded modelErrorRate. */
  modelErrorRate?: number;
}

export interface WorkloadScenarioOptions {
  seed: number;
  /** Arrival rates are multiplied by this. */
  scale: number;
  durationMs: number;
  /** Hour of day (UTC) the simulated period starts at. */
  startHour: number;
  faults: DeploymentFaults;
  /** Every message goes in with this busy policy instead of its recorded one. */
  busyPolicy?: string;
  /** Processes of a simulated cluster (1: a single engine). */
  processes?: number;
  store: 'memory' | 'lowdb';
}

export interface WorkloadScenario {
  scenario: Scenario;
  /** Messages whose recorded busy policy the engine does not know, sent as `queue`. */
  unknownPolicies: Record<string, number>;
}

/** The candidate's limits and scheduling on the simulator's harness (scripted model, synthetic tools, no approvals). */
export function deploymentConfig(candidate: Config, dataDir: string): Config {
  const base = defaultConfig();
  return {
    ...base,
    execution: candidate.execution,
    tool_service: candidate.tool_service,
    cluster: candidate.cluster,
    approval: { ...base.approval, tier: 'full' },
    sandbox: { ...base.sandbox, workspace_root: join(dataDir, 'workspaces') },
  };
}

export function buildWorkloadScenario(
  workload: Workload,
  candidate: Config,
  options: WorkloadScenarioOptions,
  dataDir: string,
): WorkloadScenario {
  const config = deploymentConfig(candidate, dataDir);
  const plans = new Map<string, MessagePlan>();
  const drawn: { op: SimOp; order: number }[] = [];
  const unknownPolicies: Record<string, number> = {};
  for (const [agentId, agent] of Object.entries(workload.agents)) {
    const arrivals = Random.derive(options.seed, 'arrivals', agentId);
    const sessions = new SessionPool(
      agentId,
      agent.messagesPerSession,
      Random.derive(options.seed, 'sessions', agentId),
    );
    const rate = (at: number) =>
      (agent.arrivalsPerHour[(options.startHour + Math.floor(at / HOUR_MS)) % 24]! * options.scale) / HOUR_MS;
    let at = 0;
    for (let i = 1; ; i++) {
      at = nextArrival(at, rate, options.durationMs, arrivals);
      if (at >= options.durationMs) break;
      const stream = (concern: string) => Random.derive(options.seed, 'message', agentId, i, concern);
      const recorded = options.busyPolicy ?? stream('policy').weighted(nonEmpty(agent.busyPolicies, { queue: 1 }));
      const policy = (ENGINE_POLICIES as readonly string[]).includes(recorded) ? (recorded as BusyPolicy) : 'queue';
      if (policy !== recorded) unknownPolicies[recorded] = (unknownPolicies[recorded] ?? 0) + 1;
      const plan: MessagePlan = {
        runId: `${agentId}-m${i}`,
        sessionId: sessions.next(),
        agentId,
        policy,
        turns: planTurns(workload, agent, stream('turns'), options.faults.modelErrorRate ?? agent.modelErrorRate),
      };
      plans.set(plan.runId, plan);
      drawn.push({ op: { at: Math.floor(at), op: 'submit', messages: [plan] }, order: drawn.length });
    }
  }
  const crashes = Random.derive(options.seed, 'crashes');
  const crashRate = (options.faults.crashesPerHour ?? 0) / HOUR_MS;
  for (
    let at = nextArrival(0, () => crashRate, options.durationMs, crashes);
    at < options.durationMs;
    at = nextArrival(at, () => crashRate, options.durationMs, crashes)
  ) {
    drawn.push({ op: { at: Math.floor(at), op: 'crash' }, order: drawn.length });
  }
  drawn.sort((a, b) => a.op.at - b.op.at || a.order - b.order);
  const rates = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  rates.crash = options.faults.crashesPerHour ?? 0;
  return {
    scenario: {
      seed: options.seed,
      runs: plans.size,
      config,
      store: options.store,
      dataDir,
      rates,
      lyingWriteClaim: false,
      earlyAnswer: false,
      sharedWorkspaces: [],
      ops: drawn.map((d) => d.op),
      plans,
      processes: options.processes ?? 1,
      leaseMs: config.cluster.lease_seconds * 1000,
    },
    unknownPolicies,
  };
}

/**
 * The next arrival of a Poisson process whose rate is constant within each hour: an exponential
 * gap at the hour's rate, started again at the hour's end when it would cross it (memoryless).
 */
function nextArrival(from: number, ratePerMs: (at: number) => number, until: number, random: Random): number {
  let at = from;
  while (at < until) {
    const hourEnd = (Math.floor(at / HOUR_MS) + 1) * HOUR_MS;
    const rate = ratePerMs(at);
    const gap = rate > 0 ? -Math.log(1 - random.next()) / rate : Infinity;
    if (at + gap < hourEnd) return at + gap;
    at = hourEnd;
  }
  return until;
}

/** An agent's sessions: a message opens a new one with chance 1 / (mean messages per session), or continues an open one. */
class SessionPool {
  private readonly open: { id: string; left: number }[] = [];
  private count = 0;
  private readonly newChance: number;

  constructor(
    private readonly agentId: string,
    private readonly messagesPerSession: Empirical,
    private readonly random: Random,
  ) {
    const mean = messagesPerSession.reduce((s, v) => s + v, 0) / messagesPerSession.length;
    this.newChance = 1 / Math.max(1, mean);
  }

  next(): string {
    if (this.open.length === 0 || this.random.chance(this.newChance)) {
      this.count += 1;
      const session = {
        id: `${this.agentId}-s${this.count}`,
        left: Math.max(1, Math.round(this.random.pick(this.messagesPerSession))) - 1,
      };
      if (session.left > 0) this.open.push(session);
      return session.id;
    }
    const index = Math.floor(this.random.next() * this.open.length);
    const session = this.open[index]!;
    session.left -= 1;
    if (session.left <= 0) this.open.splice(index, 1);
    return session.id;
  }
}

function planTurns(workload: Workload, agent: AgentWorkload, random: Random, modelErrorRate: number): TurnPlan[] {
  const toolNames = Object.keys(agent.tools).filter(
    (name) => workload.tools[name] !== undefined && agent.tools[name]! > 0,
  );
  const count = toolNames.length === 0 ? 1 : Math.max(1, Math.round(random.pick(agent.turnsPerRun)));
  const turns: TurnPlan[] = [];
  for (let t = 0; t < count; t++) {
    const delayMs = Math.round(random.pick(agent.modelLatencyMs));
    if (random.chance(modelErrorRate)) {
      turns.push({ kind: 'error', delayMs });
      break;
    }
    if (t === count - 1) turns.push({ kind: 'text', delayMs });
    else turns.push({ kind: 'tools', delayMs, calls: planBatch(workload, agent, random) });
  }
  return turns;
}

const SIM_TOOL_OF: Record<ToolClaimKind, SimTool> = {
  shared: 'sim_read',
  paths: 'sim_write',
  nodes: 'sim_node',
  global: 'sim_global',
};

function planBatch(workload: Workload, agent: AgentWorkload, random: Random): CallPlan[] {
  const size = Math.max(1, Math.round(random.pick(agent.toolBatchSize)));
  const calls: CallPlan[] = [];
  for (let k = 0; k < size; k++) {
    const name = random.weighted(agent.tools);
    const tool = workload.tools[name]!;
    const approvalMs =
      random.chance(tool.approvalRate) && workload.approvalWaitMs ? random.pick(workload.approvalWaitMs) : 0;
    const call: CallPlan = {
      tool: SIM_TOOL_OF[tool.claim],
      args: {
        // Calls of one tool touch one of a few targets: two writes of a batch may meet.
        target: tool.claim === 'nodes' ? `node-${random.int(1, 2)}` : `/w/${name}/${random.int(1, 4)}`,
        ms: Math.round(random.pick(tool.durationMs) + approvalMs),
        outcome: random.chance(tool.errorRate) ? 'error' : 'ok',
      },
    };
    // Identical calls in one batch are run once by the engine; the workload's calls are distinct.
    while (
      calls.some(
        (c) =>
          c.tool === call.tool &&
          c.args.target === call.args.target &&
          c.args.ms === call.args.ms &&
          c.args.outcome === call.args.outcome,
      )
    ) {
      call.args.ms += 1;
    }
    calls.push(call);
  }
  return calls;
}

function nonEmpty(weights: Record<string, number>, fallback: Record<string, number>): Record<string, number> {
  return Object.values(weights).some((w) => w > 0) ? weights : fallback;
}
