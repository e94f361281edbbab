/*
 * Admission: the path of a message from submit() to its answer. The request is validated,
 * its id checked free, its session's earlier messages decided first (arrival order), then the
 * session (and, for a run it admits, the limiter) decides synchronously — and the answer goes
 * out only once that decision is durable in the store.
 */
import { isoNow, nowOf, type Clock } from '../core/clock.js';
import { EngineError } from '../core/errors.js';
import type { Config } from '../config/index.js';
import { admitRequest, splitModel, type AdmittedRequest, type RunRequest } from '../core/run-request.js';
import type { SubmitResult } from '../core/submit-result.js';
import type { ModelProvider } from '../model/types.js';
import { sandboxRequestIssue } from '../sandbox/request-guard.js';
import type { Store } from '../store/types.js';
import { AdmissionOrder } from './admission-order.js';
import type { BusyMessages } from './busy-messages.js';
import { collectKeyOf } from './collect.js';
import type { Limiter } from './ownership.js';
import type { RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';
import type { Steers } from './steers.js';

export interface AdmissionDeps {
  table: RunTable;
  sessions: SessionHost;
  steers: Steers;
  store: Store;
  models: ReadonlyMap<string, ModelProvider>;
  config: () => Config;
  clock: Clock;
  /** Throws EngineError `closed` once the engine is closed. */
  assertOpen: () => void;
  /** Cancels a run whose admission could not be stored. Must not throw. */
  cancel: (runId: string, reason: string) => void;
  limiter: Pick<Limiter, 'answered'>;
  busy: Pick<BusyMessages, 'takeRejection'>;
}

/** A message while its session decides on it: not yet a run, maybe never one (a steer, a refusal). */
export interface Arrival {
  request: AdmittedRequest;
  createdAt: string;
}

export class Admission {
  private readonly order = new AdmissionOrder();
  /** The message the session is deciding on right now (the decision is synchronous). */
  private arriving: Arrival | undefined;
  /** Submits with a runId of their own, until answered: a retry meanwhile gets the same answer. */
  private readonly inFlight = new Map<string, { fingerprint: string | undefined; answer: Promise<SubmitResult> }>();

  constructor(private readonly deps: AdmissionDeps) {}

  async submit(raw: RunRequest): Promise<SubmitResult> {
    const { assertOpen } = this.deps;
    assertOpen();
    const request = admitRequest(raw, this.deps.config(), nowOf(this.deps.clock));
    const refused = sandboxRequestIssue(request, this.deps.config());
    if (refused !== undefined)
      throw new EngineError('invalid_request', `invalid run request: ${refused.path}: ${refused.message}`, {
        issues: [refused],
      });
    const named = raw.runId !== undefined;
    if (named) {
      // A resubmit of a runId (docs/runs.md, "A retried submit"): the same request is answered
      // with the first one's outcome, whether that is still being decided or long stored.
      const earlier = this.inFlight.get(request.runId);
      if (earlier) {
        if (earlier.fingerprint !== request.fingerprint) throw duplicateRunId(request.runId);
        return earlier.answer;
      }
      if (this.idTaken(request.runId)) return this.retried(request);
    } else this.assertFreeId(request.runId);
    const [providerId] = splitModel(request.model);
    if (!this.deps.models.has(providerId)) {
      throw new EngineError(
        'unknown_model',
        `no model provider "${providerId}"; known: ${[...this.deps.models.keys()].join(', ')}`,
        {
          model: request.model,
        },
      );
    }
    const answer = this.admit(request, named);
    if (named) {
      const entry = { fingerprint: request.fingerprint, answer };
      this.inFlight.set(request.runId, entry);
      const forget = () => {
        if (this.inFlight.get(request.runId) === entry) this.inFlight.delete(request.runId);
      };
      answer.then(forget, forget);
    }
    return answer;
  }

  private async admit(request: AdmittedRequest, named: boolean): Promise<SubmitResult> {
    const { assertOpen, store, sessions } = this.deps;
    const ticket = this.order.enter(request.sessionId);
    let decided: SubmitResult | undefined;
    let answer: Promise<void> | undefined;
    try {
      if (named && ((await store.getRun(request.runId)) ?? (await store.getSteer(request.runId)))) {
        return await this.retried(request);
      }
      if (ticket.ready) {
        await ticket.ready;
        assertOpen();
      }
      if (!sessions.seqReady(request.sessionId)) {
        await sessions.numbering.load(request.sessionId);
        assertOpen();
      }
      // Checked again after the awaits: another submit may have taken the id meanwhile.
      this.assertFreeId(request.runId);
      this.decide(request);
      // A limiter that answers later (a cluster's) is waited for; the limiter host answered already.
      answer = this.deps.limiter.answered?.(request.runId);
      if (!answer) decided = this.decisionOf(request.runId, request.sessionId);
    } finally {
      ticket.done();
    }
    try {
      await store.durable();
      if (answer) {
        await answer;
        await store.durable();
      }
    } catch (error) {
      this.deps.cancel(request.runId, 'store_failed');
      const why = error instanceof Error ? error.message : String(error);
      throw new EngineError(
        'store_failed',
        `the message could not be stored (${why}); it was not accepted: check the store, then submit it again`,
        {
          runId: request.runId,
        },
      );
    }
    return decided ?? this.decisionOf(request.runId, request.sessionId);
  }

  /**
   * The session keeps the arriving message as a run (admits, queues or drops it): it gets its
   * handle in the table now. A message the session steers or refuses never becomes one.
   */
  enter(runId: string): void {
    const arrival = this.arriving;
    const { table } = this.deps;
    if (arrival?.request.runId !== runId || table.has(runId)) return;
    table.add(table.newHandle(arrival.request, { stored: { createdAt: arrival.createdAt } }));
  }

  /** The arriving message, which the session steers into a running run (its steer record is made from it). */
  arrival(runId: string): Arrival | undefined {
    return this.arriving?.request.runId === runId ? this.arriving : undefined;
  }

  /**
   * The answer to a resubmit of a runId already stored: the first submit's outcome, read back
   * from what is stored (durable before that submit was answered, so it survives a restart) —
   * `steered` into the run its steer record names, else `queued` at the position of the run's
   * first `run.queued` event or `started` for a first `run.started`. A different request, a
   * record from before fingerprints were kept, or a run that never got that far (its admission
   * failed) is `duplicate_run_id`.
   */
  private async retried(request: AdmittedRequest): Promise<SubmitResult> {
    const { store } = this.deps;
    const { runId, sessionId } = request;
    const steer = await store.getSteer(runId);
    const stored = steer ?? (await store.getRun(runId));
    if (stored?.request.fingerprint === undefined || stored.request.fingerprint !== request.fingerprint)
      throw duplicateRunId(runId);
    if (steer) return { runId, sessionId, outcome: 'steered', intoRunId: steer.into };
    const first = (await store.readEvents(runId)).find((e) => e.type === 'run.queued' || e.type === 'run.started');
    if (first?.type === 'run.queued') return { runId, sessionId, outcome: 'queued', position: first.position };
    if (first?.type === 'run.started') return { runId, sessionId, outcome: 'started' };
    throw duplicateRunId(runId);
  }

  /** The session (and, for a run it admits, the limiter) decides on an admitted request, synchronously. */
  private decide(request: AdmittedRequest): void {
    const workspace = this.deps.table.workspaceFor(request);
    this.arriving = { request, createdAt: isoNow(this.deps.clock) };
    try {
      this.submitToSession(request, workspace);
    } finally {
      this.arriving = undefined;
    }
  }

  private submitToSession(request: AdmittedRequest, workspace: string): void {
    this.deps.sessions.submit(request.sessionId, {
      runId: request.runId,
      policy: request.busyPolicy,
      plainText: request.plainText,
      ...(request.modelOverride !== undefined ? { model: request.modelOverride } : {}),
      ...(request.workspace !== undefined ? { workspace: request.workspace } : {}),
      runModel: request.model,
      runWorkspace: workspace,
      ...(request.expectedRunId !== undefined ? { expectedRunId: request.expectedRunId } : {}),
      ...(request.startBy !== undefined ? { startBy: request.startBy } : {}),
      ...withCollectKey(collectKeyOf(request, workspace)),
    });
  }

  /** What the session (and, for an admitted run, the limiter) decided, read off the run's state. */
  private decisionOf(runId: string, sessionId: string): SubmitResult {
    const base = { runId, sessionId };
    const into = this.deps.steers.targetOf(runId);
    if (into !== undefined) return { ...base, outcome: 'steered', intoRunId: into };
    const refused = this.deps.busy.takeRejection(runId, sessionId, this.deps.config().execution.wait_lane_capacity);
    if (refused) throw refused;
    const handle = this.deps.table.get(runId);
    if (!handle) throw new Error(`session made no decision for run ${runId}`);
    if (handle.status.state !== 'queued') return { ...base, outcome: 'started' };
    if (handle.status.position === undefined) {
      this.deps.table.delete(runId);
      throw new Error(`session made no decision for run ${runId}`);
    }
    return { ...base, outcome: 'queued', position: handle.status.position };
  }

  private idTaken(runId: string): boolean {
    return this.deps.table.has(runId) || this.deps.steers.targetOf(runId) !== undefined;
  }

  private assertFreeId(runId: string): void {
    if (this.idTaken(runId)) throw duplicateRunId(runId);
  }
}

function withCollectKey(collectKey: string | undefined): { collectKey?: string } {
  return collectKey !== undefined ? { collectKey } : {};
}

function duplicateRunId(runId: string): EngineError {
  return new EngineError('duplicate_run_id', `runId "${runId}" is already in use; omit runId to get a generated one`, {
    runId,
  });
}
