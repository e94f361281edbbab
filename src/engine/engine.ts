/*
 * The engine's facade: the public API (submit … close) as short methods over its parts —
 * the run table, the ledger, the steers, one host per statechart, recovery — and the wiring
 * between them. Machines decide; the hosts do; this file only connects (docs/architecture.md).
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import type { Config, PartialConfig } from '../config/index.js';
import {
  ApprovalDecisionSchema,
  SessionGrants,
  type ApprovalDecision,
  type ApprovalGate,
  type ApprovalRequest,
} from '../approval/index.js';
import { appliedConfig, ConfigError, diffConfig, mergeConfig } from '../config/index.js';
import { InProcessClaimRegistry, type ClaimRegistry } from '../concurrency/index.js';
import type { Clock } from '../core/clock.js';
import type { EngineSnapshot } from '../core/engine-snapshot.js';
import type { SubmitResult } from '../core/submit-result.js';
import { EngineError } from '../core/errors.js';
import type { RunEvent } from '../core/run-events.js';
import type { RunRequest } from '../core/run-request.js';
import type { RunResult, RunStatus } from '../core/run-status.js';
import { Conversations } from '../harness/conversation.js';
import type { ModelProvider } from '../model/types.js';
import type { RunPage, RunQuery, Store } from '../store/types.js';
import type { AnyTool } from '../tools/tool.js';
import type { ToolServiceOptions } from '../tools/tool-service.js';
import { Admission } from './admission.js';
import { BusyMessages } from './busy-messages.js';
import { ApprovalListeners, approvalGateFor, type ApprovalRequestListener } from './approvals.js';
import { NO_OBSERVER, type EngineObserver } from './engine-observer.js';
import { EventLog } from './event-log.js';
import { openEventStream, type EventStream, type EventStreamFilter } from './event-stream.js';
import { InspectionHub, type InspectionListener } from './inspection.js';
import type { Limiter, SessionOwnership } from './ownership.js';
import { ActHost } from './act.host.js';
import { AsyncEffects } from './async-effects.js';
import { ModelTurns } from './model-turns.js';
import { recover, type Recovered, type RecoveryDeps } from './recovery.js';
import { RunLedger } from './run-ledger.js';
import { RunLookup } from './run-lookup.js';
import { RunHost } from './run.host.js';
import { RunTable, type WaitOptions } from './run-table.js';
import { RunTools } from './run-tools.js';
import { runTreeCanceller, type CancelRunTree } from './run-tree.js';
import { SessionHandover } from './session-handover.js';
import { SessionHost } from './session.host.js';
import { Steers } from './steers.js';
import { LimiterHost } from './limiter.host.js';
import { LaneOperations } from './lane-operations.js';
import type { LaneChangeResult, LaneListing } from '../core/lane.js';

export type { EngineSnapshot, SubmitResult };

export interface EngineDeps {
  config: Config;
  store: Store;
  clock: Clock;
  models: Map<string, ModelProvider>;
  tools: Map<string, AnyTool>;
  /** Tools only the runs of one session see, over the engine's (createEngine's sessionTools). */
  sessionTools?: (sessionId: string) => readonly AnyTool[];
  rewriteArguments?: ToolServiceOptions['rewriteArguments'];
  approver?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  inspect?: (event: InspectionEvent) => void;
  onError?: (error: unknown) => void;
  nodes?: ToolServiceOptions['nodes'];
  /** Shares sessions and permits with other processes (src/cluster/); without it the engine is alone. */
  ownership?: SessionOwnership;
  /** What telemetry learns beyond the event log (createEngine's observer). */
  observer?: Partial<EngineObserver>;
  /** Where tool calls hold their claims against other runs' calls (default: this process only). */
  claims?: ClaimRegistry;
}

export class Engine {
  private config: Config;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly onError: (error: unknown) => void;
  private readonly log: EventLog;
  private readonly inspection: InspectionHub;
  private readonly grants: SessionGrants;
  private readonly approvals: ApprovalGate;
  private readonly approvalListeners: ApprovalListeners;
  private readonly table: RunTable;
  private readonly ledger: RunLedger;
  private readonly limiter: Limiter;
  private readonly sessions: SessionHost;
  private readonly admission: Admission;
  private readonly lookup: RunLookup;
  private readonly cancelRunTree: CancelRunTree;
  private readonly recovery: RecoveryDeps;
  private readonly laneOps: LaneOperations;
  /** In a cluster (src/cluster/): takes sessions over, lets idle ones go, drops the ones it lost. */
  readonly handover: SessionHandover;
  private readonly closeHooks: (() => Promise<void> | void)[] = [];
  private closed = false;
  /** Shutting down: nothing new is accepted, nothing waiting starts. */
  private draining = false;

  constructor(deps: EngineDeps) {
    // Each part is built from parts built before it; what parts tell back is connected last.
    this.config = deps.config;
    const { store, clock, models, tools, ownership } = deps;
    this.store = store;
    this.clock = clock;
    const onError = (this.onError = deps.onError ?? ((error) => console.error('[switchyard]', error)));
    const config = () => this.config;
    const observer: EngineObserver = { ...NO_OBSERVER, ...deps.observer };
    const settleInBackground = (result: void | Promise<void>) => void result?.catch(onError);
    const inspection = (this.inspection = new InspectionHub(deps.inspect));
    const log = (this.log = new EventLog(store, clock, onError));
    const conversations = new Conversations(store);
    const table = (this.table = new RunTable(clock, () => this.config.sandbox.workspace_root));
    this.grants = new SessionGrants({
      onChange: (sessionId, fingerprints) => settleInBackground(store.saveGrants?.(sessionId, fingerprints)),
    });
    const ledger = (this.ledger = new RunLedger({
      ...{ store, log, clock, table, conversations, config, onError, observer },
      ...(ownership ? { nodeId: ownership.nodeId } : {}),
    }));
    this.approvalListeners = new ApprovalListeners(onError);
    this.approvals = approvalGateFor({
      ...{ clock, config, grants: this.grants, table, ledger, listeners: this.approvalListeners },
      ...(deps.approver ? { approver: deps.approver } : {}),
    });
    const limiter = (this.limiter = this.buildLimiter(ownership));
    const sessions = (this.sessions = new SessionHost({ clock, store, log, inspection, config, settleInBackground }));
    this.cancelRunTree = runTreeCanceller(table, sessions);
    const closing = () => this.closed;
    const steers = new Steers({ table, sessions, store, clock, settleInBackground, closing });
    const busy = new BusyMessages({ table, ledger, steers, store });
    const lookup = (this.lookup = new RunLookup(table, steers, store, log));
    const admission = (this.admission = new Admission({
      ...{ table, sessions, steers, store, models, config, clock, limiter, busy },
      assertOpen: () => {
        this.assertOpen();
        if (this.draining)
          throw new EngineError(
            'closed',
            'the engine is shutting down and accepts no new messages; send it again once it is back',
          );
      },
      cancel: (runId, reason) => void this.cancel(runId, reason),
    }));
    const runTools = new RunTools({
      ...{ table, ledger, config, tools, approvals: this.approvals },
      ...(deps.sessionTools ? { sessionTools: deps.sessionTools } : {}),
      ...(deps.rewriteArguments ? { rewriteArguments: deps.rewriteArguments } : {}),
      ...(deps.nodes ? { nodes: deps.nodes } : {}),
      delegate: ownership
        ? (request) => ownership.delegate(request)
        : async (request) => lookup.wait((await admission.submit(request)).runId, {}),
      ...(ownership ? { ownership } : {}),
    });
    const claims = deps.claims ?? new InProcessClaimRegistry();
    const effects = new AsyncEffects(inspection);
    const act = new ActHost({ table, ledger, clock, config, tools: runTools, claims, observer, effects });
    const turns = new ModelTurns({
      ...{ table, ledger, conversations, models, tools: runTools, clock },
      ...(ownership ? { ownership } : {}),
    });
    const cancelRunTree = this.cancelRunTree;
    const runHost = new RunHost({
      ...{ table, ledger, act, turns, sessions, limiter, steers, inspection, clock, effects },
      engine: { closing, onError, cancelRunTree },
    });
    const laneOps = (this.laneOps = new LaneOperations({ table, ledger, sessions, steers, store, clock }));
    this.recovery = { store, log, grants: this.grants, table, ledger, sessions, steers, busy };
    const recovery = this.recovery;
    this.handover = new SessionHandover({ table, sessions, ledger, conversations, cancelRunTree, recovery });
    sessions.connect({
      admit: (runId, extra) => {
        admission.enter(runId);
        busy.admitting(runId, extra);
        runHost.start(runId);
      },
      // An arriving message, or one promoted from the lane (a run handle already).
      steer: (runId, intoRunId) => steers.deliver(admission.arrival(runId) ?? table.waitingMessage(runId), intoRunId),
      queued: (runId, position) => {
        admission.enter(runId);
        ledger.markQueued(runId, position, 'session_busy');
      },
      rejected: (runId, rejection) => busy.rejected(runId, rejection),
      cancelActive: (runId, reason, by) => {
        if (by !== undefined) busy.rolledBack(runId, by);
        cancelRunTree(runId, reason);
      },
      dropped: (runId, reason) => {
        admission.enter(runId);
        ledger.endQueued(runId, reason);
      },
      laneChanged: (runId, change, lane, intoRunId) => laneOps.changed(runId, change, lane, intoRunId),
    });
    inspection.connect(() => this.liveActors());
  }

  /** This process's limiter, or in a cluster the shared one; its answers go to the run's actor and the ledger. */
  private buildLimiter(ownership: SessionOwnership | undefined): Limiter {
    const { max_runs_global: maxGlobal, max_runs_per_agent: maxPerAgent, priority_weights } = this.config.execution;
    const limits = { maxGlobal, maxPerAgent, weights: priority_weights };
    const { table, ledger } = this;
    const handlers = {
      granted: (runId: string) => {
        // While shutting down a run waiting for permits stays queued for the next start.
        if (!this.draining) table.get(runId)?.actor?.send({ type: 'GRANTED' });
      },
      waiting: (runId: string, position: number) => ledger.markQueued(runId, position, 'limits'),
      released: (runId: string) => ledger.markReleased(runId),
    };
    return ownership
      ? ownership.limiter(handlers, limits, (runId) => table.get(runId)?.status.sessionId)
      : new LimiterHost(limits, this.clock, this.inspection, handlers);
  }

  /** Picks up where a previous engine on the same store stopped (createEngine calls it once). */
  recover(): Promise<Recovered> {
    return recover(this.recovery);
  }

  /**
   * Admits a message: started, queued or steered. Answers only once the decision is durable in
   * the store (a crash from then on loses nothing); a session's messages are decided in arrival order.
   */
  submit(raw: RunRequest): Promise<SubmitResult> {
    return this.admission.submit(raw);
  }

  /** The run's result once it is settled; for a steer's id, that of the run it went into. */
  wait(runId: string, options: WaitOptions = {}): Promise<RunResult> {
    return this.lookup.wait(runId, options);
  }

  events(filter: EventStreamFilter = {}): EventStream {
    return openEventStream(this.log, this.store, filter);
  }

  /** The run's whole event log, in seq order (for a steer's id: the log of the run it went into). */
  history(runId: string): Promise<RunEvent[]> {
    return this.lookup.history(runId);
  }

  /** The run's status, from memory or, for a run that finished before a restart, from the store. */
  getRun(runId: string): Promise<RunStatus | undefined> {
    return this.lookup.getRun(runId);
  }

  /** A page of stored runs, newest first (the contract: Store.queryRuns in src/store/types.ts). */
  async queryRuns(query: RunQuery): Promise<RunPage> {
    try {
      return await this.store.queryRuns(query);
    } catch (error) {
      if (error instanceof RangeError) throw new EngineError('invalid_request', error.message, { query });
      throw error;
    }
  }

  async cancel(runId: string, reason = 'cancelled'): Promise<boolean> {
    const handle = this.table.get(runId);
    if (!handle || handle.ended) return false;
    if (handle.actor) {
      this.cancelRunTree(runId, reason);
      return true;
    }
    this.sessions.cancelQueued(handle.status.sessionId, runId, reason);
    return handle.ended;
  }

  async stopSession(sessionId: string): Promise<{ cancelled?: string; purged: number }> {
    return this.sessions.stop(sessionId);
  }

  /** The session's lane: its active run and the messages waiting behind it, front first. */
  lane(sessionId: string): LaneListing {
    return this.laneOps.list(sessionId);
  }

  /**
   * Takes a waiting message out of its lane: it ends `cancelled` (reason `withdrawn`). Like the
   * other lane operations it answers once the change is durable, and EngineError `not_waiting`
   * (details: its state now) when the message is no longer waiting.
   */
  withdraw(runId: string): Promise<LaneChangeResult> {
    return this.laneOps.withdraw(runId);
  }

  /** Moves a waiting message to a 1-based place in its lane (the others keep their order). */
  moveInLane(runId: string, position: number): Promise<LaneChangeResult> {
    return this.laneOps.move(runId, position);
  }

  /** Makes a waiting message a steer of its session's active run (EngineError `not_steerable` if it cannot be). */
  promoteToSteer(runId: string): Promise<LaneChangeResult> {
    return this.laneOps.promote(runId);
  }

  /** Replaces a waiting message's text (only its text). */
  editWaiting(runId: string, patch: { input: string }): Promise<LaneChangeResult> {
    return this.laneOps.edit(runId, patch);
  }

  status(runId: string): RunStatus | undefined {
    return this.lookup.status(runId);
  }

  reconfigure(partial: PartialConfig): { applied: string[]; restartRequired: string[] } {
    let next: Config;
    try {
      next = mergeConfig(this.config, partial);
    } catch (error) {
      if (error instanceof ConfigError)
        throw new EngineError('invalid_config', error.message, { issues: error.issues });
      throw error;
    }
    const diff = diffConfig(this.config, next);
    // Restart-only keys keep their value until the restart.
    this.config = appliedConfig(this.config, next);
    const exec = next.execution;
    if (diff.changed.some((key) => key === 'execution.max_runs_global' || key === 'execution.max_runs_per_agent')) {
      // Announced first, so runs the raise admits never appear before the limit that let them in.
      this.log.engineEvent('limits.changed', {
        max_runs_global: exec.max_runs_global,
        max_runs_per_agent: exec.max_runs_per_agent,
      });
    }
    if (
      diff.changed.some((key) => key.startsWith('execution.max_runs_') || key.startsWith('execution.priority_weights'))
    ) {
      this.limiter.reconfigure(exec.max_runs_global, exec.max_runs_per_agent, exec.priority_weights);
    }
    this.sessions.reconfigure();
    if (diff.changed.length > 0) {
      this.log.engineEvent('config.reloaded', { applied: diff.applied, restartRequired: diff.restartRequired });
    }
    return { applied: diff.applied, restartRequired: diff.restartRequired };
  }

  /** Answers a pending approval; false when it is unknown or already decided. */
  respondApproval(approvalId: string, decision: ApprovalDecision): boolean {
    const parsed = ApprovalDecisionSchema.safeParse(decision);
    if (!parsed.success) {
      throw new EngineError(
        'invalid_request',
        `decision must be one of allow_once, allow_session, deny; got ${JSON.stringify(decision)}`,
      );
    }
    return this.approvals.respond(approvalId, parsed.data);
  }

  /** Calls `listener` each time a tool call starts waiting for approval; returns the unsubscribe function. */
  onApprovalRequested(listener: ApprovalRequestListener): () => void {
    return this.approvalListeners.add(listener);
  }

  /** Approvals waiting for an answer, oldest first. */
  pendingApprovals(): ApprovalRequest[] {
    return this.approvals.pending();
  }

  /** Streams XState inspection events of every actor until the returned function is called. */
  inspect(listener: InspectionListener): () => void {
    return this.inspection.subscribe(listener);
  }

  /** A snapshot event per live actor, as it is now (what an inspector that arrives late starts from). */
  inspectionSnapshot(): InspectionEvent[] {
    return this.inspection.current();
  }

  currentConfig(): Config {
    return this.config;
  }

  snapshot(): EngineSnapshot {
    return { ...this.limiter.figures(), running: [...this.table.running], sessions: this.sessions.overview() };
  }

  /** Runs `hook` when the engine closes (after runs are cancelled, before the store closes). */
  onClose(hook: () => Promise<void> | void): void {
    this.closeHooks.push(hook);
  }

  /**
   * The start of a graceful shutdown: no new message is accepted and no waiting one starts
   * (lanes and runs waiting for permits stay queued in the store for the next start); running
   * runs go on. Pair it with waiting for `snapshot().running` to empty, then close().
   */
  stopAdmitting(): void {
    this.draining = true;
    this.sessions.stopAdmitting();
  }

  /**
   * Cancels the runs still running (their logs end `cancelled`, reason "engine closed"); what
   * waits — in a lane, for permits, pending steers — stays queued in the store for the next
   * start. Then flushes and closes the store.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.stopAdmitting();
    this.closed = true;
    for (const handle of [...this.table.handles()]) {
      if (!handle.actor || handle.ended) continue;
      if (handle.status.state === 'running') this.cancelRunTree(handle.status.runId, 'engine closed');
      // Waiting for permits: stopped without a word, so its record stays queued for recovery.
      else handle.actor.stop();
    }
    this.sessions.stopAll();
    for (const handle of this.table.handles()) {
      if (!handle.settled) {
        for (const resolve of handle.waiters.splice(0))
          resolve({ runId: handle.status.runId, state: 'cancelled', reason: 'engine closed' });
      }
    }
    this.limiter.stop();
    for (const hook of this.closeHooks.splice(0)) await Promise.resolve(hook()).catch(this.onError);
    await this.log.settled();
    await this.store.flush();
    await this.store.close();
  }

  private *liveActors(): Iterable<AnyActorRef> {
    if (this.limiter.ref) yield this.limiter.ref;
    yield* this.sessions.actors();
    for (const handle of this.table.handles()) if (handle.actor) yield handle.actor;
  }

  private assertOpen(): void {
    if (this.closed) throw new EngineError('closed', 'the engine is closed; create a new one');
  }
}
