/*
 * Where an id leads, for the questions callers ask about it (status, getRun, wait, history):
 * a run live in the table, a steer (whose answers are those of the run that read it or the
 * follow-up that carries it), or, for what finished before a restart, the store.
 */
import { EngineError } from '../core/errors.js';
import type { RunEvent } from '../core/run-events.js';
import { isTerminalState, resultOf, type RunResult, type RunStatus } from '../core/run-status.js';
import { runOfSteer, steerFields } from '../core/steer.js';
import type { Store } from '../store/types.js';
import type { EventLog } from './event-log.js';
import type { RunTable, WaitOptions } from './run-table.js';
import type { Steers } from './steers.js';

export class RunLookup {
  constructor(
    private readonly table: RunTable,
    private readonly steers: Steers,
    private readonly store: Store,
    private readonly log: EventLog,
  ) {}

  /** The live status, synchronously; a steer's id gives its run's status plus the steer. */
  status(id: string): RunStatus | undefined {
    const steer = this.steers.get(id);
    const handle = this.table.get(steer ? runOfSteer(steer) : id);
    if (!handle) return undefined;
    // A copy: the caller may keep or change it, the run's own status changes only through its ledger.
    const { denied, ...status } = handle.status;
    const copy: RunStatus = { ...status, ...(denied !== undefined ? { denied: [...denied] } : {}) };
    return steer ? { ...copy, steer: steerFields(steer) } : copy;
  }

  /** The status from memory or, for a run that finished before a restart, from the store. */
  async getRun(id: string): Promise<RunStatus | undefined> {
    const live = this.status(id);
    if (live) return live;
    await this.log.settled();
    const record = await this.store.getRun(id);
    const steer = await this.steers.find(id);
    // A merged `collect` message answers for the run that carried it, whatever its own record says.
    if (record && !(steer && runOfSteer(steer) !== id)) {
      const { request: _request, ...status } = record;
      // A steer that became a run of its own (requeued) says so.
      return steer ? { ...status, steer: steerFields(steer) } : status;
    }
    if (!steer || runOfSteer(steer) === id) return undefined;
    const into = await this.getRun(runOfSteer(steer));
    return into && { ...into, steer: steerFields(steer) };
  }

  async wait(id: string, options: WaitOptions): Promise<RunResult> {
    // A steer's id stands for the run it went into; a steer that run never read moves on to a follow-up.
    for (;;) {
      const target = this.steers.targetOf(id) ?? id;
      const result = await this.waitRun(target, options);
      if ((this.steers.targetOf(id) ?? id) === target) return result;
    }
  }

  async history(id: string): Promise<RunEvent[]> {
    await this.log.settled();
    return this.store.readEvents(await this.steers.runOf(id));
  }

  private async waitRun(runId: string, options: WaitOptions): Promise<RunResult> {
    const handle = this.table.get(runId);
    if (handle) return this.table.settled(handle, options);
    await this.log.settled();
    // A steer (a merged or promoted message too) from before a restart answers with the fate of
    // the run it went into, whatever its own record says (a merged message's ends `merged`).
    const into = await this.steers.runOf(runId);
    if (into !== runId) return this.wait(into, options);
    const record = await this.store.getRun(runId);
    if (record && isTerminalState(record.state)) return resultOf({ ...record, state: record.state });
    throw new EngineError('not_found', `no run "${runId}"`, { runId });
  }
}
