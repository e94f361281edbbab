/*
 * Steers: messages accepted into a running run, to be read at its next turn boundary. Each is
 * a record of its own — pending until the run consumes it, or, when the run ends first,
 * handed over to a follow-up run at the front of the lane. wait() on a steer's id follows it
 * to the run it went into. Every pending steer is stored, so a restart loses none.
 */
import type { PendingSteer } from '../../machines/run.machine.js';
import { isoNow, type Clock } from '../core/clock.js';
import type { AdmittedRequest } from '../core/run-request.js';
import type { RunRecord, Store } from '../store/types.js';
import { recordOf, type RunHandle, type RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';

/** Follow-ups of follow-ups (a model that keeps ignoring steers) start over at depth 0 after this. */
const MAX_FOLLOW_UPS = 2;

interface Steer {
  steerId: string;
  /** The run the steer went into: the running run, or the follow-up that took it over. */
  into: string;
  /** Its stored record while it is pending; undefined once consumed or merged. */
  pending?: RunRecord;
}

export interface SteersDeps {
  table: RunTable;
  sessions: SessionHost;
  store: Store;
  clock: Clock;
  /** Contract: must not throw; reports a failed background write. */
  write: (result: void | Promise<void>) => void;
  /** True once the engine is closing: nothing is handed over any more. */
  closing: () => boolean;
}

export class Steers {
  private readonly steers = new Map<string, Steer>();

  constructor(private readonly deps: SteersDeps) {}

  /** The run a steer's id now stands for, or undefined when the id is not a steer's. */
  targetOf(id: string): string | undefined {
    return this.steers.get(id)?.into;
  }

  /** The session decided to steer this message into the running run `intoRunId`. */
  deliver(steerId: string, intoRunId: string): void {
    const { table } = this.deps;
    const steerHandle = table.get(steerId);
    const text = steerHandle?.request.input ?? '';
    const steer: Steer = { steerId, into: intoRunId };
    if (steerHandle) {
      steer.pending = { ...recordOf(steerHandle), state: 'queued', queuedFor: 'steer', steeredInto: intoRunId };
      this.deps.write(this.deps.store.saveRun(steer.pending));
    }
    table.delete(steerId);
    this.steers.set(steerId, steer);
    const target = table.get(intoRunId);
    if (target?.actor && !target.ended) {
      target.actor.send({ type: 'STEER', steer: { steerId, text } });
    } else if (target) {
      this.handOver(target, [{ steerId, text }], target.status.state === 'completed');
    }
  }

  /** The run read the steer at a turn boundary: its stored record says so. */
  consumed(steerId: string, byRunId: string): void {
    this.settle(steerId, `consumed as a steer by run ${byRunId}`);
  }

  /**
   * The run ended with steers it never read: they become one follow-up run at the front of
   * the lane, under the first steer's id (a follow-up of a completed run counts its depth).
   */
  handOver(handle: RunHandle, steers: PendingSteer[], completed: boolean): void {
    if (steers.length === 0 || this.deps.closing()) return;
    const [first, ...rest] = steers;
    const depth = completed ? handle.followUpDepth + 1 : 0;
    const request: AdmittedRequest = {
      ...handle.request,
      runId: first!.steerId,
      input: steers.map((s) => s.text).join('\n\n'),
      busyPolicy: 'queue',
      parentRunId: undefined,
      expectedRunId: undefined,
    };
    const followUp = this.deps.table.newHandle(request, depth > MAX_FOLLOW_UPS ? 0 : depth);
    this.deps.table.add(followUp);
    // The first steer is a run now; the others are merged into it.
    this.steers.delete(first!.steerId);
    for (const steer of rest) {
      this.settle(steer.steerId, `merged into run ${request.runId}`);
      this.steers.set(steer.steerId, { steerId: steer.steerId, into: request.runId });
    }
    this.deps.sessions.requeueFront(handle.status.sessionId, {
      runId: request.runId,
      viaInterrupt: false,
      model: request.model,
      workspace: followUp.workspace,
    });
  }

  /** After a restart: a steer merged into a restored follow-up run. */
  restoreMerged(steerId: string, intoRunId: string): void {
    this.steers.set(steerId, { steerId, into: intoRunId });
  }

  /** The run left the finished ring: ids that stood for it are forgotten too. */
  forgetInto(runId: string): void {
    for (const [steerId, steer] of this.steers) if (steer.into === runId) this.steers.delete(steerId);
  }

  private settle(steerId: string, reason: string): void {
    const steer = this.steers.get(steerId);
    const record = steer?.pending;
    if (!record) return;
    delete steer.pending;
    const { queuedFor: _queuedFor, ...rest } = record;
    this.deps.write(this.deps.store.saveRun({ ...rest, state: 'completed', endedAt: isoNow(this.deps.clock), reason }));
  }
}
