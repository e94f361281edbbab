/*
 * The metrics the event log already holds: each event of engine.events({}) becomes counter
 * increments and histogram observations, timed by the events' own `at` (the engine clock), so
 * a SimulatedClock gives exact durations and a slow reader of the stream skews nothing. Per
 * run it remembers only what a later event needs (its agent and model, when it queued,
 * started, began a turn, scheduled a batch, asked for an approval) and forgets the run at its
 * terminal event.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RunEvent, RunEventOf, StreamEvent } from '../engine/index.js';
import { LabelBudget } from './label-budget.js';

interface RunFacts {
  agent?: string;
  model?: string;
  queuedAt?: number;
  startedAt?: number;
  turnStartedAt?: number;
  scheduledAt?: number;
  /** The calls of the open batch: their tool, and whether they started. */
  calls: Map<string, { tool: string; started: boolean }>;
  /** Approvals asked for and not answered yet, by id: when they were asked. */
  approvals: Map<string, number>;
}

export interface EventMetricsOptions {
  registry: Registry;
  /** The agent of a run (engine.status(runId)?.agentId): `run.queued` does not carry it. */
  agentOf(runId: string): string | undefined;
}

const SECONDS_FAST = [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60];
const SECONDS_SLOW = [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400];

export class EventMetrics {
  private readonly runs = new Map<string, RunFacts>();
  /** Queued runs by id: their agent and why they wait (for switchyard_runs_waiting). */
  private readonly waiting = new Map<string, { agent: string; reason: string }>();
  private readonly agents = new LabelBudget(50);
  private readonly models = new LabelBudget(50);
  private readonly tools = new LabelBudget(200);
  private readonly codes = new LabelBudget(50);

  private readonly runsQueued;
  private readonly runsStarted;
  private readonly runsEnded;
  private readonly runDuration;
  private readonly admissionWait;
  private readonly laneDepth;
  private readonly modelTurn;
  private readonly modelTokens;
  private readonly modelRetries;
  private readonly toolCalls;
  private readonly toolDuration;
  private readonly toolWait;
  private readonly approvalWait;
  private readonly sandboxFallbacks;

  constructor(private readonly options: EventMetricsOptions) {
    const registers = [options.registry];
    this.runsQueued = new Counter({
      name: 'switchyard_runs_queued_total',
      help: "Times a run was queued: in its session's wait lane (session_busy) or for limiter permits (limits).",
      labelNames: ['reason'],
      registers,
    });
    this.runsStarted = new Counter({
      name: 'switchyard_runs_started_total',
      help: 'Runs that started, by agent.',
      labelNames: ['agent'],
      registers,
    });
    this.runsEnded = new Counter({
      name: 'switchyard_runs_total',
      help: 'Runs that ended, by final state and outcome code (ok, denied, the failure code or the cancel reason).',
      labelNames: ['state', 'code'],
      registers,
    });
    this.runDuration = new Histogram({
      name: 'switchyard_run_duration_seconds',
      help: "From a run's start to its end, by final state.",
      labelNames: ['state'],
      buckets: SECONDS_SLOW,
      registers,
    });
    this.admissionWait = new Histogram({
      name: 'switchyard_admission_wait_seconds',
      help: 'How long a run was queued before it started (0 for one that started at once).',
      buckets: [0, ...SECONDS_SLOW],
      registers,
    });
    this.laneDepth = new Histogram({
      name: 'switchyard_lane_depth',
      help: "A session's wait-lane depth when a message joined it (the place it took).",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    });
    this.modelTurn = new Histogram({
      name: 'switchyard_model_turn_duration_seconds',
      help: "From a model turn's start to the model's whole answer, by model.",
      labelNames: ['model'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.modelTokens = new Counter({
      name: 'switchyard_model_tokens_total',
      help: 'Tokens the model providers reported, by model and type (input, output, cached: the part of input read from a prompt cache).',
      labelNames: ['model', 'type'],
      registers,
    });
    this.modelRetries = new Counter({
      name: 'switchyard_model_retries_total',
      help: 'Model requests retried after a 429 or 5xx, by model.',
      labelNames: ['model'],
      registers,
    });
    this.toolCalls = new Counter({
      name: 'switchyard_tool_calls_total',
      help: 'Tool calls that ended, by tool and outcome (ok, or the error code).',
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.toolDuration = new Histogram({
      name: 'switchyard_tool_call_duration_seconds',
      help: "From a tool call's start to its result, by tool (calls that started).",
      labelNames: ['tool'],
      buckets: SECONDS_FAST,
      registers,
    });
    this.toolWait = new Histogram({
      name: 'switchyard_tool_call_wait_seconds',
      help: "From a batch's schedule to a call's start: the wait for conflicting calls (claims) and the concurrency cap, by tool.",
      labelNames: ['tool'],
      buckets: [0, ...SECONDS_FAST],
      registers,
    });
    this.approvalWait = new Histogram({
      name: 'switchyard_approval_wait_seconds',
      help: 'From an approval request to its answer, by decision.',
      labelNames: ['decision'],
      buckets: [0.1, 1, 5, 15, 30, 60, 120, 300, 900],
      registers,
    });
    this.sandboxFallbacks = new Counter({
      name: 'switchyard_sandbox_fallbacks_total',
      help: 'Commands that ran without a sandbox because [sandbox] backend = "auto" found none.',
      registers,
    });
    const waiting = this.waiting;
    new Gauge({
      name: 'switchyard_runs_waiting',
      help: "Runs queued now, by agent and why: in their session's lane (session_busy) or for permits (limits).",
      labelNames: ['agent', 'reason'],
      registers,
      collect() {
        this.reset();
        for (const { agent, reason } of waiting.values()) this.inc({ agent, reason });
      },
    });
    const runs = this.runs;
    new Gauge({
      name: 'switchyard_tool_calls_waiting',
      help: 'Tool calls of open batches that have not started yet: waiting for conflicting calls (claims) or the concurrency cap.',
      registers,
      collect() {
        let count = 0;
        for (const run of runs.values()) for (const call of run.calls.values()) if (!call.started) count += 1;
        this.set(count);
      },
    });
  }

  /** Counts a run found queued when telemetry attached (its `run.queued` came before). */
  seedWaiting(runId: string, agentId: string, reason: string): void {
    if (!this.waiting.has(runId)) this.waiting.set(runId, { agent: this.agents.of(agentId), reason });
  }

  record(event: StreamEvent): void {
    if (!('runId' in event) || event.type === 'model.delta') return;
    const at = Date.parse(event.at);
    switch (event.type) {
      case 'run.queued': {
        const run = this.factsOf(event.runId);
        run.queuedAt ??= at;
        run.agent ??= this.agents.of(this.options.agentOf(event.runId) ?? 'unknown');
        this.waiting.set(event.runId, { agent: run.agent, reason: event.reason });
        this.runsQueued.inc({ reason: event.reason });
        if (event.reason === 'session_busy') this.laneDepth.observe(event.position);
        return;
      }
      case 'run.started': {
        const run = this.factsOf(event.runId);
        run.agent = this.agents.of(event.agentId);
        run.model = this.models.of(event.model);
        run.startedAt = at;
        this.waiting.delete(event.runId);
        this.runsStarted.inc({ agent: run.agent });
        this.admissionWait.observe(run.queuedAt === undefined ? 0 : seconds(at - run.queuedAt));
        return;
      }
      case 'turn.started':
        this.factsOf(event.runId).turnStartedAt = at;
        return;
      case 'model.message':
        return this.modelAnswered(event, at);
      case 'run.retrying':
        this.modelRetries.inc({ model: this.factsOf(event.runId).model ?? 'unknown' });
        return;
      case 'tool.scheduled': {
        const run = this.factsOf(event.runId);
        run.scheduledAt = at;
        run.calls = new Map(event.claims.map((c) => [c.callId, { tool: this.tools.of(c.tool), started: false }]));
        return;
      }
      case 'tool.started': {
        const run = this.factsOf(event.runId);
        const call = run.calls.get(event.callId);
        if (!call) return;
        call.started = true;
        this.toolWait.observe({ tool: call.tool }, run.scheduledAt === undefined ? 0 : seconds(at - run.scheduledAt));
        return;
      }
      case 'tool.finished':
        return this.toolFinished(event);
      case 'approval.requested':
        this.factsOf(event.runId).approvals.set(event.approvalId, at);
        return;
      case 'approval.resolved': {
        const { approvals } = this.factsOf(event.runId);
        const askedAt = approvals.get(event.approvalId);
        approvals.delete(event.approvalId);
        if (askedAt !== undefined)
          this.approvalWait.observe({ decision: this.codes.of(event.decision) }, seconds(at - askedAt));
        return;
      }
      case 'sandbox.warning':
        this.sandboxFallbacks.inc();
        return;
      case 'run.completed':
      case 'run.cancelled':
      case 'run.failed':
        return this.runEnded(event, at);
      default:
        return;
    }
  }

  private modelAnswered(event: RunEventOf<'model.message'>, at: number): void {
    const run = this.factsOf(event.runId);
    const model = run.model ?? 'unknown';
    if (run.turnStartedAt !== undefined) this.modelTurn.observe({ model }, seconds(at - run.turnStartedAt));
    const usage = event.usage;
    if (!usage) return;
    this.modelTokens.inc({ model, type: 'input' }, usage.inputTokens);
    this.modelTokens.inc({ model, type: 'output' }, usage.outputTokens);
    if (usage.cachedTokens !== undefined) this.modelTokens.inc({ model, type: 'cached' }, usage.cachedTokens);
  }

  private toolFinished(event: RunEventOf<'tool.finished'>): void {
    const run = this.factsOf(event.runId);
    const call = run.calls.get(event.callId);
    run.calls.delete(event.callId);
    const tool = call?.tool ?? 'unknown';
    this.toolCalls.inc({ tool, outcome: event.ok ? 'ok' : this.codes.of(event.error?.code ?? 'error') });
    if (call?.started) this.toolDuration.observe({ tool }, seconds(event.durationMs));
  }

  private runEnded(event: RunEventOf<'run.completed' | 'run.cancelled' | 'run.failed'>, at: number): void {
    const run = this.runs.get(event.runId);
    this.runs.delete(event.runId);
    this.waiting.delete(event.runId);
    const state = event.type.slice('run.'.length);
    this.runsEnded.inc({ state, code: this.codes.of(outcomeCode(event)) });
    if (run?.startedAt !== undefined) this.runDuration.observe({ state }, seconds(at - run.startedAt));
  }

  private factsOf(runId: string): RunFacts {
    let run = this.runs.get(runId);
    if (!run) {
      run = { calls: new Map(), approvals: new Map() };
      this.runs.set(runId, run);
    }
    return run;
  }
}

/** ok, denied (completed, but a required action was refused), the failure code, or the cancel reason. */
function outcomeCode(event: RunEvent): string {
  if (event.type === 'run.completed') return event.denied && event.denied.length > 0 ? 'denied' : 'ok';
  if (event.type === 'run.failed') return event.error.code;
  if (event.type === 'run.cancelled') return event.reason.replace(/\s+/g, '_');
  return 'unknown';
}

function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}
