/*
 * One simulation: drives a real engine — same machines, same code — through a seeded scenario
 * in virtual time, and checks the invariants after every step. A step is one operation of the
 * scenario (messages, cancels, reloads, crashes) or one instant at which timers fire; the
 * simulator jumps the SimulatedClock from one such instant to the next and lets every
 * promise settle in between, so nothing depends on wall-clock time and the same seed gives
 * the same report, byte for byte. A crash abandons the engine without closing it (its timers
 * stop, its writes are dropped) and starts a new one on the same store.
 */
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { canonicalJson } from '../concurrency/index.js';
import type { Config } from '../config/index.js';
import {
  createEngine,
  isEngineError,
  isTerminalEvent,
  type Engine,
  type EventStream,
  type RunEvent,
} from '../engine/index.js';
import { scriptedModel, type ScriptTurn } from '../model/index.js';
import { LowdbStore } from '../store/lowdb-store.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store } from '../store/types.js';
import type { EngineSnapshot } from '../core/engine-snapshot.js';
import { CrashableStore } from './crashable-store.js';
import { InvariantMonitor, type InvariantName, type Limits, type Violation } from './invariants.js';
import {
  buildScenario,
  FAULT_KINDS,
  type FaultKind,
  type MessagePlan,
  type Scenario,
  type SimOp,
  type SimulateOptions,
} from './scenario.js';
import type { ShrunkFailure } from './shrink.js';
import { IncarnationClock } from './sim-clock.js';
import { ExecutionGate, gateKey, SIM_TOOL_NAMES, simTools, trueFootprint } from './sim-tools.js';

export interface SimulationViolation extends Violation {
  /** Virtual time of the step that found it. */
  atMs: number;
  /** How many operations of the scenario had been applied. */
  afterOps: number;
}

export interface SimulationReport {
  seed: number;
  /** Messages submitted. */
  runs: number;
  completed: number;
  cancelled: number;
  failed: number;
  /** Faults injected, by kind. */
  faults: Record<FaultKind, number>;
  /** Invariant checks performed. */
  checks: number;
  violations: SimulationViolation[];
  /** Present when there are violations (and shrinking was on). */
  shrunk?: ShrunkFailure;
  /** Virtual time the simulation covered. */
  virtualMs: number;
  /** Steps taken (operations applied plus instants at which timers fired). */
  steps: number;
  /** Messages consumed as steers (no run of their own). */
  steered: number;
  /** Messages rejected at submit (lane_full). */
  rejected: number;
  /** Tool calls that waited for a claim another run held (tool.waiting). */
  claimWaits: number;
}

/**
 * What a caller may watch of a simulation as it goes (simulateDeployment measures with it):
 * every stored event, every message's answer at submit, and the engine's snapshot after every
 * step, each with the virtual time. None may throw.
 */
export interface SimulationProbe {
  onEvent?(event: RunEvent, atMs: number): void;
  onSubmit?(runId: string, atMs: number, answer: 'run' | 'steered' | 'rejected'): void;
  onStep?(snapshot: EngineSnapshot, atMs: number): void;
}

/** One engine and what belongs to it alone: its view of the clock and the store, its tool gate. */
class Incarnation {
  engine!: Engine;
  readonly clock: IncarnationClock;
  readonly store: CrashableStore;
  readonly gate = new ExecutionGate();
  alive = true;
  stream: EventStream | undefined;
  /**
   * Per run: the calls of its batch that repeat an earlier call (same tool, same arguments):
   * they get that call's result and never execute, whether or not the earlier one ran.
   */
  readonly repeats = new Map<string, Set<string>>();

  constructor(
    base: SimulatedClock,
    store: Store,
    earlyAnswer: boolean,
    onEvent: (incarnation: Incarnation, event: RunEvent) => void,
  ) {
    this.clock = new IncarnationClock(base);
    this.store = new CrashableStore(store, (event) => onEvent(this, event), { lyingDurable: earlyAnswer });
  }
}

export interface SimulationRun {
  report: SimulationReport;
  /** The operations applied, up to the first violation. */
  applied: SimOp[];
}

/** Wall-clock patience for the one real I/O between a call's start and its tool (a mkdir); only a bug exhausts it. */
const ARRIVAL_FAIL_SAFE_MS = 60_000;
/** After the last operation, everything must have ended within this much virtual time. */
const DRAIN_LIMIT_MS = 24 * 3_600_000;
/** Timers firing again and again at one instant: the engine is spinning. */
const SAME_INSTANT_LIMIT = 10_000;
const SIM_CANCEL_REASON = 'sim cancel';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

class Simulation {
  private readonly base = new SimulatedClock();
  private store!: Store;
  private readonly monitor: InvariantMonitor;
  private current!: Incarnation;
  private limits: Limits;
  private config: Config;
  private readonly faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  private readonly counts = { completed: 0, cancelled: 0, failed: 0, steered: 0, rejected: 0, claimWaits: 0 };
  private readonly agentOf = new Map<string, string>();
  /** Events appended per run, as the monitor saw them. */
  private readonly appended = new Map<string, number>();
  private readonly violations: SimulationViolation[] = [];
  private readonly applied: SimOp[] = [];
  private engineErrors: string[] = [];
  private reported = 0;
  private simChecks = 0;
  private steps = 0;
  private lastInstant = -1;
  private sameInstant = 0;

  constructor(
    private readonly scenario: Scenario,
    private readonly probe: SimulationProbe = {},
  ) {
    this.config = scenario.config;
    this.limits = {
      maxGlobal: scenario.config.execution.max_runs_global,
      maxPerAgent: scenario.config.execution.max_runs_per_agent,
    };
    this.monitor = new InvariantMonitor({
      limits: () => this.limits,
      footprint: ({ tool, args, declared }) => trueFootprint(tool, args, declared),
    });
  }

  async run(): Promise<SimulationRun> {
    this.store = await this.openStore();
    this.current = await this.startEngine();
    await this.settle();
    this.checkStep();
    for (const [i, op] of this.scenario.ops.entries()) {
      if (this.failed) break;
      await this.advanceTo(op.at);
      if (this.failed) break;
      this.applied.push(op);
      await this.apply(op);
      // A crash at this very instant strikes before anything settles: writes still in flight are lost.
      const next = this.scenario.ops[i + 1];
      if (next?.op === 'crash' && next.at === op.at) continue;
      await this.settle();
      this.steps += 1;
      this.checkStep();
    }
    if (!this.failed) await this.drain();
    if (!this.failed) {
      const all = this.monitor.check();
      this.collect(all.slice(this.reported));
    }
    if (!this.failed) await this.checkStoredLogs();
    if (this.failed) this.abandon(this.current);
    else await this.closeEngine();
    await this.store.close();
    return { report: this.report(), applied: this.applied };
  }

  private get failed(): boolean {
    return this.violations.length > 0;
  }

  // -------------------------------------------------------------------------------------
  // Engine incarnations

  private async openStore(): Promise<Store> {
    return this.scenario.store === 'lowdb'
      ? LowdbStore.open(join(this.scenario.dataDir, 'store'))
      : (this.scenario.memoryStore ?? new MemoryStore());
  }

  private async startEngine(): Promise<Incarnation> {
    const incarnation = new Incarnation(this.base, this.store, this.scenario.earlyAnswer, (inc, event) =>
      this.onEvent(inc, event),
    );
    const { clock, gate, store } = incarnation;
    incarnation.engine = await createEngine({
      config: this.config,
      store,
      clock,
      models: { scripted: scriptedModel((ctx) => this.turnOf(incarnation, ctx.runId, ctx.turn)) },
      tools: simTools({
        clock,
        gate,
        lyingWriteClaim: this.scenario.lyingWriteClaim,
        injected: (kind) => {
          if (incarnation.alive) this.faults[kind] += 1;
        },
      }),
      onError: (error) => {
        if (incarnation.alive) this.engineErrors.push(error instanceof Error ? error.message : String(error));
      },
    });
    const stream = incarnation.engine.events();
    incarnation.stream = stream;
    void (async () => {
      // Engine-wide events (engine.running) are only published, never stored: they come from the stream.
      for await (const event of stream) if (!('runId' in event)) this.monitor.observe(event);
    })();
    return incarnation;
  }

  /** Stops an engine without closing it: no timer of it fires again, no write of it lands. */
  private abandon(incarnation: Incarnation): void {
    incarnation.alive = false;
    incarnation.clock.stop();
    incarnation.store.crash();
    incarnation.stream?.close();
  }

  private async closeEngine(): Promise<void> {
    this.current.stream?.close();
    await this.current.engine.close();
    this.current.alive = false;
    this.current.clock.stop();
  }

  /** Every event as the store receives it (recovery included), in append order. */
  private onEvent(incarnation: Incarnation, event: RunEvent): void {
    if (!incarnation.alive) return;
    this.monitor.observe(event);
    this.probe.onEvent?.(event, this.base.now());
    this.appended.set(event.runId, (this.appended.get(event.runId) ?? 0) + 1);
    switch (event.type) {
      case 'run.started':
        this.agentOf.set(event.runId, event.agentId);
        break;
      case 'model.message':
        incarnation.repeats.set(event.runId, repeatsOf(event.toolCalls));
        break;
      case 'tool.waiting':
        this.counts.claimWaits += 1;
        break;
      case 'tool.started': {
        if (!SIM_TOOL_NAMES.has(event.tool) || incarnation.repeats.get(event.runId)?.has(event.callId)) break;
        incarnation.gate.expect(gateKey(event.runId, event.callId));
        break;
      }
      case 'run.completed':
      case 'run.cancelled':
      case 'run.failed':
        this.counts[
          event.type === 'run.completed' ? 'completed' : event.type === 'run.cancelled' ? 'cancelled' : 'failed'
        ] += 1;
        incarnation.repeats.delete(event.runId);
        break;
    }
  }

  /** The scripted model's turn `turn` of run `runId`: the plan of the message it was named after. */
  private turnOf(incarnation: Incarnation, runId: string, turn: number): ScriptTurn {
    const planned = this.scenario.plans.get(runId)?.turns[turn];
    const count = (kind: FaultKind) => {
      if (incarnation.alive) this.faults[kind] += 1;
    };
    switch (planned?.kind) {
      case undefined:
        return { text: `done ${runId}#${turn}`, delayMs: 20 };
      case 'text':
        return { text: `answer ${runId}#${turn}`, delayMs: planned.delayMs };
      case 'tools':
        return {
          toolCalls: planned.calls.map((c) => ({ name: c.tool, args: { ...c.args } })),
          delayMs: planned.delayMs,
        };
      case 'error':
        count('modelError');
        return { error: `injected model failure in ${runId}#${turn}`, delayMs: planned.delayMs };
      case 'hang':
        count('modelHang');
        return { text: 'an answer that comes too late', delayMs: planned.delayMs };
    }
  }

  // -------------------------------------------------------------------------------------
  // Time

  /**
   * Lets every promise settle. Real I/O is waited for — a call's workspace mkdir, and with
   * lowdb the store's files: virtual time never moves while a started call has not reached its
   * tool or the store is busy, and arrived calls are let go in the order they started.
   */
  private async settle(): Promise<void> {
    const { gate, store } = this.current;
    for (;;) {
      await tick();
      if (gate.inFlight > 0 || store.inFlight > 0) {
        await gate.arrivals(ARRIVAL_FAIL_SAFE_MS);
        await store.idle();
        continue;
      }
      const strays = gate.takeStrays();
      if (strays.length > 0) throw new Error(`simulator: tool calls ${strays.join(', ')} reached a tool unannounced`);
      if (gate.waiting === 0) return;
      gate.releaseArrived();
    }
  }

  /** Fires the timers due at `at` (and everything they set off), then checks. */
  private async stepTo(at: number): Promise<void> {
    this.base.set(Math.max(at, this.base.now()));
    await this.settle();
    this.steps += 1;
    this.checkStep();
  }

  /** Moves virtual time to `at`, stepping through every instant at which timers are due. */
  private async advanceTo(at: number): Promise<void> {
    for (;;) {
      const next = this.current.clock.nextDue();
      if (next === undefined || next > at) break;
      if (this.spinningAt(next)) return;
      await this.stepTo(next);
      if (this.failed) return;
    }
    if (at > this.base.now()) this.base.set(at);
  }

  /** Timers due again and again at one instant mean the engine spins without time moving on. */
  private spinningAt(next: number): boolean {
    this.sameInstant = next === this.lastInstant ? this.sameInstant + 1 : 0;
    this.lastInstant = next;
    if (this.sameInstant <= SAME_INSTANT_LIMIT) return false;
    this.violate('drain', `timers keep firing at ${next} ms without time moving on`);
    return true;
  }

  /** After the last operation: run the clock until everything accepted has ended and the engine is idle. */
  private async drain(): Promise<void> {
    const limit = this.base.now() + DRAIN_LIMIT_MS;
    for (;;) {
      if (this.idle() && this.monitor.unfinished().length === 0) return;
      const next = this.current.clock.nextDue();
      if (next === undefined || next > limit) {
        const unfinished = this.monitor.unfinished();
        const snapshot = this.current.engine.snapshot();
        this.violate(
          'drain',
          `nothing left to happen, yet ${unfinished.length} accepted messages have no outcome (${unfinished.slice(0, 5).join(', ')}) ` +
            `and the engine holds ${snapshot.global.inUse} permits, ${snapshot.waiting} waiters, ` +
            `${snapshot.sessions.filter((s) => s.activeRunId !== undefined || s.laneDepth > 0).length} busy sessions`,
        );
        return;
      }
      if (this.spinningAt(next)) return;
      await this.stepTo(next);
      if (this.failed) return;
    }
  }

  private idle(): boolean {
    const s = this.current.engine.snapshot();
    return (
      s.global.inUse === 0 &&
      s.waiting === 0 &&
      s.running.length === 0 &&
      s.sessions.every((x) => x.activeRunId === undefined && x.laneDepth === 0)
    );
  }

  // -------------------------------------------------------------------------------------
  // Operations

  private async apply(op: SimOp): Promise<void> {
    const engine = this.current.engine;
    switch (op.op) {
      case 'submit':
        return this.submit(op.messages);
      case 'cancel':
        this.faults.cancel += 1;
        await engine.cancel(op.runId, SIM_CANCEL_REASON);
        return;
      case 'stopSession':
        this.faults.stopSession += 1;
        await engine.stopSession(op.sessionId);
        return;
      case 'reconfigure': {
        this.faults[op.kind] += 1;
        // The monitor reads the limits at every run.started: in force before the engine applies them.
        this.limits = { maxGlobal: op.maxGlobal, maxPerAgent: op.maxPerAgent };
        const execution = { max_runs_global: op.maxGlobal, max_runs_per_agent: op.maxPerAgent };
        this.config = { ...this.config, execution: { ...this.config.execution, ...execution } };
        engine.reconfigure({ execution });
        return;
      }
      case 'crash':
        return this.crash();
    }
  }

  private async submit(messages: MessagePlan[]): Promise<void> {
    const engine = this.current.engine;
    // All in one tick, as a burst of clients would.
    const results = await Promise.allSettled(
      messages.map((m) =>
        engine.submit({
          runId: m.runId,
          sessionId: m.sessionId,
          agentId: m.agentId,
          input: `message ${m.runId}`,
          busyPolicy: m.policy,
          ...(m.timeoutMs !== undefined ? { timeoutMs: m.timeoutMs } : {}),
          ...(m.workspace !== undefined ? { workspace: m.workspace } : {}),
          ...(m.priority !== undefined ? { priority: m.priority } : {}),
          ...(m.startWithinMs !== undefined ? { startWithinMs: m.startWithinMs } : {}),
          ...(m.steerDeadlineMs !== undefined
            ? { steerDeadlineMs: m.steerDeadlineMs, steerEscalation: m.steerEscalation }
            : {}),
        }),
      ),
    );
    for (const [i, result] of results.entries()) {
      const m = messages[i]!;
      if (m.policy === 'steer' || m.policy === 'interrupt') this.faults[m.policy] += 1;
      if (m.timeoutMs !== undefined) this.faults.deadline += 1;
      if (m.workspace !== undefined) this.faults.sharedWorkspace += 1;
      if (m.priority !== undefined) this.faults.priority += 1;
      if (m.startWithinMs !== undefined) this.faults.startBy += 1;
      if (m.steerDeadlineMs !== undefined) this.faults.steerDeadline += 1;
      if (result.status === 'fulfilled') {
        this.monitor.accepted(result.value);
        if (result.value.outcome === 'steered') this.counts.steered += 1;
        this.probe.onSubmit?.(m.runId, this.base.now(), result.value.outcome === 'steered' ? 'steered' : 'run');
      } else if (isEngineError(result.reason) && result.reason.code === 'lane_full') {
        this.monitor.rejected(m.runId);
        this.probe.onSubmit?.(m.runId, this.base.now(), 'rejected');
        this.faults.laneOverflow += 1;
        this.counts.rejected += 1;
      } else {
        throw result.reason;
      }
    }
  }

  /** The engine dies without closing; a new one recovers from the same store. */
  private async crash(): Promise<void> {
    this.faults.crash += 1;
    this.abandon(this.current);
    this.monitor.restarted();
    if (this.scenario.store === 'lowdb') {
      // What was written before the crash is on disk; the next engine reads it back from there.
      await this.store.close();
      this.store = await this.openStore();
    }
    this.current = await this.startEngine();
    await this.settle();
    this.checkStep();
    const engine = this.current.engine;
    this.collect(this.monitor.checkRecovery((runId) => engine.status(runId) !== undefined));
  }

  // -------------------------------------------------------------------------------------
  // Checks

  /** After every step: what the monitor found on the way, and the limiter against the runs running. */
  private checkStep(): void {
    this.simChecks += 2;
    const count = this.monitor.violationCount();
    if (count > this.reported) {
      this.collect(this.monitor.violations().slice(this.reported));
      this.reported = count;
    }
    if (this.engineErrors.length > 0) {
      for (const message of this.engineErrors.splice(0)) this.violate('engine-error', message);
    }
    const snapshot = this.current.engine.snapshot();
    this.probe.onStep?.(snapshot, this.base.now());
    const running = this.monitor.runningRuns();
    if (snapshot.global.inUse !== running.length) {
      this.violate(
        'permits',
        `the limiter has ${snapshot.global.inUse} permits in use, but ${running.length} runs are running (${running.join(', ')})`,
      );
      return;
    }
    const byAgent = new Map<string, number>();
    for (const runId of running) {
      const agent = this.agentOf.get(runId) ?? '?';
      byAgent.set(agent, (byAgent.get(agent) ?? 0) + 1);
    }
    for (const [agent, { inUse }] of Object.entries(snapshot.perAgent)) {
      if ((byAgent.get(agent) ?? 0) !== inUse) {
        this.violate(
          'permits',
          `agent ${agent} holds ${inUse} permits, but ${byAgent.get(agent) ?? 0} of its runs are running`,
        );
      }
    }
  }

  /** At the end, read back what the store kept: every run's log is seq 1..n, all of it, terminal last. */
  private async checkStoredLogs(): Promise<void> {
    for (const [runId, count] of this.appended) {
      this.simChecks += 2;
      const events = await this.current.store.readEvents(runId);
      const gap = events.findIndex((e, i) => e.seq !== i + 1);
      if (events.length !== count || gap >= 0) {
        this.violate(
          'run-seq',
          `the store holds ${events.length} events of run ${runId} (seq ${events.map((e) => e.seq).join(',')}), ${count} were appended`,
        );
      } else if (!isTerminalEvent(events.at(-1)!)) {
        this.violate('terminal-last', `the stored log of run ${runId} ends with ${events.at(-1)!.type}`);
      }
      if (this.failed) return;
    }
  }

  private violate(invariant: InvariantName, detail: string): void {
    this.collect([{ invariant, detail }]);
  }

  private collect(found: Violation[]): void {
    for (const v of found) this.violations.push({ ...v, atMs: this.base.now(), afterOps: this.applied.length });
  }

  private report(): SimulationReport {
    return {
      seed: this.scenario.seed,
      runs: this.scenario.runs,
      completed: this.counts.completed,
      cancelled: this.counts.cancelled,
      failed: this.counts.failed,
      faults: { ...this.faults },
      checks: this.monitor.checksPerformed() + this.simChecks,
      violations: this.violations,
      virtualMs: this.base.now(),
      steps: this.steps,
      steered: this.counts.steered,
      rejected: this.counts.rejected,
      claimWaits: this.counts.claimWaits,
    };
  }
}

/** One simulation; `dropped` leaves out operations of the scenario by index (shrinking). */
export async function runOnce(
  options: SimulateOptions,
  tempRoot: string,
  dropped: ReadonlySet<number> = new Set(),
): Promise<SimulationRun> {
  // Each simulation gets a fresh directory: a lowdb store must start empty.
  const scenario = buildScenario(options, mkdtempSync(join(tempRoot, 'run-')));
  if (dropped.size > 0) scenario.ops = scenario.ops.filter((_, i) => !dropped.has(i));
  return new Simulation(scenario).run();
}

/** One simulation of a scenario built elsewhere (simulateDeployment), watched by `probe`. */
export function runScenario(scenario: Scenario, probe: SimulationProbe): Promise<SimulationRun> {
  return new Simulation(scenario, probe).run();
}

/** The calls of a batch that repeat an earlier one: same tool, same arguments (as the engine's planner finds them). */
function repeatsOf(toolCalls: readonly { id: string; name: string; args: unknown }[]): Set<string> {
  const seen = new Set<string>();
  const repeats = new Set<string>();
  for (const call of toolCalls) {
    const key = `${call.name}\u0000${canonicalJson(call.args)}`;
    if (seen.has(key)) repeats.add(call.id);
    seen.add(key);
  }
  return repeats;
}
