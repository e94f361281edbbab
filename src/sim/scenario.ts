/*
 * What a simulation does, decided up front from its seed: the engine configuration, and a
 * timeline of operations (messages with the model turns and tool calls they will produce,
 * cancels, session stops, limit reloads, crashes). Pure: the same options give the same
 * timeline. Every message draws from its own random stream, so a shorter simulation is a
 * prefix of a longer one and switching one fault kind off leaves the other draws alone —
 * which is what makes shrinking a failure meaningful.
 */
import type { BusyPolicy } from '../../machines/session.machine.js';
import { join } from 'node:path';
import type { Config, PartialConfig } from '../config/index.js';
import { defaultConfig, mergeConfig } from '../config/index.js';
import type { MemoryStore } from '../store/memory-store.js';
import { Random } from './random.js';

/** The faults the simulator injects. */
export const FAULT_KINDS = [
  'toolError',
  'toolHang',
  'modelError',
  'modelHang',
  'deadline',
  'cancel',
  'stopSession',
  'interrupt',
  'steer',
  'limitRaise',
  'limitShrink',
  'laneOverflow',
  'crash',
  'sharedWorkspace',
  'steerDeadline',
  'priority',
  'startBy',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/**
 * Default rate of each fault: per tool call (toolError, toolHang), per model turn
 * (modelError), per message (the rest; interrupt and steer are shares of the busy policies,
 * steerDeadline a share of the steers). sharedWorkspace: the message works in one of two
 * workspaces shared between sessions, so its calls meet other runs' claims; priority: it runs
 * as background or batch; startBy: it must start within a few seconds.
 */
export const DEFAULT_FAULT_RATES: Readonly<Record<FaultKind, number>> = {
  toolError: 0.06,
  toolHang: 0.02,
  modelError: 0.03,
  modelHang: 0.01,
  deadline: 0.08,
  cancel: 0.05,
  stopSession: 0.01,
  interrupt: 0.12,
  steer: 0.25,
  limitRaise: 0.02,
  limitShrink: 0.02,
  laneOverflow: 0.01,
  crash: 0.008,
  sharedWorkspace: 0.3,
  steerDeadline: 0.3,
  priority: 0.3,
  startBy: 0.05,
};

/** The synthetic tools' kinds; `duplicate` repeats an earlier call of the same batch. */
export const TOOL_KINDS = ['read', 'write', 'node', 'global', 'shared', 'duplicate'] as const;
export type ToolKind = (typeof TOOL_KINDS)[number];

export const DEFAULT_TOOL_MIX: Readonly<Record<ToolKind, number>> = {
  read: 4,
  write: 4,
  node: 1,
  global: 1,
  shared: 1,
  duplicate: 1,
};

export interface ArrivalOptions {
  /** Mean virtual time between two messages (gaps are uniform in [0, 2 × mean]). */
  meanGapMs: number;
  /** Chance that the next message arrives at the same instant. */
  burstChance: number;
}

export const DEFAULT_ARRIVAL: Readonly<ArrivalOptions> = { meanGapMs: 300, burstChance: 0.05 };

export interface SimulateOptions {
  seed: number;
  /** Sessions the messages go to (default 6). */
  sessions?: number;
  /** Agents; session i belongs to agent i mod agents (default 3). */
  agents?: number;
  /** Messages to submit (default 500); each becomes a run, a steer or a lane_full rejection. */
  runs?: number;
  arrival?: Partial<ArrivalOptions>;
  /** Relative weights of the synthetic tool kinds (default DEFAULT_TOOL_MIX). */
  toolMix?: Partial<Record<ToolKind, number>>;
  /**
   * Which faults to inject: 'all' (default) or 'none', or per kind `true` (default rate),
   * `false`, or a rate; kinds left out keep their default rate.
   */
  faults?: 'all' | 'none' | Partial<Record<FaultKind, boolean | number>>;
  /** Engine configuration over the simulator's defaults (small limits, short timeouts). */
  config?: PartialConfig;
  /**
   * The store the engines share (default 'memory'); 'lowdb' keeps it in files in a temp dir and
   * reopens it from disk at every restart (slower: real file I/O).
   */
  store?: 'memory' | 'lowdb';
  /** Deliberately broken setups, to show the checks fire. */
  debug?: {
    /** The write tool claims `shared` (reads its path) while it really writes it. */
    lyingWriteClaim?: boolean;
    /** The store says every write is durable at once: the engine answers submits before its writes land. */
    earlyAnswer?: boolean;
    /** `[tool_service] cross_run_claims = false`: runs sharing a workspace no longer wait for each other's claims. */
    ignoreCrossRunClaims?: boolean;
  };
  /** On a violation, look for a smaller failing simulation (default true). */
  shrink?: boolean;
}

export type SimTool = 'sim_read' | 'sim_write' | 'sim_node' | 'sim_global' | 'sim_peek';

export interface CallPlan {
  tool: SimTool;
  args: { target: string; ms: number; outcome: 'ok' | 'error' | 'hang' };
}

export type TurnPlan =
  | { kind: 'text'; delayMs: number }
  | { kind: 'tools'; delayMs: number; calls: CallPlan[] }
  | { kind: 'error'; delayMs: number }
  | { kind: 'hang'; delayMs: number };

export interface MessagePlan {
  runId: string;
  sessionId: string;
  agentId: string;
  /** The engine's own simulation sends steer, interrupt and queue; a deployment's workload any policy. */
  policy: BusyPolicy;
  /** A deadline of the message's own. */
  timeoutMs?: number;
  /** One of the shared workspaces (an absolute directory); none: the session's own. */
  workspace?: string;
  priority?: 'background' | 'batch';
  startWithinMs?: number;
  /** As a steer: its deadline and what it does past it. */
  steerDeadlineMs?: number;
  steerEscalation?: 'interrupt' | 'queue';
  turns: TurnPlan[];
}

export type SimOp =
  | { at: number; op: 'submit'; messages: MessagePlan[] }
  | { at: number; op: 'cancel'; runId: string }
  | { at: number; op: 'stopSession'; sessionId: string }
  | { at: number; op: 'reconfigure'; kind: 'limitRaise' | 'limitShrink'; maxGlobal: number; maxPerAgent: number }
  | { at: number; op: 'crash' };

export interface Scenario {
  seed: number;
  runs: number;
  config: Config;
  store: 'memory' | 'lowdb';
  /** With store 'memory': this store instead of a fresh one (the caller reads the history back). */
  memoryStore?: MemoryStore;
  /** A temp dir for the workspaces and the lowdb store. */
  dataDir: string;
  /** Fault rates in force (0 = off). */
  rates: Record<FaultKind, number>;
  lyingWriteClaim: boolean;
  earlyAnswer: boolean;
  /** The workspaces sessions share (absolute). */
  sharedWorkspaces: string[];
  /** In time order; ops at the same instant in the order they were drawn. */
  ops: SimOp[];
  /** Every message's plan by runId (the model looks its turns up here). */
  plans: Map<string, MessagePlan>;
  /**
   * Processes of a simulated cluster sharing the store and the limiter (default 1: one engine
   * that recovers everything after a crash). With more, a crash kills one of them, a supervisor
   * starts it again at once, and its sessions are taken over by the others `leaseMs` later.
   */
  processes?: number;
  /** With several processes: how long a dead process's sessions stay owned before a takeover. */
  leaseMs?: number;
}

const PATHS = ['/sim/a', '/sim/a/x', '/sim/b', '/sim/c'] as const;
const SHARED_WORKSPACES = ['shared-1', 'shared-2'] as const;
const NODES = ['n1', 'n2'] as const;
/** Longer than any run deadline the simulator configures: the model never answers in time. */
const MODEL_HANG_MS = 3_600_000;
/** Lane capacity when lane overflow is off: nothing is ever rejected. */
const UNBOUNDED_LANE = 100_000;

export function resolveRates(faults: SimulateOptions['faults']): Record<FaultKind, number> {
  const rates = { ...DEFAULT_FAULT_RATES };
  if (faults === undefined || faults === 'all') return rates;
  for (const kind of FAULT_KINDS) {
    if (faults === 'none') rates[kind] = 0;
    else {
      const given = faults[kind];
      if (given === false) rates[kind] = 0;
      else if (typeof given === 'number') rates[kind] = given;
    }
  }
  return rates;
}

/** The engine configuration: the simulator's defaults, the seed's picks, then the caller's. */
function simulationConfig(
  seed: number,
  options: SimulateOptions,
  rates: Record<FaultKind, number>,
  workspaceRoot: string,
): Config {
  const random = Random.derive(seed, 'config');
  const concurrency = random.pick([0, 2, 4, 4, 8]);
  const scheduling = random.pick(['groups', 'dag'] as const);
  const base: PartialConfig = {
    execution: {
      max_runs_global: random.int(2, 5),
      max_runs_per_agent: random.int(1, 3),
      busy_policy: 'queue',
      wait_lane_capacity: rates.laneOverflow > 0 ? 4 : UNBOUNDED_LANE,
      wait_lane_max_wait_seconds: 60,
      max_pending_steers: 2,
      default_timeout_seconds: 120,
      max_iterations: 6,
    },
    tool_service: {
      // A lie in a claim only shows when calls can run side by side.
      parallel_tool_concurrency: options.debug?.lyingWriteClaim && concurrency < 2 ? 4 : concurrency,
      scheduling,
      default_timeout_seconds: 5,
      cross_run_claims: !options.debug?.ignoreCrossRunClaims,
    },
    approval: { tier: 'full' },
    sandbox: { workspace_root: workspaceRoot },
  };
  return mergeConfig(mergeConfig(defaultConfig(), base), options.config ?? {});
}

export function buildScenario(options: SimulateOptions, dataDir: string): Scenario {
  const seed = options.seed;
  const runs = options.runs ?? 500;
  const sessions = Math.max(1, options.sessions ?? 6);
  const agents = Math.max(1, options.agents ?? 3);
  const arrival = { ...DEFAULT_ARRIVAL, ...options.arrival };
  const toolMix = { ...DEFAULT_TOOL_MIX, ...options.toolMix };
  const rates = resolveRates(options.faults);
  const config = simulationConfig(seed, options, rates, join(dataDir, 'workspaces'));
  const exec = config.execution;
  // Under the workspace root: a server running as root creates (and hands to the sandbox user) only those.
  const sharedWorkspaces = SHARED_WORKSPACES.map((name) => join(config.sandbox.workspace_root, name));

  const drawn: { op: SimOp; order: number }[] = [];
  const plans = new Map<string, MessagePlan>();
  const submitted: string[] = [];
  let limits = { maxGlobal: exec.max_runs_global, maxPerAgent: exec.max_runs_per_agent };
  let at = 0;
  const push = (op: SimOp) => drawn.push({ op, order: drawn.length });

  for (let i = 0, count = 0; count < runs; i++) {
    // One stream per concern, so switching a fault off changes no other draw.
    const stream = (concern: string) => Random.derive(seed, 'message', i, concern);
    const random = stream('message');
    at += random.chance(arrival.burstChance) ? 0 : random.int(0, 2 * arrival.meanGapMs);
    const session = random.int(0, sessions - 1);
    const sessionId = `s${session + 1}`;
    const agentId = `agent${(session % agents) + 1}`;
    const message = planMessage(
      `m${i + 1}`,
      sessionId,
      agentId,
      stream,
      rates,
      toolMix,
      exec.max_iterations,
      sharedWorkspaces,
    );
    const batch = [message];
    // Lane overflow: a burst of queued messages to one session, more than its lane holds.
    const burst = stream('laneOverflow');
    if (burst.chance(rates.laneOverflow)) {
      const extra = Math.min(exec.wait_lane_capacity + 2, runs - count - 1);
      for (let j = 1; j <= extra; j++) {
        batch.push({
          runId: `m${i + 1}.${j}`,
          sessionId,
          agentId,
          policy: 'queue',
          turns: [{ kind: 'text', delayMs: burst.int(10, 200) }],
        });
      }
    }
    for (const m of batch) {
      plans.set(m.runId, m);
      submitted.push(m.runId);
    }
    count += batch.length;
    push({ at, op: 'submit', messages: batch });

    // What else happens around this message, each at its own offset after it.
    const cancel = stream('cancel');
    if (cancel.chance(rates.cancel)) {
      const target = submitted[Math.max(0, submitted.length - 1 - cancel.int(0, 3))]!;
      push({ at: at + cancel.int(0, 2_000), op: 'cancel', runId: target });
    }
    const stop = stream('stopSession');
    if (stop.chance(rates.stopSession)) push({ at: at + stop.int(0, 2_000), op: 'stopSession', sessionId });
    const raise = stream('limitRaise');
    if (raise.chance(rates.limitRaise)) {
      limits = {
        maxGlobal: Math.min(8, limits.maxGlobal + raise.int(1, 2)),
        maxPerAgent: Math.min(4, limits.maxPerAgent + 1),
      };
      push({ at: at + raise.int(0, 1_000), op: 'reconfigure', kind: 'limitRaise', ...limits });
    }
    const shrink = stream('limitShrink');
    if (shrink.chance(rates.limitShrink)) {
      limits = {
        maxGlobal: Math.max(1, limits.maxGlobal - shrink.int(1, 3)),
        maxPerAgent: Math.max(1, limits.maxPerAgent - 1),
      };
      push({ at: at + shrink.int(0, 1_000), op: 'reconfigure', kind: 'limitShrink', ...limits });
    }
    const crash = stream('crash');
    // A third of the crashes hit right after the burst was answered, before anything else ran.
    if (crash.chance(rates.crash)) push({ at: crash.chance(1 / 3) ? at : at + crash.int(0, 3_000), op: 'crash' });
  }

  drawn.sort((a, b) => a.op.at - b.op.at || a.order - b.order);
  return {
    seed,
    runs,
    config,
    store: options.store ?? 'memory',
    dataDir,
    rates,
    lyingWriteClaim: options.debug?.lyingWriteClaim ?? false,
    earlyAnswer: options.debug?.earlyAnswer ?? false,
    sharedWorkspaces,
    ops: drawn.map((d) => d.op),
    plans,
  };
}

function planMessage(
  runId: string,
  sessionId: string,
  agentId: string,
  stream: (concern: string) => Random,
  rates: Record<FaultKind, number>,
  toolMix: Record<ToolKind, number>,
  maxIterations: number,
  sharedWorkspaces: readonly string[],
): MessagePlan {
  const random = stream('turns');
  const r = stream('policy').next();
  const policy = r < rates.steer ? 'steer' : r < rates.steer + rates.interrupt ? 'interrupt' : 'queue';
  const deadlines = stream('deadline');
  const deadline = deadlines.chance(rates.deadline) ? deadlines.int(200, 3_000) : undefined;
  const options: Partial<MessagePlan> = {};
  const shared = stream('sharedWorkspace');
  if (shared.chance(rates.sharedWorkspace)) options.workspace = shared.pick(sharedWorkspaces);
  const priority = stream('priority');
  if (priority.chance(rates.priority)) options.priority = priority.pick(['background', 'batch'] as const);
  const startBy = stream('startBy');
  if (startBy.chance(rates.startBy)) options.startWithinMs = startBy.int(0, 3_000);
  const steerDeadline = stream('steerDeadline');
  if (policy === 'steer' && steerDeadline.chance(rates.steerDeadline)) {
    options.steerDeadlineMs = steerDeadline.int(50, 2_000);
    options.steerEscalation = steerDeadline.pick(['interrupt', 'queue'] as const);
  }
  // A few runs go past the iteration cap.
  const toolTurns = random.chance(0.04) ? maxIterations : random.int(0, 3);
  const hangs = stream('modelHang');
  const hangAt = hangs.chance(rates.modelHang) ? hangs.int(0, toolTurns) : -1;
  const turns: TurnPlan[] = [];
  for (let t = 0; t <= toolTurns; t++) {
    const delayMs = random.int(10, 400);
    const modelError = random.chance(rates.modelError);
    if (t === hangAt) {
      turns.push({ kind: 'hang', delayMs: MODEL_HANG_MS });
      break;
    }
    if (modelError) {
      turns.push({ kind: 'error', delayMs });
      break;
    }
    if (t === toolTurns) turns.push({ kind: 'text', delayMs });
    else turns.push({ kind: 'tools', delayMs, calls: planBatch(random, rates, toolMix) });
  }
  return {
    runId,
    sessionId,
    agentId,
    policy,
    ...(deadline !== undefined ? { timeoutMs: deadline } : {}),
    ...options,
    turns,
  };
}

function planBatch(random: Random, rates: Record<FaultKind, number>, toolMix: Record<ToolKind, number>): CallPlan[] {
  const calls: CallPlan[] = [];
  const size = random.int(1, 4);
  for (let k = 0; k < size; k++) {
    const kind = random.weighted(toolMix);
    const ms = random.chance(0.1) ? 0 : random.int(10, 800);
    const f = random.next();
    const outcome = f < rates.toolError ? 'error' : f < rates.toolError + rates.toolHang ? 'hang' : 'ok';
    if (kind === 'duplicate' && calls.length > 0) {
      calls.push(random.pick(calls));
      continue;
    }
    const call = newCall(kind, ms, outcome, random);
    // Only the `duplicate` kind repeats a call: the engine runs a batch with repeats serially.
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

function newCall(kind: ToolKind, ms: number, outcome: CallPlan['args']['outcome'], random: Random): CallPlan {
  switch (kind) {
    case 'write':
      return { tool: 'sim_write', args: { target: random.pick(PATHS), ms, outcome } };
    case 'node':
      return { tool: 'sim_node', args: { target: random.pick(NODES), ms, outcome } };
    case 'global':
      return { tool: 'sim_global', args: { target: '-', ms, outcome } };
    case 'shared':
      return { tool: 'sim_peek', args: { target: '-', ms, outcome } };
    default:
      return { tool: 'sim_read', args: { target: random.pick(PATHS), ms, outcome } };
  }
}

/** One line per operation, for traces. */
export function describeOp(op: SimOp): string {
  const at = `@${op.at}ms`;
  switch (op.op) {
    case 'submit':
      return op.messages.map((m) => `${at} submit ${describeMessage(m)}`).join('\n');
    case 'cancel':
      return `${at} cancel ${op.runId}`;
    case 'stopSession':
      return `${at} stopSession ${op.sessionId}`;
    case 'reconfigure':
      return `${at} reconfigure (${op.kind === 'limitRaise' ? 'raise' : 'shrink'}) max_runs_global=${op.maxGlobal} max_runs_per_agent=${op.maxPerAgent}`;
    case 'crash':
      return `${at} crash + restart`;
  }
}

function describeMessage(m: MessagePlan): string {
  const deadline =
    (m.timeoutMs !== undefined ? ` timeout=${m.timeoutMs}ms` : '') +
    (m.workspace !== undefined ? ` workspace=${m.workspace.slice(m.workspace.lastIndexOf('/') + 1)}` : '') +
    (m.priority !== undefined ? ` priority=${m.priority}` : '') +
    (m.startWithinMs !== undefined ? ` startWithin=${m.startWithinMs}ms` : '') +
    (m.steerDeadlineMs !== undefined
      ? ` steerDeadline=${m.steerDeadlineMs}ms→${m.steerEscalation ?? 'interrupt'}`
      : '');
  const turns = m.turns.map((t) => {
    switch (t.kind) {
      case 'tools':
        return `tools(${t.delayMs}ms)[${t.calls.map(describeCall).join(', ')}]`;
      case 'text':
        return `text(${t.delayMs}ms)`;
      case 'error':
        return `model-error(${t.delayMs}ms)`;
      case 'hang':
        return 'model-hang';
    }
  });
  return `${m.runId} ${m.sessionId}/${m.agentId} ${m.policy}${deadline}: ${turns.join(' -> ')}`;
}

function describeCall(c: CallPlan): string {
  return `${c.tool.slice(4)} ${c.args.target} ${c.args.ms}ms${c.args.outcome === 'ok' ? '' : ` ${c.args.outcome}`}`;
}
