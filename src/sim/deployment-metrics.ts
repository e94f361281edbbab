/*
 * What simulateDeployment() measures, from the events the engine stored and its snapshot after
 * every step: per agent and overall, the waits (session lane, then admission by the limiter),
 * run latency, rejections and drops, tool-claim waits; over time, lane depth, runs running and
 * waiters; and the limiter's time-weighted utilisation.
 */
import type { EngineSnapshot } from '../core/engine-snapshot.js';
import type { RunEvent } from '../core/run-events.js';
import type { ProcessFigures, SimulationProbe } from './simulation.js';
import { empiricalOf } from './workload.js';

/** A distribution in milliseconds of virtual time. */
export interface Percentiles {
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface DeploymentMetrics {
  /** Messages submitted. */
  messages: number;
  /** Messages that became runs (the rest were steered into a running run or rejected). */
  runs: number;
  steered: number;
  /** `collect` messages merged into a run another message started (they have no run of their own). */
  collected: number;
  /** Runs cancelled `rolled_back` by a `rollback` message (or `superseded` by a later one while waiting). */
  rolledBack: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Refused at submit: the session's lane was full, the session was busy (busyPolicy reject), or a run could not start in time. */
  rejected: { lane_full: number; session_busy: number; deadline_unmeetable: number };
  /** Messages submitted per busy policy. */
  policies: Record<string, number>;
  /** Runs that ended cancelled by the engine (an interrupt, a stop, a crash's recovery) instead of answering. */
  dropped: number;
  /** From submit until the run left its session's lane (0 when the session was free). */
  laneWaitMs: Percentiles;
  /** From leaving the lane until the limiter admitted the run (run.started). */
  admissionWaitMs: Percentiles;
  /** From submit to run.completed, over completed runs and the collect messages they carried. */
  runLatencyMs: Percentiles;
  /** Tool calls that waited for a claim another run held, and how long (tool.waiting to tool.started). */
  toolClaimWaitMs: Percentiles;
  /** Run latency quantiles 0, 1, …, 100 % (for the CDF plot); empty without completed runs. */
  runLatencyQuantiles: number[];
}

export interface TimelinePoint {
  /** Start of the bucket, ms of virtual time. */
  atMs: number;
  /** Most messages waiting in session lanes at once within the bucket (all sessions). */
  laneDepth: number;
  /** Most runs holding a global permit at once. */
  inUse: number;
  /** Most runs waiting for the limiter at once. */
  waiting: number;
}

/** One process of a simulated cluster (slot `p1` … `pN`, over all its lives). */
export interface ProcessMetrics {
  process: string;
  /** Times it died (each time a supervisor started it again at once). */
  crashes: number;
  /** Messages routed to it (their session was its own). */
  messages: number;
  /** Runs that started on it, and how they ended. */
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Sessions it took over from a process that died. */
  takenOver: number;
  /** Time-weighted mean of its running runs over max_runs_global (its share of the cluster's permits). */
  utilisation: number;
  /** Most runs running on it at once. */
  peakRunning: number;
}

export interface Utilisation {
  /** Time-weighted mean of permits in use over max_runs_global. */
  global: number;
  /** Per agent: time-weighted mean of its permits in use over max_runs_per_agent. */
  perAgent: Record<string, number>;
  /** Most global permits in use at once. */
  peakGlobal: number;
}

interface RunTrack {
  agentId: string;
  /** The process it started on (a cluster). */
  process?: string;
  submittedAt: number;
  leftLaneAt?: number;
  inLane: boolean;
}

const TIMELINE_BUCKETS = 120;

export class DeploymentMeter {
  private readonly byAgent = new Map<string, AgentTally>();
  private readonly runs = new Map<string, RunTrack>();
  private readonly waitingCalls = new Map<string, number>();
  private readonly timeline: TimelinePoint[];
  private lastStep = { at: 0, global: 0, perAgent: {} as Record<string, number> };
  private readonly weighted = { global: 0, perAgent: {} as Record<string, number> };
  private peakGlobal = 0;
  /** collect carrier -> the messages it carries (their latency ends with its). */
  private readonly carried = new Map<string, string[]>();
  private readonly processes = new Map<string, ProcessTally>();
  private lastProcesses: { at: number; running: Record<string, number> } = { at: 0, running: {} };
  private maxGlobal = 0;

  /** `submitted`: each message's agent and the virtual time it is submitted at (its events may come before its submit answers). */
  constructor(
    private readonly submitted: ReadonlyMap<string, { agentId: string; atMs: number; policy?: string }>,
    private readonly durationMs: number,
  ) {
    const width = Math.max(1, Math.ceil(durationMs / TIMELINE_BUCKETS));
    this.timeline = Array.from({ length: TIMELINE_BUCKETS }, (_, i) => ({
      atMs: i * width,
      laneDepth: 0,
      inUse: 0,
      waiting: 0,
    }));
  }

  readonly probe: SimulationProbe = {
    onSubmit: (runId, _atMs, answer, process) => {
      const submitted = this.submitted.get(runId);
      const tally = this.tally(submitted?.agentId ?? '?');
      tally.messages += 1;
      if (submitted?.policy !== undefined)
        tally.policies[submitted.policy] = (tally.policies[submitted.policy] ?? 0) + 1;
      if (answer === 'steered') tally.steered += 1;
      else if (answer === 'lane_full') tally.laneFull += 1;
      else if (answer === 'session_busy') tally.sessionBusy += 1;
      else tally.runs += 1;
      if (process !== undefined) this.process(process).messages += 1;
    },
    onEvent: (event, atMs) => this.onEvent(event, atMs),
    onStep: (snapshot, atMs, processes) => {
      this.onStep(snapshot, atMs);
      if (processes !== undefined) this.onProcesses(processes, atMs);
    },
    onCollected: (carrier, merged) => {
      this.carried.set(carrier, [...merged]);
      for (const runId of merged) {
        const run = this.track(runId);
        if (run === undefined) continue;
        const tally = this.tally(run.agentId);
        tally.collected += 1;
        // It became part of another run: not a run of its own.
        tally.runs -= 1;
      }
    },
    onCrash: (process) => {
      this.process(process).crashes += 1;
    },
    onTakeover: (_from, to) => {
      this.process(to).takenOver += 1;
    },
  };

  private onEvent(event: RunEvent, atMs: number): void {
    const run = this.track(event.runId);
    if (run === undefined) return;
    const tally = this.tally(run.agentId);
    switch (event.type) {
      case 'run.queued':
        if (event.reason === 'session_busy' && run.leftLaneAt === undefined) run.inLane = true;
        else if (event.reason === 'limits' && run.inLane && run.leftLaneAt === undefined) {
          run.leftLaneAt = atMs;
          run.inLane = false;
        }
        break;
      case 'run.started': {
        if (event.node !== undefined) {
          run.process = processOf(event.node);
          this.process(run.process).runs += 1;
        }
        if (run.leftLaneAt === undefined) run.leftLaneAt = run.inLane ? atMs : run.submittedAt;
        run.inLane = false;
        tally.laneWait.push(run.leftLaneAt - run.submittedAt);
        tally.admissionWait.push(atMs - run.leftLaneAt);
        break;
      }
      case 'tool.waiting':
        this.waitingCalls.set(`${event.runId}\u0000${event.callId}`, atMs);
        break;
      case 'tool.started': {
        const key = `${event.runId}\u0000${event.callId}`;
        const since = this.waitingCalls.get(key);
        if (since !== undefined) {
          tally.claimWait.push(atMs - since);
          this.waitingCalls.delete(key);
        }
        break;
      }
      case 'run.completed':
        tally.completed += 1;
        tally.latency.push(atMs - run.submittedAt);
        for (const merged of this.carried.get(event.runId) ?? []) {
          const message = this.track(merged);
          if (message !== undefined) this.tally(message.agentId).latency.push(atMs - message.submittedAt);
        }
        if (run.process !== undefined) this.process(run.process).completed += 1;
        break;
      case 'run.failed':
        tally.failed += 1;
        if (event.error.code === 'deadline_unmeetable') tally.deadlineUnmeetable += 1;
        if (run.process !== undefined) this.process(run.process).failed += 1;
        break;
      case 'run.cancelled':
        tally.cancelled += 1;
        if (event.reason === 'rolled_back' || event.reason === 'superseded') tally.rolledBack += 1;
        if (run.process !== undefined) this.process(run.process).cancelled += 1;
        break;
    }
  }

  private onStep(snapshot: EngineSnapshot, atMs: number): void {
    const elapsed = atMs - this.lastStep.at;
    if (elapsed > 0) {
      this.weighted.global += this.lastStep.global * elapsed;
      for (const [agent, share] of Object.entries(this.lastStep.perAgent))
        this.weighted.perAgent[agent] = (this.weighted.perAgent[agent] ?? 0) + share * elapsed;
    }
    if (snapshot.global.max > 0) this.maxGlobal = snapshot.global.max;
    const global = snapshot.global.max > 0 ? snapshot.global.inUse / snapshot.global.max : 0;
    const perAgent = Object.fromEntries(
      Object.entries(snapshot.perAgent).map(([agent, p]) => [agent, p.max > 0 ? p.inUse / p.max : 0]),
    );
    this.lastStep = { at: Math.max(atMs, this.lastStep.at), global, perAgent };
    this.peakGlobal = Math.max(this.peakGlobal, snapshot.global.inUse);
    if (atMs >= this.durationMs) return;
    const point =
      this.timeline[Math.min(TIMELINE_BUCKETS - 1, Math.floor((atMs / this.durationMs) * TIMELINE_BUCKETS))]!;
    point.laneDepth = Math.max(
      point.laneDepth,
      snapshot.sessions.reduce((sum, s) => sum + s.laneDepth, 0),
    );
    point.inUse = Math.max(point.inUse, snapshot.global.inUse);
    point.waiting = Math.max(point.waiting, snapshot.waiting);
  }

  /** A cluster's processes at a step: time-weighted running runs per process, and their peaks. */
  private onProcesses(processes: readonly ProcessFigures[], atMs: number): void {
    const elapsed = atMs - this.lastProcesses.at;
    if (elapsed > 0)
      for (const [process, running] of Object.entries(this.lastProcesses.running))
        this.process(process).runningTime += running * elapsed;
    const running: Record<string, number> = {};
    for (const p of processes) {
      running[p.process] = p.running;
      const tally = this.process(p.process);
      tally.peakRunning = Math.max(tally.peakRunning, p.running);
    }
    this.lastProcesses = { at: Math.max(atMs, this.lastProcesses.at), running };
  }

  private process(process: string): ProcessTally {
    let tally = this.processes.get(process);
    if (tally === undefined) {
      tally = {
        crashes: 0,
        messages: 0,
        runs: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        takenOver: 0,
        runningTime: 0,
        peakRunning: 0,
      };
      this.processes.set(process, tally);
    }
    return tally;
  }

  private track(runId: string): RunTrack | undefined {
    let run = this.runs.get(runId);
    if (run === undefined) {
      const submitted = this.submitted.get(runId);
      if (submitted === undefined) return undefined;
      run = { agentId: submitted.agentId, submittedAt: submitted.atMs, inLane: false };
      this.runs.set(runId, run);
    }
    return run;
  }

  private tally(agentId: string): AgentTally {
    let tally = this.byAgent.get(agentId);
    if (tally === undefined) {
      tally = new AgentTally();
      this.byAgent.set(agentId, tally);
    }
    return tally;
  }

  /** The measurements; `endMs` is the virtual time the simulation ended at. */
  result(endMs: number): {
    overall: DeploymentMetrics;
    agents: Record<string, DeploymentMetrics>;
    timeline: TimelinePoint[];
    utilisation: Utilisation;
    processes?: ProcessMetrics[];
  } {
    this.onStep({ global: { inUse: 0, max: 0 }, perAgent: {}, waiting: 0, running: [], sessions: [] }, endMs);
    if (this.processes.size > 0) this.onProcesses([], endMs);
    const span = Math.max(1, endMs);
    const agents = [...this.byAgent].sort(([a], [b]) => a.localeCompare(b));
    const overall = new AgentTally();
    for (const [, tally] of agents) overall.add(tally);
    return {
      overall: overall.metrics(),
      agents: Object.fromEntries(agents.map(([id, tally]) => [id, tally.metrics()])),
      timeline: this.timeline,
      utilisation: {
        global: round(this.weighted.global / span),
        perAgent: Object.fromEntries(
          Object.entries(this.weighted.perAgent)
            .sort(([a], [b]) => a.localeCompare(b))
            .map(([agent, w]) => [agent, round(w / span)]),
        ),
        peakGlobal: this.peakGlobal,
      },
      ...(this.processes.size > 0
        ? {
            processes: [...this.processes]
              .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
              .map(([process, { runningTime, ...tally }]) => ({
                process,
                ...tally,
                utilisation: round(this.maxGlobal > 0 ? runningTime / span / this.maxGlobal : 0),
              })),
          }
        : {}),
    };
  }
}

interface ProcessTally {
  crashes: number;
  messages: number;
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  takenOver: number;
  /** Running runs × ms. */
  runningTime: number;
  peakRunning: number;
}

/** A node id `p2.3` (third life of process 2) names process `p2`. */
function processOf(node: string): string {
  return node.split('.')[0]!;
}

class AgentTally {
  messages = 0;
  runs = 0;
  steered = 0;
  collected = 0;
  rolledBack = 0;
  sessionBusy = 0;
  policies: Record<string, number> = {};
  completed = 0;
  failed = 0;
  cancelled = 0;
  laneFull = 0;
  deadlineUnmeetable = 0;
  laneWait: number[] = [];
  admissionWait: number[] = [];
  latency: number[] = [];
  claimWait: number[] = [];

  add(other: AgentTally): void {
    this.messages += other.messages;
    this.runs += other.runs;
    this.steered += other.steered;
    this.collected += other.collected;
    this.rolledBack += other.rolledBack;
    this.sessionBusy += other.sessionBusy;
    for (const [policy, n] of Object.entries(other.policies)) this.policies[policy] = (this.policies[policy] ?? 0) + n;
    this.completed += other.completed;
    this.failed += other.failed;
    this.cancelled += other.cancelled;
    this.laneFull += other.laneFull;
    this.deadlineUnmeetable += other.deadlineUnmeetable;
    this.laneWait.push(...other.laneWait);
    this.admissionWait.push(...other.admissionWait);
    this.latency.push(...other.latency);
    this.claimWait.push(...other.claimWait);
  }

  metrics(): DeploymentMetrics {
    return {
      messages: this.messages,
      runs: this.runs,
      steered: this.steered,
      collected: this.collected,
      rolledBack: this.rolledBack,
      completed: this.completed,
      failed: this.failed,
      cancelled: this.cancelled,
      rejected: {
        lane_full: this.laneFull,
        session_busy: this.sessionBusy,
        deadline_unmeetable: this.deadlineUnmeetable,
      },
      policies: Object.fromEntries(Object.entries(this.policies).sort(([a], [b]) => a.localeCompare(b))),
      dropped: this.cancelled,
      laneWaitMs: percentiles(this.laneWait),
      admissionWaitMs: percentiles(this.admissionWait),
      runLatencyMs: percentiles(this.latency),
      toolClaimWaitMs: percentiles(this.claimWait),
      runLatencyQuantiles: this.latency.length > 0 ? empiricalOf(quantiles(this.latency, 101)) : [],
    };
  }
}

/** Nearest-rank percentiles. */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return { count: 0, mean: 0, p50: 0, p95: 0, p99: 0, max: 0 };
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;
  return {
    count: sorted.length,
    mean: round(sorted.reduce((s, v) => s + v, 0) / sorted.length),
    p50: rank(0.5),
    p95: rank(0.95),
    p99: rank(0.99),
    max: sorted.at(-1)!,
  };
}

function quantiles(values: readonly number[], count: number): number[] {
  const sorted = [...values].sort((a, b) => a - b);
  return Array.from({ length: count }, (_, i) => sorted[Math.round((i * (sorted.length - 1)) / (count - 1))]!);
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
