/*
 * The engine: wires the supervisor (limiter), one actor per busy session and one per run,
 * carries out what they decide, and keeps the ordered event log. Machines decide; this file
 * does (admission, steering, cancellation, persistence, publication).
 */
import { createHash } from 'node:crypto';
import { resolve as resolvePath, join } from 'node:path';
import { assign, createActor, fromPromise, type Actor, type AnyActorRef, type InspectionEvent } from 'xstate';
import { z } from 'zod';
import { actMachine, type ActOutput } from '../../machines/act.machine.js';
import type { ModelTurnInput, PendingSteer, RunOutcome } from '../../machines/run.machine.js';
import { runMachine } from '../../machines/run.machine.js';
import type { SessionEmitted, SessionLimits } from '../../machines/session.machine.js';
import { sessionMachine } from '../../machines/session.machine.js';
import type { SupervisorEmitted } from '../../machines/supervisor.machine.js';
import { toolCallMachine, type ToolCallOutcome } from '../../machines/tool-call.machine.js';
import { supervisorMachine } from '../../machines/supervisor.machine.js';
import type { Config, PartialConfig } from '../config/index.js';
import { ApprovalDecisionSchema, ApprovalGate, SessionGrants, type ApprovalDecision, type ApprovalRequest } from '../approval/index.js';
import { appliedConfig, ConfigError, diffConfig, mergeConfig } from '../config/index.js';
import { Conversations } from '../harness/conversation.js';
import { planBatch } from '../harness/batch-plan.js';
import { runModelTurn } from '../harness/model-turn.js';
import type { ModelProvider, ToolSpec } from '../model/types.js';
import { sandboxSettings } from '../sandbox/sandbox-settings.js';
import type { RunRecord, Store } from '../store/types.js';
import { ToolError, type AnyTool, type DelegatedRunResult } from '../tools/tool.js';
import { ToolService, type ToolServiceOptions } from '../tools/tool-service.js';
import { nowOf, type Clock } from './clock.js';
import { EngineError } from './errors.js';
import { EventLog } from './event-log.js';
import { InspectionHub, type InspectionListener } from './inspection.js';
import { openEventStream, type EventStream, type EventStreamFilter } from './event-stream.js';
import type { RunEvent, RunEventData, RunEventType } from './run-events.js';
import { isTerminalState, recordOf, resultOf, type RunHandle, type RunResult, type RunStatus } from './run-handle.js';
import { admitRequest, type AdmittedRequest, type RunRequest } from './run-request.js';

export interface SubmitResult {
  runId: string;
  sessionId: string;
  outcome: 'started' | 'queued' | 'steered';
  position?: number;
  intoRunId?: string;
}

export interface EngineSnapshot {
  global: { inUse: number; max: number };
  perAgent: Record<string, { inUse: number; max: number }>;
  waiting: number;
  running: string[];
  sessions: { sessionId: string; activeRunId?: string; laneDepth: number }[];
}

export interface EngineDeps {
  config: Config;
  store: Store;
  clock: Clock;
  models: Map<string, ModelProvider>;
  tools: Map<string, AnyTool>;
  rewriteArguments?: ToolServiceOptions['rewriteArguments'];
  approver?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  inspect?: (event: InspectionEvent) => void;
  onError?: (error: unknown) => void;
  nodes?: ToolServiceOptions['nodes'];
}

type SessionActor = Actor<typeof sessionMachine>;

/** Decisions the session and the limiter announce while a submit is being handled. */
interface SubmitCapture {
  runId: string;
  decision?: SessionEmitted;
  limitsPosition?: number;
}

const MAX_FOLLOW_UPS = 2;
/** Tool results that mean a required action did not happen: the run summary lists them. */
const REFUSALS = new Set(['approval_denied', 'approval_unavailable', 'command_blocked']);
/** Finished runs kept for the synchronous status(); older ones are read from the store. */
const FINISHED_RUNS_KEPT = 10_000;

export class Engine {
  private config: Config;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly log: EventLog;
  private readonly conversations: Conversations;
  private readonly models: Map<string, ModelProvider>;
  private readonly tools: Map<string, AnyTool>;
  private readonly toolSpecs: ToolSpec[];
  private readonly rewriteArguments?: ToolServiceOptions['rewriteArguments'];
  private readonly nodes?: ToolServiceOptions['nodes'];
  private readonly inspection: InspectionHub;
  private readonly grants: SessionGrants;
  private readonly approvals: ApprovalGate;
  private readonly onError: (error: unknown) => void;
  private readonly supervisor: Actor<typeof supervisorMachine>;
  private readonly sessions = new Map<string, SessionActor>();
  private readonly runs = new Map<string, RunHandle>();
  private readonly finished: string[] = [];
  private readonly steerAliases = new Map<string, string>();
  private readonly children = new Map<string, Set<string>>();
  private readonly running = new Set<string>();
  private readonly providedRunMachine;
  private capture: SubmitCapture | undefined;
  /** Sessions whose sessionSeq counter is in memory (known to continue the stored log). */
  private readonly seqLoaded = new Set<string>();
  /** Steers accepted but not yet consumed, by steer id: persisted so a restart loses none. */
  private readonly pendingSteerRecords = new Map<string, RunRecord>();
  private readonly closeHooks: (() => Promise<void> | void)[] = [];
  private closed = false;

  constructor(deps: EngineDeps) {
    this.config = deps.config;
    this.store = deps.store;
    this.clock = deps.clock;
    this.models = deps.models;
    this.tools = deps.tools;
    this.rewriteArguments = deps.rewriteArguments;
    this.nodes = deps.nodes;
    this.inspection = new InspectionHub(() => this.liveActors(), deps.inspect);
    this.grants = new SessionGrants({
      onChange: (sessionId, fingerprints) => this.write(this.store.saveGrants?.(sessionId, fingerprints)),
    });
    this.approvals = new ApprovalGate({
      clock: this.clock,
      timeoutMs: () => Math.min(this.config.approval.timeout_seconds * 1000, 2_147_483_647),
      ...(deps.approver ? { approver: deps.approver } : {}),
      grants: this.grants,
      onRequested: (request) => {
        const handle = this.runs.get(request.runId);
        if (handle) this.append(handle, 'approval.requested', { approvalId: request.approvalId, callId: request.callId, action: request.action });
      },
      onResolved: (resolution) => {
        const handle = this.runs.get(resolution.runId);
        if (handle) this.append(handle, 'approval.resolved', { approvalId: resolution.approvalId, decision: resolution.decision, by: resolution.by });
      },
    });
    this.onError = deps.onError ?? ((error) => console.error('[switchyard]', error));
    this.log = new EventLog(this.store, this.clock, this.onError);
    this.conversations = new Conversations(this.store);
    this.toolSpecs = [...this.tools.values()].map(toolSpecOf);
    this.providedRunMachine = this.provideRunMachine();
    this.supervisor = createActor(supervisorMachine, {
      input: { maxGlobal: this.config.execution.max_runs_global, maxPerAgent: this.config.execution.max_runs_per_agent },
      clock: this.clock,
      inspect: this.inspection.option,
      id: 'supervisor',
    });
    this.supervisor.on('*', (event) => this.onSupervisorEvent(event as SupervisorEmitted));
    this.supervisor.start();
  }

  // ---------------------------------------------------------------------------------------
  // Restart recovery

  /**
   * Picks up where a previous engine on the same store stopped: a run that was running ends
   * `failed` / `interrupted` (its log continues without a gap); every message that was waiting
   * — in a lane, or admitted and waiting for permits — is queued again, in order.
   */
  async recover(): Promise<{ interrupted: string[]; requeued: string[] }> {
    for (const [sessionId, fingerprints] of Object.entries((await this.store.readGrants?.()) ?? {})) {
      this.grants.restore(sessionId, fingerprints);
    }
    const open = await this.store.listRuns(['running', 'queued']);
    if (open.length === 0) return { interrupted: [], requeued: [] };
    const lanes = await this.store.readLanes();
    const sessionSeqs = new Map<string, number>();
    for (const record of open) {
      if (!sessionSeqs.has(record.sessionId)) sessionSeqs.set(record.sessionId, await this.storedSessionSeq(record.sessionId));
      const events = await this.store.readEvents(record.runId);
      this.log.restoreSeq(record.runId, events.at(-1)?.seq ?? 0, record.sessionId, sessionSeqs.get(record.sessionId)!);
      this.seqLoaded.add(record.sessionId);
    }
    // Steers accepted but never consumed become one queued run per target, at the lane front.
    const steers = new Map<string, RunRecord[]>();
    for (const record of open) {
      if (record.queuedFor !== 'steer') continue;
      const key = record.steeredInto ?? record.runId;
      steers.set(key, [...(steers.get(key) ?? []), record]);
    }
    const steerFollowUps = new Map<string, RunHandle[]>();
    for (const group of steers.values()) {
      const [first, ...rest] = group.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
      const request: AdmittedRequest = {
        ...first!.request,
        input: group.map((r) => r.request.input).join('\n\n'),
        busyPolicy: 'queue',
        expectedRunId: undefined,
      };
      const handle = this.newHandle(request, 0);
      handle.status.createdAt = first!.createdAt;
      this.runs.set(first!.runId, handle);
      this.markQueued(first!.runId, 1, 'session_busy');
      for (const merged of rest) {
        this.steerAliases.set(merged.runId, first!.runId);
        const { queuedFor: _queuedFor, ...settled } = merged;
        this.write(this.store.saveRun({ ...settled, state: 'completed', endedAt: this.timestamp(), reason: `merged into run ${first!.runId}` }));
      }
      steerFollowUps.set(request.sessionId, [...(steerFollowUps.get(request.sessionId) ?? []), handle]);
    }
    const interrupted: string[] = [];
    const admitted = new Map<string, RunHandle[]>();
    const queued = new Map<string, RunHandle>();
    for (const record of open) {
      if (record.queuedFor === 'steer') continue;
      const handle = this.newHandle(record.request, 0);
      const { request: _request, ...status } = record;
      handle.status = { ...handle.status, ...status };
      this.runs.set(record.runId, handle);
      if (record.state === 'running') {
        interrupted.push(record.runId);
        // Its input entered the conversation when it started; only a run that never did carries it.
        handle.inbox = [];
        this.endRun(handle, { state: 'failed', error: { code: 'interrupted', message: 'the engine stopped while this run was running; submit it again to retry' } });
        this.settleRun(handle);
      } else if (record.queuedFor === 'limits') {
        const list = admitted.get(record.sessionId) ?? [];
        list.push(handle);
        admitted.set(record.sessionId, list);
      } else {
        queued.set(record.runId, handle);
      }
    }
    const requeued: string[] = [];
    const sessionIds = new Set([
      ...steerFollowUps.keys(),
      ...admitted.keys(),
      ...[...queued.values()].map((h) => h.status.sessionId),
    ]);
    for (const sessionId of sessionIds) {
      const inLane = (lanes[sessionId] ?? []).map((e) => queued.get(e.runId)).filter((h): h is RunHandle => h !== undefined);
      const strays = [...queued.values()].filter((h) => h.status.sessionId === sessionId && !inLane.includes(h));
      const order = [...(steerFollowUps.get(sessionId) ?? []), ...(admitted.get(sessionId) ?? []), ...inLane, ...strays];
      const entries = order.map((h) => ({
        runId: h.status.runId,
        viaInterrupt: (lanes[sessionId] ?? []).find((e) => e.runId === h.status.runId)?.viaInterrupt ?? false,
        model: h.request.model,
        workspace: h.workspace,
      }));
      requeued.push(...entries.map((e) => e.runId));
      this.sessionActor(sessionId).send({ type: 'RESTORE', entries });
    }
    return { interrupted, requeued };
  }

  // ---------------------------------------------------------------------------------------
  // Public API

  async submit(raw: RunRequest): Promise<SubmitResult> {
    this.assertOpen();
    const request = admitRequest(raw, this.config);
    if (this.runs.has(request.runId) || this.steerAliases.has(request.runId)) {
      throw new EngineError('duplicate_run_id', `runId "${request.runId}" is already in use; omit runId to get a generated one`, {
        runId: request.runId,
      });
    }
    if (raw.runId !== undefined && (await this.store.getRun(request.runId))) {
      throw new EngineError('duplicate_run_id', `runId "${request.runId}" is already in use; omit runId to get a generated one`, {
        runId: request.runId,
      });
    }
    this.assertOpen();
    const [providerId] = splitModel(request.model);
    if (!this.models.has(providerId)) {
      throw new EngineError('unknown_model', `no model provider "${providerId}"; known: ${[...this.models.keys()].join(', ')}`, {
        model: request.model,
      });
    }
    if (!this.sessions.has(request.sessionId) && !this.seqLoaded.has(request.sessionId)) {
      await this.loadSessionSeq(request.sessionId);
      this.assertOpen();
    }
    // Checked again after the awaits: another submit may have taken the id meanwhile.
    if (this.runs.has(request.runId) || this.steerAliases.has(request.runId)) {
      throw new EngineError('duplicate_run_id', `runId "${request.runId}" is already in use; omit runId to get a generated one`, { runId: request.runId });
    }
    const handle = this.newHandle(request, 0);
    this.runs.set(request.runId, handle);
    const capture: SubmitCapture = { runId: request.runId };
    this.capture = capture;
    try {
      this.sessionActor(request.sessionId).send({
        type: 'SUBMIT',
        message: {
          runId: request.runId,
          policy: request.busyPolicy,
          plainText: request.plainText,
          ...(request.modelOverride !== undefined ? { model: request.modelOverride } : {}),
          ...(request.workspace !== undefined ? { workspace: request.workspace } : {}),
          runModel: request.model,
          runWorkspace: handle.workspace,
          ...(request.expectedRunId !== undefined ? { expectedRunId: request.expectedRunId } : {}),
        },
      });
    } finally {
      this.capture = undefined;
    }
    const decision = capture.decision;
    const base = { runId: request.runId, sessionId: request.sessionId };
    switch (decision?.type) {
      case 'admit':
        return capture.limitsPosition !== undefined
          ? { ...base, outcome: 'queued', position: capture.limitsPosition }
          : { ...base, outcome: 'started' };
      case 'queued':
        return { ...base, outcome: 'queued', position: decision.position };
      case 'steer':
        return { ...base, outcome: 'steered', intoRunId: decision.intoRunId };
      case 'rejected':
        throw new EngineError(
          'lane_full',
          `session "${request.sessionId}" has ${this.config.execution.wait_lane_capacity} messages waiting; retry later or raise execution.wait_lane_capacity`,
          { sessionId: request.sessionId },
        );
      default:
        this.runs.delete(request.runId);
        throw new Error(`session made no decision for run ${request.runId}`);
    }
  }

  async wait(runId: string): Promise<RunResult> {
    const id = this.resolveAlias(runId);
    const handle = this.runs.get(id);
    if (handle) {
      if (handle.settled) return resultOf(handle.status);
      const result = await new Promise<RunResult>((resolve) => handle.waiters.push(resolve));
      // A steer its run ended without consuming was handed over to a follow-up run: follow it.
      if (id !== runId && this.resolveAlias(runId) !== id) return this.wait(runId);
      return result;
    }
    await this.log.settled();
    const record = await this.store.getRun(id);
    if (record && isTerminalState(record.state)) {
      return resultOf({ ...record, state: record.state } as RunStatus);
    }
    throw new EngineError('not_found', `no run "${runId}"`, { runId });
  }

  events(filter: EventStreamFilter = {}): EventStream {
    return openEventStream(this.log, this.store, filter);
  }

  async history(runId: string): Promise<RunEvent[]> {
    await this.log.settled();
    return this.store.readEvents(this.resolveAlias(runId));
  }

  async cancel(runId: string, reason = 'cancelled'): Promise<boolean> {
    const handle = this.runs.get(runId);
    if (!handle || handle.ended) return false;
    if (handle.actor) {
      this.cancelRunTree(runId, reason);
      return true;
    }
    this.sessions.get(handle.status.sessionId)?.send({ type: 'CANCEL_QUEUED', runId, reason });
    return handle.ended;
  }

  async stopSession(sessionId: string): Promise<{ cancelled?: string; purged: number }> {
    const session = this.sessions.get(sessionId);
    if (!session) return { purged: 0 };
    const activeRunId = session.getSnapshot().context.active?.runId;
    let purged = session.getSnapshot().context.lane.length;
    session.send({ type: 'PURGE' });
    // The stopped run hands its unconsumed steers back to the lane front; a stop purges them too.
    const requeued = session.getSnapshot().context.lane.length;
    if (requeued > 0) {
      session.send({ type: 'PURGE' });
      purged += requeued;
    }
    return { ...(activeRunId !== undefined ? { cancelled: activeRunId } : {}), purged };
  }

  status(runId: string): RunStatus | undefined {
    const handle = this.runs.get(this.resolveAlias(runId));
    return handle ? { ...handle.status } : undefined;
  }

  reconfigure(partial: PartialConfig): { applied: string[]; restartRequired: string[] } {
    let next: Config;
    try {
      next = mergeConfig(this.config, partial);
    } catch (error) {
      if (error instanceof ConfigError) throw new EngineError('invalid_config', error.message, { issues: error.issues });
      throw error;
    }
    const diff = diffConfig(this.config, next);
    this.config = appliedConfig(this.config, next);
    const exec = next.execution;
    if (diff.changed.some((key) => key === 'execution.max_runs_global' || key === 'execution.max_runs_per_agent')) {
      // Announced first, so runs the raise admits never appear before the limit that let them in.
      this.log.engineEvent('limits.changed', { max_runs_global: exec.max_runs_global, max_runs_per_agent: exec.max_runs_per_agent });
      this.supervisor.send({ type: 'RECONFIGURE', maxGlobal: exec.max_runs_global, maxPerAgent: exec.max_runs_per_agent });
    }
    const limits = this.sessionLimits();
    for (const session of this.sessions.values()) session.send({ type: 'CONFIGURE', limits });
    if (diff.changed.length > 0) {
      this.log.engineEvent('config.reloaded', { applied: diff.applied, restartRequired: diff.restartRequired });
    }
    return { applied: diff.applied, restartRequired: diff.restartRequired };
  }

  /** Answers a pending approval; false when it is unknown or already decided. */
  respondApproval(approvalId: string, decision: ApprovalDecision): boolean {
    const parsed = ApprovalDecisionSchema.safeParse(decision);
    if (!parsed.success) {
      throw new EngineError('invalid_request', `decision must be one of allow_once, allow_session, deny; got ${JSON.stringify(decision)}`);
    }
    return this.approvals.respond(approvalId, parsed.data);
  }

  /** Approvals waiting for an answer, oldest first. */
  pendingApprovals(): ApprovalRequest[] {
    return this.approvals.pending();
  }

  /** Streams XState inspection events of every actor until the returned function is called. */
  inspect(listener: InspectionListener): () => void {
    return this.inspection.subscribe(listener);
  }

  currentConfig(): Config {
    return this.config;
  }

  snapshot(): EngineSnapshot {
    const limiter = this.supervisor.getSnapshot().context;
    const perAgent: EngineSnapshot['perAgent'] = {};
    for (const [agentId, inUse] of Object.entries(limiter.perAgent)) perAgent[agentId] = { inUse, max: limiter.maxPerAgent };
    return {
      global: { inUse: limiter.inUse, max: limiter.maxGlobal },
      perAgent,
      waiting: limiter.waiters.length,
      running: [...this.running],
      sessions: [...this.sessions.entries()].map(([sessionId, actor]) => {
        const ctx = actor.getSnapshot().context;
        return { sessionId, ...(ctx.active ? { activeRunId: ctx.active.runId } : {}), laneDepth: ctx.lane.length };
      }),
    };
  }

  /** Runs `hook` when the engine closes (after runs are cancelled, before the store closes). */
  onClose(hook: () => Promise<void> | void): void {
    this.closeHooks.push(hook);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const handle of [...this.runs.values()]) {
      if (handle.actor && !handle.ended) this.cancelRunTree(handle.status.runId, 'engine closed');
    }
    for (const session of this.sessions.values()) session.stop();
    this.sessions.clear();
    for (const handle of this.runs.values()) {
      if (!handle.settled) {
        const waiters = handle.waiters.splice(0);
        for (const resolve of waiters) resolve({ runId: handle.status.runId, state: 'cancelled', reason: 'engine closed' });
      }
    }
    this.supervisor.stop();
    for (const hook of this.closeHooks.splice(0)) await Promise.resolve(hook()).catch(this.onError);
    await this.log.settled();
    await this.store.flush();
    await this.store.close();
  }

  private *liveActors(): Iterable<AnyActorRef> {
    yield this.supervisor;
    yield* this.sessions.values();
    for (const handle of this.runs.values()) if (handle.actor) yield handle.actor;
  }

  // ---------------------------------------------------------------------------------------
  // Sessions

  private sessionLimits(): SessionLimits {
    const exec = this.config.execution;
    return {
      laneCapacity: exec.wait_lane_capacity,
      maxPendingSteers: exec.max_pending_steers,
      laneMaxWaitMs: Math.min(exec.wait_lane_max_wait_seconds * 1000, 2_147_483_647),
    };
  }

  private sessionActor(sessionId: string): SessionActor {
    let actor = this.sessions.get(sessionId);
    if (actor) return actor;
    actor = createActor(sessionMachine, {
      input: { sessionId, ...this.sessionLimits() },
      clock: this.clock,
      inspect: this.inspection.option,
      id: `session:${sessionId}`,
    });
    const self = actor;
    actor.on('*', (event) => this.onSessionEvent(sessionId, self, event as SessionEmitted));
    this.sessions.set(sessionId, actor);
    actor.start();
    return actor;
  }

  private onSessionEvent(sessionId: string, session: SessionActor, event: SessionEmitted): void {
    if (this.capture && 'runId' in event && event.runId === this.capture.runId && event.type !== 'cancelActive') {
      this.capture.decision ??= event;
    }
    switch (event.type) {
      case 'admit':
        this.startRun(event.runId);
        break;
      case 'steer':
        this.deliverSteer(event.runId, event.intoRunId);
        break;
      case 'queued':
        this.markQueued(event.runId, event.position, 'session_busy');
        break;
      case 'rejected':
        this.runs.delete(event.runId);
        break;
      case 'cancelActive':
        this.cancelRunTree(event.runId, event.reason);
        break;
      case 'dropped':
        this.endQueued(event.runId, event.reason);
        break;
      case 'idle':
        // Admission waits a microtask, so a burst of interrupts arriving together supersedes
        // each other instead of starting and killing a chain of runs.
        queueMicrotask(() => this.admitNextOrRetire(sessionId, session));
        break;
    }
    if (event.type === 'queued' || event.type === 'dropped' || event.type === 'admit') this.persistLane(sessionId, session);
  }

  private admitNextOrRetire(sessionId: string, session: SessionActor): void {
    if (this.sessions.get(sessionId) !== session) return;
    const snapshot = session.getSnapshot();
    if (snapshot.status !== 'active' || snapshot.context.active) return;
    if (snapshot.context.lane.length > 0) {
      session.send({ type: 'ADMIT_NEXT' });
    } else {
      // An idle session with an empty lane costs nothing but its conversation.
      session.stop();
      this.inspection.forget(session);
      this.sessions.delete(sessionId);
      // An idle session keeps nothing in memory; its numbering is reloaded on its next message.
      this.log.forgetSession(sessionId);
      this.seqLoaded.delete(sessionId);
    }
  }

  private persistLane(sessionId: string, session: SessionActor): void {
    const lane = session.getSnapshot().context.lane.map((e) => ({ runId: e.runId, viaInterrupt: e.viaInterrupt }));
    this.write(this.store.saveLane(sessionId, lane));
  }

  // ---------------------------------------------------------------------------------------
  // Runs

  private newHandle(request: AdmittedRequest, followUpDepth: number): RunHandle {
    return {
      request,
      status: {
        runId: request.runId,
        sessionId: request.sessionId,
        agentId: request.agentId,
        state: 'queued',
        createdAt: this.timestamp(),
        ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      },
      ended: false,
      settled: false,
      inbox: [{ role: 'user', content: request.input }],
      workspace: request.workspace ?? this.defaultWorkspace(request.sessionId),
      followUpDepth,
      waiters: [],
      deadlineAt: Number.POSITIVE_INFINITY,
    };
  }

  private defaultWorkspace(sessionId: string): string {
    const key = createHash('sha256').update(sessionId).digest('hex').slice(0, 16);
    return resolvePath(join(this.config.sandbox.workspace_root, key));
  }

  private markQueued(runId: string, position: number, reason: 'session_busy' | 'limits'): void {
    const handle = this.runs.get(runId);
    if (!handle || handle.ended) return;
    handle.status.state = 'queued';
    handle.status.position = position;
    handle.status.queuedFor = reason;
    this.write(this.store.saveRun(recordOf(handle)));
    this.append(handle, 'run.queued', { position, reason });
  }

  private startRun(runId: string): void {
    const handle = this.runs.get(runId);
    if (!handle || handle.ended) return;
    if (handle.request.parentRunId) {
      const siblings = this.children.get(handle.request.parentRunId) ?? new Set<string>();
      siblings.add(runId);
      this.children.set(handle.request.parentRunId, siblings);
    }
    const actor = createActor(this.providedRunMachine, {
      input: {
        runId,
        sessionId: handle.request.sessionId,
        agentId: handle.request.agentId,
        timeoutMs: handle.request.timeoutMs,
        maxIterations: handle.request.maxIterations,
      },
      clock: this.clock,
      inspect: this.inspection.option,
      id: `run:${runId}`,
    });
    handle.actor = actor;
    actor.subscribe({
      complete: () => this.settleRun(handle),
      error: (error) => {
        this.onError(error);
        this.settleRun(handle);
      },
    });
    actor.start();
  }

  private deliverSteer(steerId: string, intoRunId: string): void {
    const steerHandle = this.runs.get(steerId);
    const text = steerHandle?.request.input ?? '';
    if (steerHandle) {
      const record: RunRecord = { ...recordOf(steerHandle), state: 'queued', queuedFor: 'steer', steeredInto: intoRunId };
      this.pendingSteerRecords.set(steerId, record);
      this.write(this.store.saveRun(record));
    }
    this.runs.delete(steerId);
    this.steerAliases.set(steerId, intoRunId);
    const target = this.runs.get(intoRunId);
    if (target?.actor && !target.ended) {
      target.actor.send({ type: 'STEER', steer: { steerId, text } });
    } else if (target) {
      this.handOverSteers(target, [{ steerId, text }], target.status.state === 'completed');
    }
  }

  private cancelRunTree(runId: string, reason: string): void {
    const handle = this.runs.get(runId);
    if (handle?.actor && !handle.ended) handle.actor.send({ type: 'CANCEL', reason });
    else if (handle && !handle.ended) this.sessions.get(handle.status.sessionId)?.send({ type: 'CANCEL_QUEUED', runId, reason });
    for (const child of this.children.get(runId) ?? []) this.cancelRunTree(child, `parent ${reason}`);
  }

  /** A message that left the lane without running: cancelled, superseded, purged or expired. */
  private endQueued(runId: string, reason: string): void {
    const handle = this.runs.get(runId);
    if (!handle || handle.ended) return;
    if (reason === 'lane_timeout') {
      const error = {
        code: 'lane_timeout',
        message: `waited longer than execution.wait_lane_max_wait_seconds (${this.config.execution.wait_lane_max_wait_seconds} s) for the session`,
      };
      this.endRun(handle, { state: 'failed', error });
    } else {
      this.endRun(handle, { state: 'cancelled', reason });
    }
    this.settleRun(handle);
  }

  private endRun(handle: RunHandle, outcome: RunOutcome | undefined, usage = { turns: 0, toolCalls: 0 }): void {
    if (handle.ended) return;
    const status = handle.status;
    const final: RunOutcome = outcome ?? { state: 'failed', error: { code: 'internal', message: 'run ended without an outcome' } };
    status.state = final.state;
    status.endedAt = this.timestamp();
    delete status.position;
    delete status.queuedFor;
    if (final.state === 'completed') status.output = final.output;
    if (final.state === 'cancelled') status.reason = final.reason;
    if (final.state === 'failed') status.error = final.error;
    this.write(this.store.saveRun(recordOf(handle)));
    if (final.state === 'completed') {
      this.append(handle, 'run.completed', {
        output: final.output,
        usage: { turns: usage.turns },
        toolCalls: usage.toolCalls,
        ...(status.denied && status.denied.length > 0 ? { denied: status.denied } : {}),
      });
    } else if (final.state === 'cancelled') {
      this.append(handle, 'run.cancelled', { reason: final.reason });
    } else {
      this.append(handle, 'run.failed', { error: final.error });
    }
    handle.ended = true;
    if (final.state !== 'completed') {
      // Keep the session's conversation well-formed for its next run: results that arrived
      // go in, and tool calls that never finished get an error answer.
      const error = final.state === 'failed' ? final.error : { code: 'cancelled', message: `run cancelled (${final.reason})` };
      if (status.startedAt !== undefined) {
        void this.flushInbox(handle).then(() => this.conversations.closeToolCalls(status.sessionId, error)).catch(this.onError);
      }
      for (const child of this.children.get(status.runId) ?? []) this.cancelRunTree(child, `parent ${final.state}`);
    }
  }

  /** After the terminal event and the releases: wake waiters and forget the live parts. */
  private settleRun(handle: RunHandle): void {
    if (handle.settled) return;
    const runId = handle.status.runId;
    if (!handle.ended) {
      // The actor stopped or crashed without passing its exit actions: end and release here.
      this.endRun(handle, { state: 'failed', error: { code: 'internal', message: 'run actor stopped unexpectedly' } });
      this.sessions.get(handle.status.sessionId)?.send({ type: 'RUN_ENDED', runId });
      this.supervisor.send({ type: 'RELEASE', runId });
    }
    handle.settled = true;
    if (handle.actor) this.inspection.forget(handle.actor);
    handle.actor = undefined;
    handle.inbox = [];
    this.children.delete(runId);
    const parent = handle.request.parentRunId;
    if (parent) this.children.get(parent)?.delete(runId);
    for (const resolve of handle.waiters.splice(0)) resolve(resultOf(handle.status));
    this.finished.push(runId);
    if (this.finished.length > FINISHED_RUNS_KEPT) this.forget(this.finished.shift()!);
  }

  private forget(runId: string): void {
    this.runs.delete(runId);
    for (const [steerId, target] of this.steerAliases) if (target === runId) this.steerAliases.delete(steerId);
  }

  private handOverSteers(handle: RunHandle, steers: PendingSteer[], completed: boolean): void {
    if (steers.length === 0 || this.closed) return;
    const [first] = steers;
    const depth = completed ? handle.followUpDepth + 1 : 0;
    const request: AdmittedRequest = {
      ...handle.request,
      runId: first!.steerId,
      input: steers.map((s) => s.text).join('\n\n'),
      busyPolicy: 'queue',
      parentRunId: undefined,
      expectedRunId: undefined,
    };
    const followUp = this.newHandle(request, depth > MAX_FOLLOW_UPS ? 0 : depth);
    this.runs.set(request.runId, followUp);
    for (const steer of steers) this.steerAliases.delete(steer.steerId);
    this.pendingSteerRecords.delete(request.runId);
    for (const steer of steers.slice(1)) {
      this.steerAliases.set(steer.steerId, request.runId);
      this.settleSteerRecord(steer.steerId, `merged into run ${request.runId}`);
    }
    this.sessionActor(handle.status.sessionId).send({
      type: 'REQUEUE_FRONT',
      entry: { runId: request.runId, viaInterrupt: false, model: request.model, workspace: followUp.workspace },
    });
  }

  /** A steer reached its outcome: its stored record says so, so a restart does not revive it. */
  private settleSteerRecord(steerId: string, reason: string): void {
    const record = this.pendingSteerRecords.get(steerId);
    if (!record) return;
    this.pendingSteerRecords.delete(steerId);
    const { queuedFor: _queuedFor, ...rest } = record;
    this.write(this.store.saveRun({ ...rest, state: 'completed', endedAt: this.timestamp(), reason }));
  }

  private async loadSessionSeq(sessionId: string): Promise<void> {
    const last = await this.storedSessionSeq(sessionId);
    if (!this.seqLoaded.has(sessionId)) this.log.restoreSessionSeq(sessionId, last);
    this.seqLoaded.add(sessionId);
  }

  private async storedSessionSeq(sessionId: string): Promise<number> {
    if (this.store.lastSessionSeq) return this.store.lastSessionSeq(sessionId);
    return (await this.store.readSessionEvents(sessionId)).at(-1)?.sessionSeq ?? 0;
  }

  private resolveAlias(runId: string): string {
    let id = runId;
    for (let hops = 0; hops < 8; hops++) {
      const next = this.steerAliases.get(id);
      if (next === undefined) break;
      id = next;
    }
    return id;
  }

  // ---------------------------------------------------------------------------------------
  // The run machine's implementations

  private provideRunMachine() {
    const handleOf = (runId: string) => {
      const handle = this.runs.get(runId);
      if (!handle) throw new Error(`run ${runId} is not known to the engine`);
      return handle;
    };
    return runMachine.provide({
      actions: {
        requestPermits: ({ context, self }) => {
          // A delegated run works under its parent's permit: the parent waits for it, so making
          // it wait for a permit of its own could deadlock at the limit.
          if (handleOf(context.runId).request.parentRunId !== undefined) self.send({ type: 'GRANTED' });
          else this.supervisor.send({ type: 'ACQUIRE', runId: context.runId, agentId: context.agentId });
        },
        announceStarted: ({ context }) => {
          const handle = handleOf(context.runId);
          handle.status.state = 'running';
          handle.status.startedAt = this.timestamp();
          handle.deadlineAt = nowOf(this.clock) + handle.request.timeoutMs;
          delete handle.status.position;
          delete handle.status.queuedFor;
          this.write(this.store.saveRun(recordOf(handle)));
          this.append(handle, 'run.started', {
            agentId: context.agentId,
            model: handle.request.model,
            ...(handle.request.parentRunId ? { parentRunId: handle.request.parentRunId } : {}),
          });
          this.running.add(context.runId);
          this.log.engineEvent('engine.running', { running: [...this.running] });
          this.sessions.get(context.sessionId)?.send({ type: 'RUN_STARTED', runId: context.runId });
        },
        consumeSteers: ({ context }, { steers, turn }) => {
          if (steers.length === 0) return;
          const handle = handleOf(context.runId);
          for (const steer of steers) {
            handle.inbox.push({ role: 'user', content: steer.text });
            this.append(handle, 'run.steered', { steerId: steer.steerId, text: steer.text, consumedAtTurn: turn });
            this.settleSteerRecord(steer.steerId, `consumed as a steer by run ${context.runId}`);
          }
          this.sessions.get(context.sessionId)?.send({ type: 'STEERS_CONSUMED', runId: context.runId, count: steers.length });
        },
        startTurn: ({ context }, { turn }) => this.append(handleOf(context.runId), 'turn.started', { turn }),
        finishTurn: ({ context }, { turn }) => this.append(handleOf(context.runId), 'turn.finished', { turn }),
        appendTerminalEvent: ({ context }, { outcome, turns, toolCalls }) =>
          this.endRun(handleOf(context.runId), outcome, { turns, toolCalls }),
        handOverSteers: ({ context }, { steers, outcome }) =>
          this.handOverSteers(handleOf(context.runId), steers, outcome?.state === 'completed'),
        releaseSlot: ({ context }) => {
          this.sessions.get(context.sessionId)?.send({ type: 'RUN_ENDED', runId: context.runId });
        },
        releasePermits: ({ context }) => {
          this.supervisor.send({ type: 'RELEASE', runId: context.runId });
        },
        planBatch: assign(({ context }) => {
          const handle = handleOf(context.runId);
          const toolCalls = context.lastReply?.toolCalls ?? [];
          const toolConfig = this.config.tool_service;
          const plan = planBatch({
            runId: context.runId,
            turn: context.turn,
            toolCalls,
            service: this.toolServiceOf(handle),
            concurrency: toolConfig.parallel_tool_concurrency,
            scheduling: toolConfig.scheduling,
            steerPending: context.pendingSteers.length > 0,
            callTimeoutMs: Math.max(1, Math.min(toolConfig.default_timeout_seconds * 1000, handle.deadlineAt - nowOf(this.clock))),
          });
          handle.batch = { ...plan, service: this.toolServiceOf(handle), startedAt: [] };
          return { batch: plan.act };
        }),
        announceSchedule: ({ context }) => {
          const handle = handleOf(context.runId);
          if (handle.batch) this.append(handle, 'tool.scheduled', handle.batch.schedule);
        },
        recordToolResults: ({ context }, output) => this.recordResults(handleOf(context.runId), output),
        closeBatch: ({ context, self }, reason) => {
          // Sent directly (not with sendTo, which runs after this macrostep) so the batch's
          // synthetic results are logged before the run's terminal event.
          const act = self.getSnapshot().children['act'];
          if (!act || act.getSnapshot().status !== 'active') return;
          act.send({ type: 'CLOSE', ...reason });
          // Results of calls that did finish are real: the conversation keeps them.
          const output = act.getSnapshot().output as ActOutput | undefined;
          if (output) this.recordResults(handleOf(context.runId), output);
        },
      },
      actors: {
        modelTurn: fromPromiseImpl(async ({ input, signal }) => {
          const handle = handleOf(input.runId);
          await this.flushInbox(handle);
          const conversation = await this.conversations.messages(handle.status.sessionId);
          if (signal.aborted) throw abortError();
          const [providerId, modelName] = splitModel(handle.request.model);
          const reply = await runModelTurn({
            provider: this.models.get(providerId)!,
            ...(modelName !== undefined ? { model: modelName } : {}),
            messages: conversation,
            tools: this.toolSpecs,
            signal,
            clock: this.clock,
            context: { runId: input.runId, sessionId: handle.status.sessionId, turn: input.turn, input: handle.request.input },
            onDelta: (text) => this.append(handle, 'model.delta', { turn: input.turn, text }),
            onRetry: (attempt, reason) => this.append(handle, 'run.retrying', { attempt, reason }),
          });
          if (signal.aborted) throw abortError();
          this.append(handle, 'model.message', { turn: input.turn, text: reply.text, toolCalls: reply.toolCalls });
          await this.conversations.append(handle.status.sessionId, {
            role: 'assistant',
            content: reply.text,
            ...(reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
          });
          return reply;
        }),
        act: this.providedActMachine(),
      },
    });
  }

  /** The Act phase, wired to the run's ToolService and event log. */
  private providedActMachine() {
    const batchOf = (runId: string) => {
      const batch = this.runs.get(runId)?.batch;
      if (!batch) throw new Error(`run ${runId} has no tool batch`);
      return batch;
    };
    return actMachine.provide({
      actions: {
        callStarted: ({ context }, { index }) => {
          const handle = this.runs.get(context.runId);
          const call = handle?.batch?.calls[index];
          if (!handle || !call) return;
          handle.batch!.startedAt[index] = nowOf(this.clock);
          this.append(handle, 'tool.started', { callId: call.callId, tool: call.tool, args: call.args });
        },
        callFinished: ({ context }, { index, result }) => {
          const handle = this.runs.get(context.runId);
          const call = handle?.batch?.calls[index];
          if (!handle || !call) return;
          const startedAt = handle.batch!.startedAt[index];
          if (!result.ok && result.error && REFUSALS.has(result.error.code)) {
            (handle.status.denied ??= []).push({ callId: call.callId, tool: call.tool, code: result.error.code, message: result.error.message });
          }
          this.append(handle, 'tool.finished', {
            callId: call.callId,
            ok: result.ok,
            ...(result.output !== undefined ? { output: result.output } : {}),
            ...(result.ok ? {} : { error: result.error }),
            durationMs: startedAt === undefined ? 0 : nowOf(this.clock) - startedAt,
            ...(result.synthetic ? { synthetic: true } : {}),
          });
        },
      },
      actors: {
        toolCall: toolCallMachine.provide({
          actors: {
            requestApproval: fromPromise(async ({ input, signal }) => {
              const batch = batchOf(input.runId);
              return batch.service.approve(batch.calls[input.index]!, signal);
            }),
            executeTool: fromPromise(async ({ input, signal }) => {
              const batch = batchOf(input.runId);
              const call = batch.calls[input.index]!;
              return batch.service.execute(call, signal, batch.act.calls[input.index]!.timeoutMs);
            }),
          },
        }),
      },
    });
  }

  /** session_send: a run on another session, owned by this one (cancelling it cancels the child). */
  private async delegate(parent: RunHandle, request: { sessionId: string; input: string }): Promise<DelegatedRunResult> {
    for (let run: RunHandle | undefined = parent; run; run = this.runs.get(run.request.parentRunId ?? '')) {
      if (run.status.sessionId === request.sessionId) {
        throw new ToolError(
          'delegation_cycle',
          `session "${request.sessionId}" is already working on this task (run ${run.status.runId}); delegating to it would wait for itself`,
        );
      }
      if (!run.request.parentRunId) break;
    }
    const submitted = await this.submit({
      sessionId: request.sessionId,
      agentId: parent.request.agentId,
      input: request.input,
      parentRunId: parent.status.runId,
      busyPolicy: 'queue',
      ...(parent.request.unattended !== undefined ? { unattended: parent.request.unattended } : {}),
    });
    const result = await this.wait(submitted.runId);
    return {
      runId: result.runId,
      state: result.state,
      ...(result.output !== undefined ? { output: result.output } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
  }

  /** A batch's results, in model order, become the tool messages of the conversation. */
  private recordResults(handle: RunHandle, output: ActOutput): void {
    const calls = handle.batch?.calls ?? [];
    handle.inbox.push(...output.results.map((result, i) => toolMessage(calls[i]?.callId ?? `call_${i}`, result)));
    handle.batch = undefined;
  }

  private toolServiceOf(handle: RunHandle): ToolService {
    if (handle.toolService) return handle.toolService;
    handle.toolService = new ToolService({
      tools: this.tools,
      runId: handle.status.runId,
      sessionId: handle.status.sessionId,
      workspace: handle.workspace,
      sandbox: sandboxSettings(this.config, handle.request.sandbox),
      unattended: handle.request.unattended ?? false,
      warn: (message) => this.append(handle, 'sandbox.warning', { message }),
      delegate: (request) => this.delegate(handle, request),
      ...(this.rewriteArguments ? { rewriteArguments: this.rewriteArguments } : {}),
      ...(this.nodes ? { nodes: this.nodes } : {}),
      gate: this.approvals,
      approvalConfig: () => this.config.approval,
      commandPolicy: () => this.config.sandbox.command_policy,
    });
    return handle.toolService;
  }

  private async flushInbox(handle: RunHandle): Promise<void> {
    if (handle.inbox.length === 0) return;
    const messages = handle.inbox.splice(0);
    await this.conversations.append(handle.status.sessionId, ...messages);
  }

  // ---------------------------------------------------------------------------------------
  // Limiter

  private onSupervisorEvent(event: SupervisorEmitted): void {
    if (event.type === 'granted') {
      this.runs.get(event.runId)?.actor?.send({ type: 'GRANTED' });
    } else if (event.type === 'waiting') {
      if (this.capture?.runId === event.runId) this.capture.limitsPosition = event.position;
      this.markQueued(event.runId, event.position, 'limits');
    } else if (event.type === 'released') {
      if (this.running.delete(event.runId)) this.log.engineEvent('engine.running', { running: [...this.running] });
    }
  }

  // ---------------------------------------------------------------------------------------
  // Plumbing

  private append<K extends RunEventType>(handle: RunHandle, type: K, data: RunEventData[K]): void {
    if (handle.ended) return;
    this.log.append(handle.status.runId, handle.status.sessionId, type, data);
  }

  private write(result: void | Promise<void>): void {
    if (result) result.catch(this.onError);
  }

  private timestamp(): string {
    return new Date(nowOf(this.clock)).toISOString();
  }

  private assertOpen(): void {
    if (this.closed) throw new EngineError('closed', 'the engine is closed; create a new one');
  }
}

function fromPromiseImpl<O, I extends ModelTurnInput>(
  fn: (args: { input: I; signal: AbortSignal }) => Promise<O>,
) {
  return fromPromise<O, I>(({ input, signal }) => fn({ input, signal }));
}

function abortError(): Error {
  return Object.assign(new Error('aborted'), { name: 'AbortError', code: 'aborted' });
}

function splitModel(model: string): [string, string | undefined] {
  const colon = model.indexOf(':');
  return colon < 0 ? [model, undefined] : [model.slice(0, colon), model.slice(colon + 1)];
}

function toolMessage(callId: string, result: ToolCallOutcome) {
  const body = result.ok ? result.output : { error: result.error, ...(result.output !== undefined ? { output: result.output } : {}) };
  return { role: 'tool' as const, toolCallId: callId, content: typeof body === 'string' ? body : JSON.stringify(body ?? null) };
}

function toolSpecOf(tool: AnyTool & { jsonSchema?: unknown }): ToolSpec {
  // MCP tools carry their server's own JSON Schema; zod only sees a generic object there.
  let parameters: unknown = tool.jsonSchema ?? { type: 'object' };
  if (tool.jsonSchema === undefined) {
    try {
      parameters = z.toJSONSchema(tool.input);
    } catch {
      // A schema zod cannot express as JSON Schema still works; the model just sees less.
    }
  }
  return { name: tool.name, description: tool.description, parameters };
}

