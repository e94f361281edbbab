/*
 * The runs the engine knows right now: each run's handle (its admitted request, public
 * status, actor and waiters) with where it works, which runs it delegated to, which are running, and a
 * ring of recently finished runs kept for the synchronous status().
 */
import { createHash } from 'node:crypto';
import { join, resolve as resolvePath } from 'node:path';
import type { Actor } from 'xstate';
import type { runMachine } from '../../machines/run.machine.js';
import { abortReason, isoNow, MAX_TIMER_MS, type Clock } from '../core/clock.js';
import { EngineError } from '../core/errors.js';
import type { AdmittedRequest } from '../core/run-request.js';
import { resultOf, type ReadonlyRunStatus, type RunResult, type RunStatus } from '../core/run-status.js';
import type { RunRecord } from '../store/types.js';

/**
 * What every part of the engine needs of a run, and nothing more. The status is read-only here:
 * RunLedger is its one writer. The rest of a run's state has one owner each: its inbox and
 * deadline the ledger, its tool batch the act host, its ToolService the run tools, where it
 * works and how deep a follow-up it is this table.
 */
export interface RunHandle {
  /** The admitted request; RunLedger.mergeCollected is the one place that replaces it. */
  readonly request: AdmittedRequest;
  readonly status: ReadonlyRunStatus;
  actor?: Actor<typeof runMachine>;
  /** Set once the terminal event is appended: nothing is appended after it. */
  readonly ended: boolean;
  /** Set once the slot and permits are released too: wait() resolves then. */
  readonly settled: boolean;
  waiters: ((result: RunResult) => void)[];
}

/** How a new handle starts: a follow-up's depth and carried steers, a restored run's stored fields. */
export interface NewHandleOptions {
  /** How many follow-up runs of unconsumed steers led here without a user message between. */
  followUpDepth?: number;
  /** The stored status of a run restored after a restart (its fields win over a fresh one's). */
  stored?: Partial<RunStatus>;
}

/** What the table keeps beside a handle: where the run works and how deep a follow-up it is. */
interface Placement {
  workspace: string;
  followUpDepth: number;
}

export interface WaitOptions {
  /** Stops waiting (the run goes on): the wait rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Stops waiting after this long (the run goes on): the wait rejects with EngineError `timeout`. */
  timeoutMs?: number;
}

/** Finished runs kept for the synchronous status(); older ones are read from the store. */
const FINISHED_RUNS_KEPT = 10_000;
const WORKSPACES_KEPT = 1024;

export class RunTable {
  private readonly runs = new Map<string, RunHandle>();
  private readonly placements = new WeakMap<RunHandle, Placement>();
  private readonly finished: string[] = [];
  private readonly children = new Map<string, Set<string>>();
  /** Runs holding permits and running, in the order they started. */
  readonly running = new Set<string>();
  /** The default workspace of recently seen sessions, under the root it was made from. */
  private readonly workspaces = new Map<string, { root: string; path: string }>();

  constructor(
    private readonly clock: Clock,
    /** Where a run without a workspace of its own works ([sandbox] workspace_root). */
    private readonly workspaceRoot: () => string,
  ) {}

  get(runId: string): RunHandle | undefined {
    return this.runs.get(runId);
  }

  /** A message the engine holds as a run (a lane's waiting one): its request and when it arrived. */
  waitingMessage(runId: string): { request: AdmittedRequest; createdAt: string } | undefined {
    const handle = this.runs.get(runId);
    return handle ? { request: handle.request, createdAt: handle.status.createdAt } : undefined;
  }

  /** The run's handle; throws when the engine does not know it (a bug in the caller). */
  require(runId: string): RunHandle {
    const handle = this.runs.get(runId);
    if (!handle) throw new Error(`run ${runId} is not known to the engine`);
    return handle;
  }

  has(runId: string): boolean {
    return this.runs.has(runId);
  }

  add(handle: RunHandle): void {
    this.runs.set(handle.status.runId, handle);
  }

  delete(runId: string): void {
    this.runs.delete(runId);
  }

  handles(): IterableIterator<RunHandle> {
    return this.runs.values();
  }

  /** A new handle for an admitted request, queued, not yet in the table. */
  newHandle(request: AdmittedRequest, { followUpDepth = 0, stored }: NewHandleOptions = {}): RunHandle {
    const handle: RunHandle = {
      request,
      status: {
        runId: request.runId,
        sessionId: request.sessionId,
        agentId: request.agentId,
        state: 'queued',
        createdAt: isoNow(this.clock),
        ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
        ...stored,
      },
      ended: false,
      settled: false,
      waiters: [],
    };
    this.placements.set(handle, { workspace: this.workspaceFor(request), followUpDepth });
    return handle;
  }

  /** Where a request's run works: its own workspace, or its session's default one. */
  workspaceFor(request: AdmittedRequest): string {
    return request.workspace ?? this.defaultWorkspace(request.sessionId);
  }

  /** Where the run works: its request's workspace, or its session's default one (fixed when the handle was made). */
  workspaceOf(handle: RunHandle): string {
    return this.placements.get(handle)!.workspace;
  }

  /** How many follow-up runs of unconsumed steers led to this one without a user message between. */
  followUpDepthOf(handle: RunHandle): number {
    return this.placements.get(handle)!.followUpDepth;
  }

  addChild(parentRunId: string, runId: string): void {
    const siblings = this.children.get(parentRunId) ?? new Set<string>();
    siblings.add(runId);
    this.children.set(parentRunId, siblings);
  }

  childrenOf(runId: string): Iterable<string> {
    return this.children.get(runId) ?? [];
  }

  /** The run's result once it is settled (terminal, slot and permits released). */
  settled(handle: RunHandle, { signal, timeoutMs }: WaitOptions = {}): Promise<RunResult> {
    if (handle.settled) return Promise.resolve(resultOf(handle.status));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<RunResult>((resolve, reject) => {
      let timer: unknown;
      const stop = () => {
        const i = handle.waiters.indexOf(done);
        if (i >= 0) handle.waiters.splice(i, 1);
        if (timer !== undefined) this.clock.clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const done = (result: RunResult) => {
        stop();
        resolve(result);
      };
      const onAbort = () => {
        stop();
        reject(abortReason(signal!));
      };
      handle.waiters.push(done);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (timeoutMs !== undefined) {
        const runId = handle.status.runId;
        timer = this.clock.setTimeout(
          () => {
            stop();
            reject(
              new EngineError(
                'timeout',
                `run "${runId}" did not finish within ${timeoutMs} ms; it goes on: wait again or cancel it`,
                { runId },
              ),
            );
          },
          Math.min(timeoutMs, MAX_TIMER_MS),
        );
      }
    });
  }

  /** A settled run: it delegates nothing any more, and joins the finished ring. */
  retire(handle: RunHandle): void {
    const runId = handle.status.runId;
    this.children.delete(runId);
    const parent = handle.request.parentRunId;
    if (parent) this.children.get(parent)?.delete(runId);
    this.finished.push(runId);
    if (this.finished.length > FINISHED_RUNS_KEPT) {
      const oldest = this.finished.shift()!;
      // A run retired once may be known again (a session taken back after a takeover): keep that one.
      if (this.runs.get(oldest)?.settled !== false) this.runs.delete(oldest);
    }
  }

  private defaultWorkspace(sessionId: string): string {
    const root = this.workspaceRoot();
    const known = this.workspaces.get(sessionId);
    if (known?.root === root) return known.path;
    const key = createHash('sha256').update(sessionId).digest('hex').slice(0, 16);
    const path = resolvePath(join(root, key));
    // A session's runs come in series: remembering the busiest sessions' paths spares a hash per run.
    if (this.workspaces.size >= WORKSPACES_KEPT) this.workspaces.clear();
    this.workspaces.set(sessionId, { root, path });
    return path;
  }
}

export function recordOf(handle: RunHandle): RunRecord {
  const s = handle.status;
  return {
    runId: s.runId,
    sessionId: s.sessionId,
    agentId: s.agentId,
    request: handle.request,
    state: s.state,
    createdAt: s.createdAt,
    ...(s.startedAt ? { startedAt: s.startedAt } : {}),
    ...(s.endedAt ? { endedAt: s.endedAt } : {}),
    ...(s.output !== undefined ? { output: s.output } : {}),
    ...(s.error ? { error: s.error } : {}),
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.queuedFor ? { queuedFor: s.queuedFor } : {}),
    ...(s.usage ? { usage: s.usage } : {}),
    ...(s.turns !== undefined ? { turns: s.turns } : {}),
    ...(s.toolCalls !== undefined ? { toolCalls: s.toolCalls } : {}),
    ...(s.carries ? { carries: s.carries } : {}),
  };
}
