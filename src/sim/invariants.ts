/*
 * The engine's invariants as a checker (docs/runs.md, docs/events.md; README, "Deterministic
 * simulation"): fed every event of an unfiltered live `engine.events()` stream (or every event as
 * the store receives it) plus what each submit returned, it reports every breach of session
 * exclusivity, of the limits in force, of the accounting of accepted messages, of the numbering of
 * the event log, of claim-aware tool dispatch (conflicting calls of a batch never overlap and run
 * in model order; conflicting calls of different runs in one workspace never overlap) and of
 * restart recovery. Pure bookkeeping — no clock, no timers, no I/O — so a
 * test and the deterministic simulator can both drive it.
 */
import { canonicalJson, claimsConflict, holdsAcrossRuns, type Claim } from '../concurrency/index.js';

export interface Violation {
  invariant: InvariantName;
  detail: string;
}

export type InvariantName =
  /** At most one running run per session. */
  | 'session-exclusive'
  /** A run started while the global count was at the limit in force. */
  | 'global-limit'
  /** A run started while its agent's count was at the limit in force. */
  | 'agent-limit'
  /** A run's seq is 1, 2, 3 … without gaps. */
  | 'run-seq'
  /** A session's sessionSeq is 1, 2, 3 … without gaps. */
  | 'session-seq'
  /** Exactly one terminal event per run, and it is the run's last event. */
  | 'terminal-last'
  /** Nothing starts a run after its terminal event, and a run starts at most once. */
  | 'start-once'
  /** Every accepted message reaches exactly one outcome; events belong to accepted messages. */
  | 'accounting'
  /** A rejected message leaves no trace in the event log. */
  | 'rejected-silent'
  /** engine.running lists only runs that started. */
  | 'engine-running'
  /** Two calls of a batch whose footprints conflict were never running at the same time. */
  | 'tool-overlap'
  /** A call starts only after every earlier call of its batch it conflicts with has run. */
  | 'tool-order'
  /** Two calls of different runs in one workspace whose footprints conflict were never running at the same time. */
  | 'cross-run-overlap'
  /** After a restart, no run of the stopped engine is left running. */
  | 'restart-running'
  /** After a restart, every accepted message without an outcome is still known to the engine. */
  | 'restart-lost'
  /** Reported by the simulator: the limiter's permits in use match the runs running. */
  | 'permits'
  /** Reported by the simulator: once the callers stop, everything ends and the engine comes to rest. */
  | 'drain'
  /** Reported by the simulator: the engine reports no unexpected error (its onError stays silent). */
  | 'engine-error';

export interface Limits {
  maxGlobal: number;
  maxPerAgent: number;
}

/** The fields of a stream event the monitor reads; engine `StreamEvent`s fit this shape. */
export interface ObservedEvent {
  type: string;
  seq: number;
  runId?: string;
  sessionId?: string;
  sessionSeq?: number;
  agentId?: string;
  /** run.started: where the run's calls work. */
  workspace?: string;
  steerId?: string;
  running?: string[];
  /** model.message: the calls of the batch that follows, `{ id, name, args }[]` (run.completed: a count). */
  toolCalls?: unknown;
  /** tool.scheduled: each call's declared claim, in model order. */
  claims?: readonly { callId: string; tool: string; claim: Claim }[];
  /** tool.started / tool.finished. */
  callId?: string;
  tool?: string;
  /** tool.finished of a call that did not succeed. */
  error?: { code: string };
  /** run.cancelled: why (`merged` / `promoted`: another run carries the message). */
  reason?: string;
}

/** What a resolved submit returned (engine `SubmitResult` fits this shape). */
export interface AcceptedMessage {
  runId: string;
  sessionId: string;
  outcome: 'started' | 'queued' | 'steered';
  intoRunId?: string;
}

export interface InvariantMonitorOptions {
  /**
   * The limits in force when the event being observed was emitted; asked at every run.started.
   * Runs already running when the limits shrink keep their permits (the documented transient):
   * only a new start while the count is at or above the limit is a violation.
   */
  limits: () => Limits;
  /**
   * What a call of a batch really touches; by default the claim its tool.scheduled declared.
   * The simulator passes the synthetic tools' true effects here, so a tool whose declared claim
   * lies (a write that claims shared) shows up as overlapping calls.
   */
  footprint?: (call: { tool: string; args: unknown; declared: Claim }) => Claim;
}

const TERMINAL_TYPES: ReadonlySet<string> = new Set(['run.completed', 'run.cancelled', 'run.failed']);

interface RunTrack {
  sessionId: string;
  lastSeq: number;
  started: boolean;
  terminal?: string;
  /** Its terminal event marks it carried by another run (`merged`, `promoted`). */
  carriedEnding?: boolean;
}

interface ToolCallArgs {
  id: string;
  name: string;
  args: unknown;
}

/** Error codes of a call its batch closed without running: every call after it was closed too. */
const BATCH_CLOSINGS = new Set(['deferred', 'aborted']);

interface CallTrack {
  callId: string;
  tool: string;
  footprint: Claim;
  /** The claim its tool.scheduled declared (a delegation holds nothing across runs). */
  declared: Claim;
  /** Repeats an earlier call of its batch (same tool, same arguments): it gets that call's result and never executes. */
  repeat: boolean;
  state: 'waiting' | 'running' | 'finished';
  started: boolean;
  /** Closed by its batch without running (deferred for a steer, aborted after a fatal error): nothing after it may run. */
  closedByBatch?: boolean;
}

/** A call running right now, as the cross-run check sees it. */
interface OpenCall {
  runId: string;
  call: CallTrack;
}

/** The batch a run is in: its calls in model order. */
interface BatchTrack {
  calls: CallTrack[];
  byId: Map<string, CallTrack>;
}

export class InvariantMonitor {
  private readonly limits: () => Limits;
  private readonly footprint: InvariantMonitorOptions['footprint'];
  private readonly found: Violation[] = [];
  private checks = 0;
  private readonly runs = new Map<string, RunTrack>();
  private readonly sessionSeqs = new Map<string, number>();
  /** runId -> agentId of every run between its run.started and its terminal event. */
  private readonly running = new Map<string, string>();
  /** steerId -> runId of the run whose run.steered consumed it. */
  private readonly consumed = new Map<string, string>();
  /** Accepted messages in the order their submits resolved. */
  private readonly accepts = new Map<string, AcceptedMessage>();
  private readonly rejects = new Set<string>();
  /** A waiting `collect` message -> the run that carries it (merged into its input; no outcome of its own). */
  private readonly mergedInto = new Map<string, string>();
  /** Every run some engine.running event listed. */
  private readonly listedRunning = new Set<string>();
  /** runId -> the tool calls of its last model.message, until its batch is scheduled. */
  private readonly replies = new Map<string, readonly ToolCallArgs[]>();
  private readonly batches = new Map<string, BatchTrack>();
  /** Runs that were running when the engine stopped: the next engine must end each of them. */
  private readonly orphans = new Set<string>();
  /** runId -> its workspace (from run.started). */
  private readonly workspaces = new Map<string, string>();
  /** workspace -> the calls running in it, of every run. */
  private readonly openCalls = new Map<string, Set<OpenCall>>();

  constructor(options: InvariantMonitorOptions) {
    this.limits = options.limits;
    this.footprint = options.footprint;
  }

  /** Feed every event of an unfiltered live stream, in stream order. */
  observe(event: ObservedEvent): void {
    if (event.runId === undefined) {
      if (event.type === 'engine.running') for (const runId of event.running ?? []) this.listedRunning.add(runId);
      return;
    }
    const runId = event.runId;
    const sessionId = event.sessionId ?? '';
    const where = `${event.type} of run ${runId} (seq ${event.seq})`;
    this.checks += 3;
    if (this.rejects.has(runId)) this.report('rejected-silent', `${where}: the submit of ${runId} was rejected`);
    if (event.type === 'run.steered' && event.steerId !== undefined && this.rejects.has(event.steerId)) {
      this.report('rejected-silent', `${where} consumed steer ${event.steerId}, whose submit was rejected`);
    }

    this.checkSessionSeq(sessionId, event.sessionSeq, where);

    let run = this.runs.get(runId);
    if (!run) {
      run = { sessionId, lastSeq: 0, started: false };
      this.runs.set(runId, run);
    }
    if (run.terminal !== undefined) {
      if (event.type === 'run.started')
        this.report('start-once', `${where}: the run already ended with ${run.terminal}`);
      else this.report('terminal-last', `${where} follows the run's terminal ${run.terminal}`);
      return;
    }
    if (event.seq !== run.lastSeq + 1) this.report('run-seq', `${where}: expected seq ${run.lastSeq + 1}`);
    run.lastSeq = event.seq;

    if (event.type === 'run.started') this.observeStart(runId, run, event, where);
    else if (event.type === 'run.steered' && event.steerId !== undefined) {
      const earlier = this.consumed.get(event.steerId);
      if (earlier !== undefined)
        this.report('accounting', `${where}: steer ${event.steerId} was already consumed by run ${earlier}`);
      else this.consumed.set(event.steerId, runId);
    } else if (event.type === 'model.message') {
      if (Array.isArray(event.toolCalls) && event.toolCalls.length > 0)
        this.replies.set(runId, event.toolCalls as ToolCallArgs[]);
    } else if (event.type === 'tool.scheduled') {
      this.observeSchedule(runId, event);
    } else if (event.type === 'tool.started') {
      this.observeToolStart(runId, event, where);
    } else if (event.type === 'tool.finished') {
      const call = event.callId === undefined ? undefined : this.batches.get(runId)?.byId.get(event.callId);
      if (call) {
        call.state = 'finished';
        if (!call.started && BATCH_CLOSINGS.has(event.error?.code ?? '')) call.closedByBatch = true;
      }
      if (call) this.closeCalls(runId, (open) => open.call === call);
    } else if (TERMINAL_TYPES.has(event.type)) {
      run.terminal = event.type;
      // A message another run carries (merged by collect, promoted to a steer) ends its own
      // record with this mark; its outcome is the carrier's, not a second one.
      if (event.type === 'run.cancelled' && (event.reason === 'merged' || event.reason === 'promoted'))
        run.carriedEnding = true;
      this.running.delete(runId);
      this.closeCalls(runId, () => true);
      this.workspaces.delete(runId);
      this.batches.delete(runId);
      this.replies.delete(runId);
      this.orphans.delete(runId);
    }
  }

  /**
   * The engine stopped without closing and a new one took over its store: every run running
   * now belongs to the stopped engine, and the new one's recovery must end each of them. In a
   * cluster only the runs of the process that stopped (`of`) are orphans; the others go on.
   */
  restarted(of: (runId: string) => boolean = () => true): void {
    for (const runId of this.running.keys()) if (of(runId)) this.orphans.add(runId);
    // The stopped engine's calls stopped with it.
    for (const [workspace, open] of this.openCalls) {
      for (const entry of open) if (of(entry.runId)) open.delete(entry);
      if (open.size === 0) this.openCalls.delete(workspace);
    }
  }

  /**
   * Call once the new engine has recovered; returns what it finds. Every run of the stopped
   * engine must have ended, and every accepted message still without an outcome must be known
   * to the new engine (`known(runId)`): queued again, or carried by a follow-up run that is.
   */
  checkRecovery(known: (runId: string) => boolean): Violation[] {
    const found: Violation[] = [];
    this.checks += 1;
    for (const runId of this.orphans) {
      found.push({
        invariant: 'restart-running',
        detail: `run ${runId} was running when the engine stopped and is still running after recovery`,
      });
    }
    for (const message of this.accepts.values()) {
      if (this.outcomesOf(message).length > 0 || known(message.runId)) continue;
      this.checks += 1;
      const carrier = message.outcome === 'steered' ? this.pendingCarrier(message, known) : undefined;
      if (carrier !== undefined) continue;
      const what =
        message.outcome === 'steered'
          ? `steer ${message.runId} (into run ${message.intoRunId ?? '?'})`
          : `message ${message.runId}`;
      found.push({
        invariant: 'restart-lost',
        detail: `accepted ${what} has no outcome and the restarted engine does not know it`,
      });
    }
    return found;
  }

  /** How many invariant checks the monitor has evaluated so far. */
  checksPerformed(): number {
    return this.checks;
  }

  /** Record a submit that resolved. */
  accepted(message: AcceptedMessage): void {
    if (this.accepts.has(message.runId) || this.rejects.has(message.runId)) {
      this.report('accounting', `runId ${message.runId} was answered twice at submit`);
      return;
    }
    this.accepts.set(message.runId, message);
  }

  /**
   * Record a submit that rejected a message with a fresh runId (lane_full and the like: a
   * duplicate_run_id rejection names someone else's run and must not be fed here).
   */
  rejected(runId: string): void {
    if (this.accepts.has(runId) || this.rejects.has(runId)) {
      this.report('accounting', `runId ${runId} was answered twice at submit`);
      return;
    }
    this.rejects.add(runId);
    if (this.runs.has(runId) || this.consumed.has(runId)) {
      this.report('rejected-silent', `the submit of ${runId} was rejected, yet the log has events for it`);
    }
  }

  /**
   * Run `carrier` started carrying the waiting `collect` messages `carries` (its own id first):
   * each of them answers with the carrier's outcome from now on, and never runs alone.
   */
  collected(carrier: string, carries: readonly string[]): void {
    for (const runId of carries) {
      // A steer follow-up carries steers too: their outcome is counted as a steer's.
      if (runId === carrier || this.accepts.get(runId)?.outcome === 'steered') continue;
      this.checks += 1;
      const earlier = this.mergedInto.get(runId);
      if (earlier !== undefined && earlier !== carrier)
        this.report('accounting', `collect message ${runId} was carried by run ${earlier}, then by run ${carrier}`);
      if (this.runs.get(runId)?.started) this.report('accounting', `collect message ${runId} ran on its own too`);
      this.mergedInto.set(runId, carrier);
    }
  }

  /** Violations found so far by the checks that hold at every moment. */
  violations(): Violation[] {
    return [...this.found];
  }

  /** How many violations were found so far (cheap: no copy). */
  violationCount(): number {
    return this.found.length;
  }

  /** Accepted messages that have not reached an outcome yet (empty once everything ended). */
  unfinished(): string[] {
    return [...this.accepts.values()].filter((m) => this.outcomesOf(m).length === 0).map((m) => m.runId);
  }

  /** Runs seen running right now: started, no terminal event yet. */
  runningRuns(): string[] {
    return [...this.running.keys()];
  }

  /**
   * Every violation, including the end-state ones: call when everything accepted should have
   * ended (after draining). Every accepted message must have exactly one outcome and every
   * run in the log must be an accepted message with a terminal event.
   */
  check(): Violation[] {
    const atEnd: Violation[] = [];
    const report = (invariant: InvariantName, detail: string) => atEnd.push({ invariant, detail });
    this.checks += this.accepts.size + this.runs.size + this.listedRunning.size + this.consumed.size;
    for (const message of this.accepts.values()) {
      const outcomes = this.outcomesOf(message);
      if (outcomes.length === 0) {
        report('accounting', `accepted ${message.outcome} message ${message.runId} reached no outcome`);
      } else if (outcomes.length > 1) {
        report(
          'accounting',
          `accepted message ${message.runId} reached ${outcomes.length} outcomes: ${outcomes.join('; ')}`,
        );
      }
      const consumer = this.consumed.get(message.runId);
      if (consumer !== undefined && consumer !== message.intoRunId) {
        report(
          'accounting',
          `steer ${message.runId} was sent into run ${message.intoRunId ?? '(none)'} but consumed by run ${consumer}`,
        );
      }
    }
    for (const [runId, run] of this.runs) {
      if (!this.accepts.has(runId) && !this.rejects.has(runId)) {
        report('accounting', `run ${runId} has events but no submit accepted it`);
      }
      // A merged collect message's log ends at its run.queued: its outcome is its carrier's.
      if (run.terminal === undefined && !this.mergedInto.has(runId))
        report('terminal-last', `run ${runId} has no terminal event (last seq ${run.lastSeq})`);
    }
    // Checked at the end: engine-wide events are not ordered behind run events whose store
    // write is still pending, so engine.running may name a run before its run.started arrives.
    for (const runId of this.listedRunning) {
      if (!this.runs.get(runId)?.started)
        report('engine-running', `engine.running listed ${runId}, which never started`);
    }
    for (const steerId of this.consumed.keys()) {
      if (!this.accepts.has(steerId) && !this.rejects.has(steerId)) {
        report('accounting', `steer ${steerId} was consumed but no submit accepted it`);
      }
    }
    return [...this.found, ...atEnd];
  }

  private observeSchedule(runId: string, event: ObservedEvent): void {
    const args = new Map((this.replies.get(runId) ?? []).map((call) => [call.id, call.args]));
    this.replies.delete(runId);
    const seen = new Set<string>();
    const calls = (event.claims ?? []).map((c): CallTrack => {
      const footprint = this.footprint
        ? this.footprint({ tool: c.tool, args: args.get(c.callId), declared: c.claim })
        : c.claim;
      const key = `${c.tool}\u0000${canonicalJson(args.get(c.callId) ?? null)}`;
      const repeat = seen.has(key);
      seen.add(key);
      return { callId: c.callId, tool: c.tool, footprint, declared: c.claim, repeat, state: 'waiting', started: false };
    });
    this.batches.set(runId, { calls, byId: new Map(calls.map((c) => [c.callId, c])) });
  }

  /** Against every other call of the batch: no conflicting call open, model order kept. */
  private observeToolStart(runId: string, event: ObservedEvent, where: string): void {
    this.checks += 2;
    const batch = this.batches.get(runId);
    const call = event.callId === undefined ? undefined : batch?.byId.get(event.callId);
    if (!batch || !call) {
      this.report('tool-order', `${where}: call ${event.callId ?? '(no id)'} is not in the run's last tool.scheduled`);
      return;
    }
    if (call.started) this.report('tool-order', `${where}: call ${call.callId} started twice`);
    const index = batch.calls.indexOf(call);
    for (const [j, other] of batch.calls.entries()) {
      if (j === index || !claimsConflict(call.footprint, other.footprint)) continue;
      if (other.state === 'running') {
        this.report(
          'tool-overlap',
          `${where}: call ${call.callId} (#${index}) started while the conflicting call ${other.callId} (#${j}) was running`,
        );
      } else if (j < index && !other.started && (other.state !== 'finished' || other.closedByBatch)) {
        // An earlier conflicting call ran, or failed on its own without running (its wait for
        // another run's claim timed out) and the batch went on; one still open was skipped, and
        // one its batch closed (deferred, aborted) closed everything after it too.
        this.report(
          'tool-order',
          `${where}: call ${call.callId} (#${index}) started, but the earlier conflicting call ${other.callId} (#${j}) never ran`,
        );
      } else if (j > index && other.started) {
        this.report(
          'tool-order',
          `${where}: call ${call.callId} (#${index}) started after the later conflicting call ${other.callId} (#${j})`,
        );
      }
    }
    call.started = true;
    call.state = 'running';
    this.openAcrossRuns(runId, call, where);
  }

  /** Against the running calls of every other run in the same workspace: no conflicting one may be open. */
  private openAcrossRuns(runId: string, call: CallTrack, where: string): void {
    const workspace = this.workspaces.get(runId);
    if (workspace === undefined || call.repeat || !holdsAcrossRuns(call.declared)) return;
    this.checks += 1;
    let open = this.openCalls.get(workspace);
    if (!open) {
      open = new Set();
      this.openCalls.set(workspace, open);
    }
    for (const other of open) {
      if (other.runId === runId || !claimsConflict(call.footprint, other.call.footprint)) continue;
      this.report(
        'cross-run-overlap',
        `${where}: call ${call.callId} (${call.tool}) started while the conflicting call ` +
          `${other.call.callId} (${other.call.tool}) of run ${other.runId}, in the same workspace, was ` +
          `running`,
      );
    }
    open.add({ runId, call });
  }

  private closeCalls(runId: string, which: (open: OpenCall) => boolean): void {
    const workspace = this.workspaces.get(runId);
    const open = workspace === undefined ? undefined : this.openCalls.get(workspace);
    if (!open) return;
    for (const entry of open) if (entry.runId === runId && which(entry)) open.delete(entry);
    if (open.size === 0) this.openCalls.delete(workspace!);
  }

  private observeStart(runId: string, run: RunTrack, event: ObservedEvent, where: string): void {
    this.checks += 3;
    if (run.started) {
      this.report('start-once', `${where}: the run already started`);
      return;
    }
    run.started = true;
    if (event.workspace !== undefined) this.workspaces.set(runId, event.workspace);
    for (const [other] of this.running) {
      if (this.runs.get(other)?.sessionId === run.sessionId) {
        this.report('session-exclusive', `${where}: run ${other} of session ${run.sessionId} is still running`);
      }
    }
    const agentId = event.agentId ?? 'main';
    const limits = this.limits();
    if (this.running.size >= limits.maxGlobal) {
      this.report(
        'global-limit',
        `${where}: ${this.running.size} runs already running, max_runs_global is ${limits.maxGlobal}`,
      );
    }
    const ofAgent = [...this.running.values()].filter((a) => a === agentId).length;
    if (ofAgent >= limits.maxPerAgent) {
      this.report(
        'agent-limit',
        `${where}: agent ${agentId} already runs ${ofAgent}, max_runs_per_agent is ${limits.maxPerAgent}`,
      );
    }
    this.running.set(runId, agentId);
  }

  private checkSessionSeq(sessionId: string, sessionSeq: number | undefined, where: string): void {
    const last = this.sessionSeqs.get(sessionId) ?? 0;
    if (sessionSeq !== last + 1)
      this.report('session-seq', `${where}: sessionSeq ${sessionSeq}, expected ${last + 1} in session ${sessionId}`);
    if (sessionSeq !== undefined) this.sessionSeqs.set(sessionId, sessionSeq);
  }

  /**
   * The outcomes an accepted message reached: its own terminal event; for a steer, a run.steered
   * with its id, or having been handed over — together with earlier unconsumed steers into the
   * same run — to a follow-up run named after the first of them.
   */
  private outcomesOf(message: AcceptedMessage): string[] {
    const outcomes: string[] = [];
    const carrier = this.mergedInto.get(message.runId);
    const ownRun = this.runs.get(message.runId);
    const own = carrier !== undefined && ownRun?.carriedEnding ? undefined : ownRun?.terminal;
    if (own !== undefined) outcomes.push(own);
    const carried = carrier === undefined ? undefined : this.runs.get(carrier)?.terminal;
    if (carried !== undefined) outcomes.push(`${carried} of run ${carrier}, which carried it`);
    if (message.outcome !== 'steered') return outcomes;
    const consumer = this.consumed.get(message.runId);
    if (consumer !== undefined) outcomes.push(`run.steered on ${consumer}`);
    if (outcomes.length > 0) return outcomes;
    const followUp = this.followUpCarrying(message);
    if (followUp !== undefined) outcomes.push(`part of follow-up run ${followUp}`);
    return outcomes;
  }

  /** An earlier unconsumed steer into the same run that the engine still knows (it will carry this one). */
  private pendingCarrier(message: AcceptedMessage, known: (runId: string) => boolean): string | undefined {
    for (const earlier of this.accepts.values()) {
      if (earlier.runId === message.runId) return undefined;
      if (
        earlier.outcome === 'steered' &&
        earlier.intoRunId === message.intoRunId &&
        !this.consumed.has(earlier.runId) &&
        known(earlier.runId)
      ) {
        return earlier.runId;
      }
    }
    return undefined;
  }

  private followUpCarrying(message: AcceptedMessage): string | undefined {
    for (const earlier of this.accepts.values()) {
      if (earlier.runId === message.runId) return undefined;
      if (
        earlier.outcome === 'steered' &&
        earlier.intoRunId === message.intoRunId &&
        !this.consumed.has(earlier.runId) &&
        this.runs.get(earlier.runId)?.terminal !== undefined
      ) {
        return earlier.runId;
      }
    }
    return undefined;
  }

  private report(invariant: InvariantName, detail: string): void {
    this.found.push({ invariant, detail });
  }
}
