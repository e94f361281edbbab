/*
 * The run ledger: every change of a run's status, each written as its stored record and
 * announced as its event, in that order. The one place that ends a run: the terminal event,
 * the conversation kept well-formed, the delegated runs cancelled, the waiters woken.
 */
import type { RunOutcome } from '../../machines/run.machine.js';
import { isoNow, nowOf, type Clock } from '../core/clock.js';
import type { RunEventData, RunEventType } from '../core/run-events.js';
import { resultOf } from '../core/run-status.js';
import type { Config } from '../config/index.js';
import type { Conversations } from '../harness/conversation.js';
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
  /** Cancels a run and what it delegated (for the children of a run that did not complete). Must not throw. */
  cancelRunTree: (runId: string, reason: string) => void;
  /** Frees the session slot and the permits of a run whose actor stopped without its exit actions. Must not throw. */
  releaseAbandoned: (handle: RunHandle) => void;
  /** Forgets a settled run's live parts outside the table (its actor's inspection). Must not throw. */
  onSettled: (handle: RunHandle) => void;
  /** This process's name in a cluster, carried by run.started. */
  nodeId?: string;
  observer: EngineObserver;
}

export class RunLedger {
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
    handle.status.state = 'queued';
    handle.status.position = position;
    handle.status.queuedFor = reason;
    this.save(handle);
    this.append(handle, 'run.queued', { position, reason });
  }

  markStarted(handle: RunHandle): void {
    handle.status.state = 'running';
    handle.status.startedAt = isoNow(this.deps.clock);
    handle.deadlineAt = nowOf(this.deps.clock) + handle.request.timeoutMs;
    delete handle.status.position;
    delete handle.status.queuedFor;
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
      at: nowOf(this.deps.clock),
    });
    this.append(handle, 'run.started', {
      agentId: request.agentId,
      model: request.model,
      ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
      ...(traceId ? { traceId } : {}),
      workspace: handle.workspace,
      ...(this.deps.nodeId !== undefined ? { node: this.deps.nodeId } : {}),
    });
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

  endRun(handle: RunHandle, outcome: RunOutcome | undefined, usage = { turns: 0, toolCalls: 0 }): void {
    if (handle.ended) return;
    const status = handle.status;
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
    handle.ended = true;
    if (final.state !== 'completed') {
      // Keep the session's conversation well-formed for its next run: results that arrived
      // go in, and tool calls that never finished get an error answer.
      const error =
        final.state === 'failed' ? final.error : { code: 'cancelled', message: `run cancelled (${final.reason})` };
      if (status.startedAt !== undefined) {
        void this.flushInbox(handle)
          .then(() => this.deps.conversations.closeToolCalls(status.sessionId, error))
          .catch(this.deps.onError);
      }
      for (const child of this.deps.table.childrenOf(status.runId))
        this.deps.cancelRunTree(child, `parent ${final.state}`);
    }
  }

  /** After the terminal event and the releases: wake waiters and forget the live parts. */
  settleRun(handle: RunHandle): void {
    if (handle.settled) return;
    if (!handle.ended) {
      // The actor stopped or crashed without passing its exit actions: end and release here.
      this.endRun(handle, { state: 'failed', error: { code: 'internal', message: 'run actor stopped unexpectedly' } });
      this.deps.releaseAbandoned(handle);
    }
    handle.settled = true;
    this.deps.onSettled(handle);
    handle.actor = undefined;
    handle.inbox = [];
    this.deps.table.retire(handle);
    for (const resolve of handle.waiters.splice(0)) resolve(resultOf(handle.status));
  }

  /** Moves the run's pending messages (input, steers, tool results) into the conversation. */
  async flushInbox(handle: RunHandle): Promise<void> {
    if (handle.inbox.length === 0) return;
    const messages = handle.inbox.splice(0);
    await this.deps.conversations.append(handle.status.sessionId, ...messages);
  }
}
