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
  type SessionOwnership,
  isTerminalEvent,
  type Engine,
  type EventStream,
  type RunEvent,
} from '../engine/index.js';
import { scriptedModel, type ScriptTurn } from '../model/index.js';
import { LowdbStore } from '../store/lowdb-store.js';
import { MemoryStore } from '../store/memory-store.js';
import type { RunRecord, Store } from '../store/types.js';
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
import { Random } from './random.js';
import { SharedLimiter } from './shared-limiter.js';

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
  /** `rejected` names why: `lane_full`, or `session_busy` (busyPolicy reject). `process`: where it went (a cluster). */
  onSubmit?(
    runId: string,
    atMs: number,
    answer: 'run' | 'steered' | 'lane_full' | 'session_busy',
    process?: string,
  ): void;
  /** `processes`: with several, each one's running runs and sessions (a process that is down has none). */
  onStep?(snapshot: EngineSnapshot, atMs: number, processes?: ProcessFigures[]): void;
  /** Run `carrier` started carrying the waiting `collect` messages `merged` (not itself). */
  onCollected?(carrier: string, merged: readonly string[], atMs: number): void;
  /** A cluster's process `process` died (and was started again at once). */
  onCrash?(process: string, atMs: number): void;
  /** Process `to` took session `sessionId` over from process `from`, which died. */
  onTakeover?(from: string, to: string, sessionId: string, atMs: number): void;
}

/** One process of a simulated cluster at a step. */
export interface ProcessFigures {
  /** `p1` … `pN`: the slot, whichever life of it runs now. */
  process: string;
  running: number;
  sessions: number;
}

/** One engine and what belongs to it alone: its view of the clock and the store, its tool gate. */
class Incarnation {
  engine!: Engine;
  /** In a cluster: its slot (`p1` …) and this life's node id (`p1`, then `p1.2` after a crash). */
  process = 'p1';
  nodeId = 'p1';
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
    options: {
      earlyAnswer: boolean;
      shared: boolean;
      onEvent: (incarnation: Incarnation, event: RunEvent) => void;
      onRecord: (incarnation: Incarnation, record: RunRecord) => void;
    },
  ) {
    this.clock = new IncarnationClock(base);
    this.store = new CrashableStore(store, (event) => options.onEvent(this, event), {
      lyingDurable: options.earlyAnswer,
      shared: options.shared,
      onRecord: (record) => options.onRecord(this, record),
    });
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
  /** The engines running now: one, or a cluster's processes in slot order. */
  private alive: Incarnation[] = [];
  private readonly processes: number;
  private sharedLimiter: SharedLimiter | undefined;
  /** A cluster: which process owns each session (none: its owner died and nobody took it over yet). */
  private readonly owners = new Map<string, Incarnation>();
  /** A cluster: sessions of dead processes, taken over at `at` (their leases ran out). */
  private takeovers: { at: number; from: Incarnation; sessions: string[] }[] = [];
  /** A cluster: messages for a session whose owner died, submitted once it is taken over. */
  private readonly held = new Map<string, MessagePlan[]>();
  /** A cluster: the process each run started on. */
  private readonly startedOn = new Map<string, Incarnation>();
  private readonly lives = new Map<string, number>();
  /** A cluster: the processes alive when a process died (its sessions go to them). */
  private readonly survivorsOf = new Map<Incarnation, Incarnation[]>();
  /** Runs seen carrying collect messages (a record is saved many times). */
  private readonly carriers = new Set<string>();
  /** collect messages merged into another run: their log ends with run.queued, their outcome is the carrier's. */
  private readonly merged = new Set<string>();
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
    this.processes = Math.max(1, scenario.processes ?? 1);
    this.limits = {
      maxGlobal: scenario.config.execution.max_runs_global,
      maxPerAgent: scenario.config.execution.max_runs_per_agent,
    };
    this.monitor = new InvariantMonitor({
      limits: () => this.limits,
      footprint: ({ tool, args, declared }) => trueFootprint(tool, args, declared),
    });
  }

  /** The single engine (a cluster's first process). */
  private get current(): Incarnation {
    return this.alive[0]!;
  }

  private get cluster(): boolean {
    return this.processes > 1;
  }

  async run(): Promise<SimulationRun> {
    this.store = await this.openStore();
    if (this.cluster) {
      const exec = this.config.execution;
      this.sharedLimiter = new SharedLimiter(
        { maxGlobal: exec.max_runs_global, maxPerAgent: exec.max_runs_per_agent },
        new IncarnationClock(this.base),
      );
    }
    for (let slot = 1; slot <= this.processes; slot++) this.alive.push(await this.startEngine(`p${slot}`));
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
    if (this.failed) for (const incarnation of this.alive) this.abandon(incarnation);
    else await this.closeEngines();
    this.sharedLimiter?.stop();
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

  private async startEngine(process: string): Promise<Incarnation> {
    const incarnation = new Incarnation(this.base, this.store, {
      earlyAnswer: this.scenario.earlyAnswer,
      shared: this.cluster,
      onEvent: (inc, event) => this.onEvent(inc, event),
      onRecord: (inc, record) => this.onRecord(inc, record),
    });
    const life = (this.lives.get(process) ?? 0) + 1;
    this.lives.set(process, life);
    incarnation.process = process;
    incarnation.nodeId = life === 1 ? process : `${process}.${life}`;
    const { clock, gate, store } = incarnation;
    incarnation.engine = await createEngine({
      config: this.config,
      store,
      clock,
      ...(this.cluster ? { ownership: this.ownershipOf(incarnation) } : {}),
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

  /**
   * A cluster process's port to the others (src/engine/ownership.ts): the shared limiter, and
   * leases that are the simulation's owner table — it acts for a session while it owns it.
   */
  private ownershipOf(incarnation: Incarnation): SessionOwnership {
    return {
      nodeId: incarnation.nodeId,
      limiter: (handlers, _limits, sessionOf) => this.sharedLimiter!.for(incarnation.nodeId, handlers, sessionOf),
      mayAct: (sessionId) => incarnation.alive && this.owners.get(sessionId) === incarnation,
      delegate: async (request) => {
        const owner = await this.ownerOf(request.sessionId);
        if (owner === undefined) throw new Error(`simulator: session ${request.sessionId} has no owner to delegate to`);
        return owner.engine.wait((await owner.engine.submit(request)).runId);
      },
    };
  }

  private async closeEngines(): Promise<void> {
    for (const incarnation of this.alive) {
      incarnation.stream?.close();
      await incarnation.engine.close();
      incarnation.alive = false;
      incarnation.clock.stop();
    }
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
        this.startedOn.set(event.runId, incarnation);
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

  /** A carrier of `collect` messages is saved with them in `carries` as it starts: they answer with its outcome. */
  private onRecord(incarnation: Incarnation, record: RunRecord): void {
    if (!incarnation.alive || record.carries === undefined || record.request.busyPolicy !== 'collect') return;
    if (this.carriers.has(record.runId)) return;
    this.carriers.add(record.runId);
    const merged = record.carries.filter((id) => id !== record.runId);
    if (merged.length === 0) return;
    for (const id of merged) this.merged.add(id);
    this.monitor.collected(record.runId, record.carries);
    this.probe.onCollected?.(record.runId, merged, this.base.now());
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
    for (;;) {
      await tick();
      const busy = this.alive.filter(({ gate, store }) => gate.inFlight > 0 || store.inFlight > 0);
      if (busy.length > 0) {
        for (const { gate, store } of busy) {
          await gate.arrivals(ARRIVAL_FAIL_SAFE_MS);
          await store.idle();
        }
        continue;
      }
      for (const { gate } of this.alive) {
        const strays = gate.takeStrays();
        if (strays.length > 0) throw new Error(`simulator: tool calls ${strays.join(', ')} reached a tool unannounced`);
      }
      const waiting = this.alive.filter(({ gate }) => gate.waiting > 0);
      if (waiting.length === 0) return;
      for (const { gate } of waiting) gate.releaseArrived();
    }
  }

  /** The next instant something is due: a timer of any engine, or a takeover of a dead process's sessions. */
  private nextDue(): number | undefined {
    let next = this.takeovers[0]?.at;
    for (const { clock } of this.alive) {
      const due = clock.nextDue();
      if (due !== undefined && (next === undefined || due < next)) next = due;
    }
    return next;
  }

  /** Fires the timers due at `at` (and everything they set off), then checks. */
  private async stepTo(at: number): Promise<void> {
    this.base.set(Math.max(at, this.base.now()));
    const takeover = this.takeovers[0];
    if (takeover !== undefined && takeover.at <= this.base.now()) {
      this.takeovers.shift();
      await this.takeOver(takeover);
    }
    await this.settle();
    this.steps += 1;
    this.checkStep();
  }

  /** Moves virtual time to `at`, stepping through every instant at which timers are due. */
  private async advanceTo(at: number): Promise<void> {
    for (;;) {
      const next = this.nextDue();
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
      const next = this.nextDue();
      if (next === undefined || next > limit) {
        const unfinished = this.monitor.unfinished();
        const snapshot = this.snapshot();
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
    if (this.takeovers.length > 0 || this.held.size > 0) return false;
    const s = this.snapshot();
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

  private async submit(all: MessagePlan[]): Promise<void> {
    // In a cluster each message goes to its session's owner; one whose owner died waits for the takeover.
    const messages: MessagePlan[] = [];
    const to: Incarnation[] = [];
    for (const m of all) {
      const owner = this.cluster ? await this.ownerOf(m.sessionId) : this.current;
      if (owner === undefined) this.held.set(m.sessionId, [...(this.held.get(m.sessionId) ?? []), m]);
      else {
        messages.push(m);
        to.push(owner);
      }
    }
    // All in one tick, as a burst of clients would.
    const results = await Promise.allSettled(
      messages.map((m, i) =>
        to[i]!.engine.submit({
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
      const process = this.cluster ? to[i]!.process : undefined;
      if (result.status === 'fulfilled') {
        this.monitor.accepted(result.value);
        if (result.value.outcome === 'steered') this.counts.steered += 1;
        this.probe.onSubmit?.(
          m.runId,
          this.base.now(),
          result.value.outcome === 'steered' ? 'steered' : 'run',
          process,
        );
      } else if (
        isEngineError(result.reason) &&
        (result.reason.code === 'lane_full' || result.reason.code === 'session_busy')
      ) {
        // Nothing of a refused message is stored: lane_full, or session_busy for busyPolicy reject.
        this.monitor.rejected(m.runId);
        this.probe.onSubmit?.(m.runId, this.base.now(), result.reason.code, process);
        if (result.reason.code === 'lane_full') this.faults.laneOverflow += 1;
        this.counts.rejected += 1;
      } else {
        throw result.reason;
      }
    }
  }

  /** The engine dies without closing; a new one recovers from the same store. */
  private async crash(): Promise<void> {
    if (this.cluster) return this.crashProcess();
    this.faults.crash += 1;
    this.abandon(this.current);
    this.monitor.restarted();
    if (this.scenario.store === 'lowdb') {
      // What was written before the crash is on disk; the next engine reads it back from there.
      await this.store.close();
      this.store = await this.openStore();
    }
    this.alive = [await this.startEngine(this.current.process)];
    await this.settle();
    this.checkStep();
    const engine = this.current.engine;
    this.collect(this.monitor.checkRecovery((runId) => engine.status(runId) !== undefined));
  }

  // -------------------------------------------------------------------------------------
  // A cluster of processes

  /**
   * The process that owns the session: a session nobody owned yet goes to a process drawn
   * from the seed (a load balancer's pick) and is adopted there, as a cluster node takes a
   * session over before its first message; undefined while its owner is dead and its lease
   * has not run out.
   */
  private async ownerOf(sessionId: string): Promise<Incarnation | undefined> {
    const owner = this.owners.get(sessionId);
    if (owner !== undefined) return owner;
    if (this.takeovers.some((t) => t.sessions.includes(sessionId))) return undefined;
    const picked = this.alive[Random.derive(this.scenario.seed, 'route', sessionId).int(0, this.alive.length - 1)]!;
    this.owners.set(sessionId, picked);
    await picked.engine.handover.adopt(sessionId);
    return picked;
  }

  /**
   * One process dies without closing: its timers stop, its writes stop, it hears nothing more
   * from the limiter. A supervisor starts it again at once (a new node id, owning nothing);
   * its sessions are taken over by the others once their leases run out ([cluster] lease_seconds).
   */
  private async crashProcess(): Promise<void> {
    this.faults.crash += 1;
    const victim =
      this.alive[Random.derive(this.scenario.seed, 'victim', this.faults.crash).int(0, this.alive.length - 1)]!;
    this.abandon(victim);
    this.sharedLimiter!.died(victim.nodeId);
    this.monitor.restarted((runId) => this.startedOn.get(runId) === victim);
    const sessions = [...this.owners].filter(([, owner]) => owner === victim).map(([sessionId]) => sessionId);
    for (const sessionId of sessions) this.owners.delete(sessionId);
    const survivors = this.alive.filter((i) => i !== victim);
    this.takeovers.push({ at: this.base.now() + (this.scenario.leaseMs ?? 0), from: victim, sessions });
    this.takeovers.sort((a, b) => a.at - b.at);
    this.probe.onCrash?.(victim.process, this.base.now());
    const replacement = await this.startEngine(victim.process);
    this.alive = [...survivors, replacement].sort((a, b) =>
      a.process.localeCompare(b.process, 'en', { numeric: true }),
    );
    this.survivorsOf.set(victim, survivors);
  }

  /**
   * The dead process's leases ran out: each of its sessions is taken over by one of the
   * processes that survived it, in turn — the new owner recovers the session from the store
   * (recoverSession), then what the dead runs held in the limiter is given back — and the messages
   * held for them are submitted there.
   */
  private async takeOver({ from, sessions }: { from: Incarnation; sessions: string[] }): Promise<void> {
    const candidates = (this.survivorsOf.get(from) ?? []).filter((i) => i.alive);
    const to = candidates.length > 0 ? candidates : this.alive;
    this.survivorsOf.delete(from);
    for (const [k, sessionId] of sessions.entries()) {
      const owner = to[k % to.length]!;
      this.owners.set(sessionId, owner);
      await owner.engine.handover.adopt(sessionId);
      // As the cluster does (session-router.ts): recovered first — the dead runs have ended — then their permits go.
      this.sharedLimiter!.releaseSession(from.nodeId, sessionId);
      this.probe.onTakeover?.(from.process, owner.process, sessionId, this.base.now());
    }
    await this.settle();
    // Checked once no process's sessions wait for a takeover: until then their runs are orphans nobody ended yet.
    if (this.takeovers.length === 0)
      this.collect(this.monitor.checkRecovery((runId) => this.alive.some((i) => i.engine.status(runId) !== undefined)));
    const held = sessions.flatMap((sessionId) => this.held.get(sessionId) ?? []);
    for (const sessionId of sessions) this.held.delete(sessionId);
    if (held.length > 0) await this.submit(held);
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
    const snapshot = this.snapshot();
    this.probe.onStep?.(snapshot, this.base.now(), this.cluster ? this.processFigures() : undefined);
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

  /** The engine's snapshot; a cluster's: the shared limiter's figures, every live process's runs and sessions. */
  private snapshot(): EngineSnapshot {
    if (!this.cluster) return this.current.engine.snapshot();
    const figures = this.sharedLimiter!.figures();
    const all = this.alive.map((i) => i.engine.snapshot());
    return {
      global: figures.global,
      perAgent: figures.perAgent,
      waiting: figures.waiting,
      running: all.flatMap((s) => s.running),
      sessions: all.flatMap((s) => s.sessions),
    };
  }

  private processFigures(): ProcessFigures[] {
    return this.alive.map((i) => {
      const s = i.engine.snapshot();
      return { process: i.process, running: s.running.length, sessions: s.sessions.length };
    });
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
      } else if (!isTerminalEvent(events.at(-1)!) && !this.merged.has(runId)) {
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
