/*
 * Steers: messages accepted into a running run, to be read at its next turn boundary. Each is
 * a record of its own (core/steer.ts), stored when accepted: pending until the run reads it,
 * or — when the run ends first, or the steer's deadline passes first and it escalates to the
 * lane — handed over to a follow-up run at the front of the lane.
 * A steer is settled in the store only after what settles it is durable (the `run.steered`
 * event, the follow-up run's record), so a crash in between leaves it pending and recovery
 * decides from the log: read exactly once, or re-queued exactly once.
 */
import type { PendingSteer } from '../../machines/run.machine.js';
import type { Clock } from '../core/clock.js';
import type { AdmittedRequest } from '../core/run-request.js';
import { runOfSteer } from '../core/steer.js';
import type { SteerRecord, Store } from '../store/types.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';

/** Follow-ups of follow-ups (a model that keeps ignoring steers) start over at depth 0 after this. */
const MAX_FOLLOW_UPS = 2;
/** Settled steers kept in memory for wait()/status(); older ones are read from the store. */
const SETTLED_STEERS_KEPT = 10_000;

export interface SteersDeps {
  table: RunTable;
  sessions: SessionHost;
  store: Store;
  clock: Clock;
  /** Contract: must not throw; reports a failed background write. */
  settleInBackground: (result: void | Promise<void>) => void;
  /** True once the engine is closing: nothing is handed over any more. */
  closing: () => boolean;
}

export class Steers {
  private readonly steers = new Map<string, SteerRecord>();

  constructor(private readonly deps: SteersDeps) {}

  /** The steer with this id, while the engine remembers it. */
  get(id: string): SteerRecord | undefined {
    return this.steers.get(id);
  }

  /** The run a steer's id answers for (the run that read it, or the follow-up carrying it). */
  targetOf(id: string): string | undefined {
    const steer = this.steers.get(id);
    return steer ? runOfSteer(steer) : undefined;
  }

  /** The steer with this id, from memory or from the store (a steer from before a restart). */
  async find(id: string): Promise<SteerRecord | undefined> {
    return this.steers.get(id) ?? this.deps.store.getSteer(id);
  }

  /** The run an id answers for: itself, or for a steer's id the run that read or carries it. */
  async runOf(id: string): Promise<string> {
    const known = this.targetOf(id);
    if (known !== undefined || this.deps.table.has(id)) return known ?? id;
    // A merged `collect` message has a record of its own, but answers for the run that carried it.
    const steer = await this.deps.store.getSteer(id);
    return steer ? runOfSteer(steer) : id;
  }

  /** The session decided to steer the arriving message into the running run `intoRunId`: its record is stored. */
  deliver(message: { request: AdmittedRequest; createdAt: string } | undefined, intoRunId: string): void {
    if (!message) return;
    const { table } = this.deps;
    const { request, createdAt } = message;
    const steerId = request.runId;
    this.save({ steerId, sessionId: request.sessionId, into: intoRunId, state: 'pending', createdAt, request });
    const text = request.input;
    const target = table.get(intoRunId);
    if (target?.actor && !target.ended) {
      const { steerDeadlineMs, steerEscalation } = request;
      const deadline =
        steerDeadlineMs !== undefined ? { deadlineMs: steerDeadlineMs, escalation: steerEscalation } : {};
      target.actor.send({ type: 'STEER', steer: { steerId, text, ...deadline } });
    } else if (target) {
      this.handOver(target, [{ steerId, text }], target.status.state === 'completed');
    }
  }

  /** The run read the steer at `turn` (its `run.steered` event is appended just before). */
  consumed(steerId: string, turn: number): void {
    this.settleAfterDurable(steerId, { state: 'consumed', consumedAtTurn: turn });
  }

  /**
   * The run ended with steers it never read: they become one follow-up run at the front of
   * the lane, under the first steer's id (a follow-up of a completed run counts its depth).
   */
  handOver(handle: RunHandle, steers: PendingSteer[], completed: boolean): void {
    if (steers.length === 0 || this.deps.closing()) return;
    const depth = completed ? this.deps.table.followUpDepthOf(handle) + 1 : 0;
    const followUp = this.followUpOf(handle.request, steers, depth > MAX_FOLLOW_UPS ? 0 : depth);
    // The follow-up's record is written as it is queued; the steers say so once it is durable.
    this.deps.sessions.requeueFront(handle.status.sessionId, {
      runId: followUp.status.runId,
      viaInterrupt: false,
      model: followUp.request.model,
      workspace: this.deps.table.workspaceOf(followUp),
    });
  }

  /**
   * A steer's deadline passed before the run read it (`queue` escalation): it leaves the run
   * and waits at the front of the lane as a run of its own, which starts when this run ends.
   */
  toLane(handle: RunHandle, steer: PendingSteer): void {
    if (this.deps.closing()) return;
    const followUp = this.followUpOf(handle.request, [steer], 0);
    this.deps.sessions.steersConsumed(handle.status.sessionId, handle.status.runId, 1);
    this.deps.sessions.requeueFront(handle.status.sessionId, {
      runId: followUp.status.runId,
      viaInterrupt: false,
      model: followUp.request.model,
      workspace: this.deps.table.workspaceOf(followUp),
    });
  }

  /**
   * A follow-up run (a handle in the table, queued) carrying `steers`, with the first steer's
   * id and the given request's settings; each steer is settled once the run's record is durable.
   * Recovery gives the first steer's `createdAt`: the follow-up dates from it.
   */
  followUpOf(request: AdmittedRequest, steers: PendingSteer[], depth: number, createdAt?: string): RunHandle {
    const [first] = steers;
    const runId = first!.steerId;
    const followUp = this.deps.table.newHandle(
      {
        ...request,
        runId,
        input: steers.map((s) => s.text).join('\n\n'),
        busyPolicy: 'queue',
        parentRunId: undefined,
        expectedRunId: undefined,
        // Its messages were accepted in time: a start deadline no longer applies.
        startBy: undefined,
      },
      {
        followUpDepth: depth,
        stored: { carries: steers.map((s) => s.steerId), ...(createdAt !== undefined ? { createdAt } : {}) },
      },
    );
    this.deps.table.add(followUp);
    for (const steer of steers) {
      this.settleAfterDurable(
        steer.steerId,
        steer.steerId === runId ? { state: 'requeued', followUp: runId } : { state: 'merged', followUp: runId },
      );
    }
    return followUp;
  }

  /**
   * A waiting `collect` message merged into the run `intoRunId`: from now on its id answers for
   * that run, like a steer's (stored after the carrying run's record, which consumed it).
   */
  collected(message: RunHandle, intoRunId: string): void {
    this.save({
      steerId: message.status.runId,
      sessionId: message.status.sessionId,
      into: intoRunId,
      state: 'merged',
      followUp: intoRunId,
      createdAt: message.status.createdAt,
      request: message.request,
    });
  }

  /** After a restart: a steer whose fate recovery decided, remembered for wait() and status(). */
  remember(steer: SteerRecord): void {
    this.keep(steer);
  }

  /** Saves a steer settled by recovery (its stored record said pending). */
  settle(steer: SteerRecord): void {
    this.save(steer);
  }

  private settleAfterDurable(steerId: string, change: Partial<SteerRecord>): void {
    const steer = this.steers.get(steerId);
    if (!steer) return;
    const settled = { ...steer, ...change };
    this.keep(settled);
    this.deps.settleInBackground(this.deps.store.durable().then(() => this.deps.store.saveSteer(settled)));
  }

  private save(steer: SteerRecord): void {
    this.keep(steer);
    this.deps.settleInBackground(this.deps.store.saveSteer(steer));
  }

  private keep(steer: SteerRecord): void {
    this.steers.delete(steer.steerId);
    this.steers.set(steer.steerId, steer);
    if (this.steers.size > SETTLED_STEERS_KEPT) {
      for (const [id, old] of this.steers) {
        if (this.steers.size <= SETTLED_STEERS_KEPT) break;
        if (old.state !== 'pending') this.steers.delete(id);
      }
    }
  }
}
