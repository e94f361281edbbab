/*
 * The run ledger: every change of a run's status, each written as its stored record and
 * announced as its event, in that order — the one writer of RunStatus (the handle shows it
 * read-only to everyone else). It also keeps what a run has yet to tell its model (its inbox:
 * the input, consumed steers, tool results) and the engine-clock time its deadline expires.
 * The one place that ends a run: the terminal event and the conversation kept well-formed.
 */
import type { RunOutcome } from '../../machines/run.machine.js';
import { isoNow, nowOf, type Clock } from '../core/clock.js';
import type { CodedError } from '../core/chart-words.js';
import type { AdmittedRequest } from '../core/run-request.js';
import type { DeniedAction, RunEventData, RunEventType } from '../core/run-events.js';
import { resultOf, type RunStatus } from '../core/run-status.js';
import type { TokenUsage } from '../core/model-usage.js';
import type { Config } from '../config/index.js';
import type { Conversations } from '../harness/conversation.js';
import { addUsage } from '../harness/model-turn.js';
import type { Message } from '../model/types.js';
import type { Store } from '../store/types.js';
import type { EngineObserver } from './engine-observer.js';
import type { EventLog } from './event-log.js';
import { recordOf, type RunHandle, type RunTable } from './run-table.js';

export interface RunLedgerDeps {
  store: Store;
  log: EventLog;
  clock: Clock;
  table: RunTable;
  conversations: Conversations;
  config: () => Config;
  /** Contract: must not throw; reports a failed background write. */
  onError: (error: unknown) => void;
  /** This process's name in a cluster, carried by run.started. */
  nodeId?: string;
  observer: EngineObserver;
}

/** The handle as its one writer sees it. */
interface WritableHandle {
  request: AdmittedRequest;
  status: RunStatus;
  ended: boolean;
  settled: boolean;
}

/** The ledger's write access to a handle; the only cast of a handle's read-only status in the engine. */
const own = (handle: RunHandle) => handle as unknown as WritableHandle;

export class RunLedger {
  /** What each run has yet to put into its conversation, before its next model turn. */
  private readonly inboxes = new Map<string, Message[]>();
  /** Engine-clock time each running run's deadline expires. */
  private readonly deadlines = new Map<string, number>();

  constructor(private readonly deps: RunLedgerDeps) {}

  /** Appends an event to the run's log, unless the run already has its terminal event. */
  append<K extends RunEventType>(handle: RunHandle, type: K, data: RunEventData[K]): void {
    if (handle.ended) return;
    this.deps.log.append(handle.status.runId, handle.status.sessionId, type, data);
  }

  /** Starts a store write whose completion nobody waits for; a failure is reported. */
  settleInBackground(result: void | Promise<void>): void {
    if (result) result.catch(this.deps.onError);
  }

  save(handle: RunHandle): void {
    this.settleInBackground(this.deps.store.saveRun(recordOf(handle)));
  }

  markQueued(runId: string, position: number, reason: 'session_busy' | 'limits'): void {
    const handle = this.deps.table.get(runId);
    if (!handle || handle.ended) return;
    const status = own(handle).status;
    status.state = 'queued';
    status.position = position;
    status.queuedFor = reason;
    this.save(handle);
    this.append(handle, 'run.queued', { position, reason });
  }

  markStarted(handle: RunHandle): void {
    const { table, clock } = this.deps;
    const status = own(handle).status;
    status.state = 'running';
    status.startedAt = isoNow(clock);
    this.deadlines.set(status.runId, nowOf(clock) + handle.request.timeoutMs);
    delete status.position;
    delete status.queuedFor;
    this.save(handle);
    const { request } = handle;
    const { traceId } = this.deps.observer.runStarting({
      runId: request.runId,
      sessionId: request.sessionId,
      agentId: request.agentId,
      model: request.model,
      busyPolicy: request.busyPolicy,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      ...(request.traceparent ? { traceparent: request.traceparent } : {}),
      at: nowOf(clock),
    });
    this.append(handle, 'run.started', {
      agentId: request.agentId,
      model: request.model,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      ...(traceId ? { traceId } : {}),
      workspace: table.workspaceOf(handle),
      ...(this.deps.nodeId !== undefined ? { node: this.deps.nodeId } : {}),
    });
    table.running.add(status.runId);
    this.deps.log.engineEvent('engine.running', { running: [...table.running] });
  }

  /** The run gave its permits back: it is no longer running. */
  markReleased(runId: string): void {
    const { table, log } = this.deps;
    if (table.running.delete(runId)) log.engineEvent('engine.running', { running: [...table.running] });
  }

  /** Engine-clock time the run's deadline expires (infinite before it starts). */
  deadlineOf(handle: RunHandle): number {
    return this.deadlines.get(handle.status.runId) ?? Number.POSITIVE_INFINITY;
  }

  /** A model turn's tokens join the run's total. */
  addUsage(handle: RunHandle, usage: TokenUsage | undefined): void {
    const status = own(handle).status;
    status.usage = addUsage(status.usage, usage);
  }

  /** A tool call was refused (denied, nobody to approve, a blocked command): the run's summary lists it. */
  recordDenied(handle: RunHandle, denied: DeniedAction): void {
    (own(handle).status.denied ??= []).push(denied);
  }

  /**
   * The `collect` messages `carries` merge into this run: its input becomes `input`, and its
   * record, written now, is the one write that consumes them.
   */
  mergeCollected(handle: RunHandle, input: string, carries: string[]): void {
    const writable = own(handle);
    writable.request = { ...handle.request, input };
    writable.status.carries = carries;
    this.inboxes.set(handle.status.runId, [{ role: 'user', content: input }]);
    this.save(handle);
  }

  /** A waiting message's text edited in its lane: its request and its inbox say the new text; the record is saved. */
  editInput(handle: RunHandle, input: string): void {
    const old = handle.request.input;
    own(handle).request = { ...handle.request, input };
    const inbox = this.inboxes.get(handle.status.runId);
    if (inbox) {
      const edited = inbox.map((m) => (m.role === 'user' && m.content === old ? { ...m, content: input } : m));
      this.inboxes.set(handle.status.runId, edited);
    }
    this.save(handle);
  }

  /** Messages for the model, after what is already waiting (consumed steers, tool results). */
  post(handle: RunHandle, ...messages: Message[]): void {
    this.inboxOf(handle).push(...messages);
  }

  /** Messages for the model before anything else waiting (what was dropped or rolled back before the run). */
  postFirst(handle: RunHandle, ...messages: Message[]): void {
    this.inboxOf(handle).unshift(...messages);
  }

  /** A restored run whose input entered the conversation before the restart: it has nothing to add. */
  inputConsumed(handle: RunHandle): void {
    this.inboxes.set(handle.status.runId, []);
  }

  /** A message that left the lane without running: cancelled, superseded, purged, expired or out of time to start. */
  endQueued(runId: string, reason: string): void {
    const handle = this.deps.table.get(runId);
    if (!handle || handle.ended) return;
    if (reason === 'lane_timeout') {
      const seconds = this.deps.config().execution.wait_lane_max_wait_seconds;
      const error = {
        code: 'lane_timeout',
        message: `waited longer than execution.wait_lane_max_wait_seconds (${seconds} s) for the session`,
      };
      this.endRun(handle, { state: 'failed', error });
    } else if (reason === 'deadline_unmeetable') {
      const message = `the run could not start by its startBy time (${handle.request.startBy ?? '?'}): the session was still busy; it never ran`;
      this.endRun(handle, { state: 'failed', error: { code: 'deadline_unmeetable', message } });
    } else {
      this.endRun(handle, { state: 'cancelled', reason });
    }
    this.settleRun(handle);
  }

  /**
   * Appends the terminal event (once). A run that did not complete gets its conversation
   * closed; the caller cancels what it delegated (run-tree.ts).
   */
  endRun(handle: RunHandle, outcome: RunOutcome | undefined, usage = { turns: 0, toolCalls: 0 }): void {
    if (handle.ended) return;
    const status = own(handle).status;
    const final: RunOutcome = outcome ?? {
      state: 'failed',
      error: { code: 'internal', message: 'run ended without an outcome' },
    };
    status.state = final.state;
    status.endedAt = isoNow(this.deps.clock);
    status.turns = usage.turns;
    status.toolCalls = usage.toolCalls;
    delete status.position;
    delete status.queuedFor;
    if (final.state === 'completed') status.output = final.output;
    if (final.state === 'cancelled') status.reason = final.reason;
    if (final.state === 'failed') status.error = final.error;
    this.save(handle);
    if (final.state === 'completed') {
      this.append(handle, 'run.completed', {
        output: final.output,
        usage: { turns: usage.turns, ...status.usage },
        toolCalls: usage.toolCalls,
        ...(status.denied && status.denied.length > 0 ? { denied: status.denied } : {}),
      });
    } else if (final.state === 'cancelled') {
      this.append(handle, 'run.cancelled', { reason: final.reason });
    } else {
      this.append(handle, 'run.failed', { error: final.error });
    }
    own(handle).ended = true;
    if (final.state !== 'completed' && status.startedAt !== undefined) {
      // Keep the session's conversation well-formed for its next run: results that arrived
      // go in, and tool calls that never finished get an error answer.
      const error: CodedError =
        final.state === 'failed' ? final.error : { code: 'cancelled', message: `run cancelled (${final.reason})` };
      void this.flushInbox(handle)
        .then(() => this.deps.conversations.closeToolCalls(status.sessionId, error))
        .catch(this.deps.onError);
    }
  }

  /** After the terminal event and the releases: wake waiters and forget the live parts. */
  settleRun(handle: RunHandle): void {
    if (handle.settled) return;
    if (!handle.ended)
      this.endRun(handle, { state: 'failed', error: { code: 'internal', message: 'run actor stopped unexpectedly' } });
    own(handle).settled = true;
    handle.actor = undefined;
    this.inboxes.delete(handle.status.runId);
    this.deadlines.delete(handle.status.runId);
    this.deps.table.retire(handle);
    for (const resolve of handle.waiters.splice(0)) resolve(resultOf(handle.status));
  }

  /** Moves the run's pending messages (input, steers, tool results) into the conversation. */
  async flushInbox(handle: RunHandle): Promise<void> {
    const inbox = this.inboxes.get(handle.status.runId);
    if (inbox?.length === 0) return;
    // A run that never posted anything still has its input to add.
    const messages = inbox ? inbox.splice(0) : [{ role: 'user' as const, content: handle.request.input }];
    if (!inbox) this.inboxes.set(handle.status.runId, []);
    await this.deps.conversations.append(handle.status.sessionId, ...messages);
  }

  /** The run's inbox, made with its input the first time it is needed. */
  private inboxOf(handle: RunHandle): Message[] {
    let inbox = this.inboxes.get(handle.status.runId);
    if (!inbox) this.inboxes.set(handle.status.runId, (inbox = [{ role: 'user', content: handle.request.input }]));
    return inbox;
  }
}
