/*
 * Restart recovery: picks up where a previous engine on the same store stopped, however it
 * stopped. Every run whose end was not fully stored is repaired (a terminal record without
 * its terminal event gets the event; a terminal event with a stale record gets the record);
 * a run that was running ends `failed` / `interrupted` (its log continues without a gap);
 * every message that was waiting — in a lane, admitted and waiting for permits — is queued
 * again, in order; each pending steer is settled from the log (read exactly once, or carried
 * by exactly one follow-up run); approval grants come back.
 */
import type { RunOutcome } from '../../machines/run.machine.js';
import type { SessionGrants } from '../approval/index.js';
import type { RunEvent } from '../core/run-events.js';
import { isTerminalEvent } from '../core/run-events.js';
import { isTerminalState } from '../core/run-status.js';
import { collectKeyOf } from './collect.js';
import type { RunRecord, SessionWork, SteerRecord, Store, StoredLaneEntry } from '../store/types.js';
import type { BusyMessages } from './busy-messages.js';
import type { EventLog } from './event-log.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';
import type { Steers } from './steers.js';

export interface RecoveryDeps {
  store: Store;
  log: EventLog;
  grants: SessionGrants;
  table: RunTable;
  ledger: RunLedger;
  sessions: SessionHost;
  steers: Steers;
  /** Told the text of runs a restored lane's notices name (rolled back, dropped by summarize_oldest). */
  busy?: Pick<BusyMessages, 'rememberInput'>;
}

export interface Recovered {
  interrupted: string[];
  requeued: string[];
  /** Runs whose record and log disagreed, repaired. */
  repaired: string[];
}

export async function recover(deps: RecoveryDeps): Promise<Recovered> {
  const { store } = deps;
  for (const [sessionId, fingerprints] of Object.entries((await store.readGrants?.()) ?? {})) {
    deps.grants.restore(sessionId, fingerprints);
  }
  const open = await store.openRuns();
  const pendingSteers = await store.pendingSteers();
  if (open.length === 0 && pendingSteers.length === 0) return { interrupted: [], requeued: [], repaired: [] };
  return recoverWork(deps, open, pendingSteers, await store.readLanes());
}

/**
 * The same for one session, taken over from a process that died, stalled or let it go (a
 * cluster's takeover): only that session's runs, steers, lane and grants are read and repaired.
 */
export async function recoverSession(deps: RecoveryDeps, sessionId: string): Promise<Recovered> {
  const { store } = deps;
  const work = store.readSessionWork ? await store.readSessionWork(sessionId) : await sessionWorkOf(store, sessionId);
  deps.grants.restore(sessionId, work.grants);
  if (work.open.length === 0 && work.pendingSteers.length === 0) return { interrupted: [], requeued: [], repaired: [] };
  return recoverWork(deps, work.open, work.pendingSteers, { [sessionId]: work.lane });
}

async function sessionWorkOf(store: Store, sessionId: string): Promise<SessionWork> {
  const lane = (await store.readLanes())[sessionId] ?? [];
  return {
    open: (await store.openRuns()).filter((r) => r.sessionId === sessionId),
    pendingSteers: (await store.pendingSteers()).filter((s) => s.sessionId === sessionId),
    lane,
    grants: ((await store.readGrants?.()) ?? {})[sessionId] ?? [],
  };
}

async function recoverWork(
  deps: RecoveryDeps,
  open: RunRecord[],
  pendingSteers: SteerRecord[],
  lanes: Record<string, StoredLaneEntry[]>,
): Promise<Recovered> {
  const { store, log, table, ledger, sessions } = deps;
  const result: Recovered = { interrupted: [], requeued: [], repaired: [] };
  for (const sessionId of new Set([...open.map((r) => r.sessionId), ...pendingSteers.map((s) => s.sessionId)])) {
    log.restoreSessionSeq(sessionId, await sessions.numbering.stored(sessionId));
    sessions.numbering.markLoaded(sessionId);
  }
  const admitted = new Map<string, RunHandle[]>();
  const queued = new Map<string, RunHandle>();
  const collected = await collectedMessages(deps, open);
  for (const record of open) {
    if (collected.has(record.runId)) continue;
    const events = await store.readEvents(record.runId);
    log.restoreSeq(record.runId, events.at(-1)?.seq ?? 0, record.sessionId, 0);
    const terminal = events.findLast(isTerminalEvent);
    if (terminal && !isTerminalState(record.state)) {
      ledger.settleInBackground(store.saveRun(recordFromTerminalEvent(record, terminal)));
      result.repaired.push(record.runId);
      continue;
    }
    const { request: _request, ...stored } = record;
    const handle = table.newHandle(record.request, { stored });
    table.add(handle);
    if (isTerminalState(record.state)) {
      // Its record ended before the crash, its log did not: the log gets the same ending.
      result.repaired.push(record.runId);
      ledger.inputConsumed(handle);
      ledger.endRun(handle, outcomeOf(record), {
        turns: count(events, 'turn.started'),
        toolCalls: count(events, 'tool.started'),
      });
      ledger.settleRun(handle);
    } else if (record.state === 'running') {
      result.interrupted.push(record.runId);
      // Its input entered the conversation when it started; only a run that never did carries it.
      ledger.inputConsumed(handle);
      ledger.endRun(handle, {
        state: 'failed',
        error: {
          code: 'interrupted',
          message: 'the engine stopped while this run was running; submit it again to retry',
        },
      });
      ledger.settleRun(handle);
    } else if (record.queuedFor === 'limits') {
      admitted.set(record.sessionId, [...(admitted.get(record.sessionId) ?? []), handle]);
    } else {
      queued.set(record.runId, handle);
    }
  }
  const steerFollowUps = await recoverSteers(deps, pendingSteers);
  const sessionIds = new Set([
    ...steerFollowUps.keys(),
    ...admitted.keys(),
    ...[...queued.values()].map((h) => h.status.sessionId),
  ]);
  for (const sessionId of sessionIds) {
    const lane = lanes[sessionId] ?? [];
    const inLane = lane.map((e) => queued.get(e.runId)).filter((h): h is RunHandle => h !== undefined);
    const strays = [...queued.values()].filter((h) => h.status.sessionId === sessionId && !inLane.includes(h));
    const order = [...(steerFollowUps.get(sessionId) ?? []), ...(admitted.get(sessionId) ?? []), ...inLane, ...strays];
    const entries = order.map((h) => {
      const stored = lane.find((e) => e.runId === h.status.runId);
      return {
        runId: h.status.runId,
        viaInterrupt: stored?.viaInterrupt ?? false,
        ...(stored?.viaRollback ? { viaRollback: true } : {}),
        ...(stored?.rollsBack !== undefined ? { rollsBack: stored.rollsBack } : {}),
        // The point in time it must leave the lane by stays what it was: time spent down counts.
        ...(stored?.leaveBy !== undefined ? { leaveBy: stored.leaveBy } : {}),
        model: h.request.model,
        workspace: table.workspaceOf(h),
        plainText: h.request.plainText,
        ...(h.request.startBy !== undefined ? { startBy: h.request.startBy } : {}),
        ...(h.status.carries === undefined && collectKeyOf(h.request, table.workspaceOf(h)) !== undefined
          ? { collectKey: collectKeyOf(h.request, table.workspaceOf(h)) }
          : {}),
      };
    });
    const summarizes = lane[0]?.summarizes ?? [];
    await rememberNoticeInputs(deps, [...summarizes, ...lane.flatMap((e) => (e.rollsBack ? [e.rollsBack] : []))]);
    result.requeued.push(...entries.map((e) => e.runId));
    sessions.restore(sessionId, entries, summarizes);
  }
  return result;
}

/** Hands the busy messages the stored text of the runs a restored lane's notices name. */
async function rememberNoticeInputs({ store, busy }: RecoveryDeps, runIds: string[]): Promise<void> {
  if (!busy) return;
  for (const runId of new Set(runIds)) {
    const record = await store.getRun(runId);
    if (record) busy.rememberInput(runId, record.request.input);
  }
}

/**
 * Waiting messages that became part of another run: `collect` messages an open run's record
 * carries (that record is the write that consumed them) or stored as merged, and messages
 * promoted to a steer (their steer record stands for them; a pending one is recovered as a
 * steer). They are not queued again; their ids answer for the run that carries them. A merged
 * message's own record, still `queued` when the crash came before it ended, ends `merged`.
 */
async function collectedMessages(deps: RecoveryDeps, open: RunRecord[]): Promise<Set<string>> {
  const { store, steers } = deps;
  const collected = new Set<string>();
  const byId = new Map(open.map((r) => [r.runId, r]));
  const ended: [RunRecord, string][] = [];
  for (const carrier of open) {
    for (const id of carrier.carries ?? []) {
      const message = byId.get(id);
      if (id === carrier.runId || !message || message.state !== 'queued') continue;
      collected.add(id);
      ended.push([message, 'merged']);
      steers.settle({
        steerId: id,
        sessionId: message.sessionId,
        into: carrier.runId,
        state: 'merged',
        followUp: carrier.runId,
        createdAt: message.createdAt,
        request: message.request,
      });
    }
  }
  for (const record of open) {
    if (record.state !== 'queued' || collected.has(record.runId)) continue;
    const steer = await store.getSteer(record.runId);
    // A steer requeued under the message's id is the follow-up run whose record this is.
    if (!steer || steer.state === 'requeued') continue;
    collected.add(record.runId);
    if (steer.state === 'pending') continue;
    steers.remember(steer);
    // Settled for good (read, or merged into a run of other ids): its own record ends too.
    ended.push([
      record,
      record.request.busyPolicy === 'collect' && steer.into === steer.followUp ? 'merged' : 'promoted',
    ]);
  }
  for (const [record, reason] of ended) await endCarried(deps, record, reason);
  return collected;
}

/**
 * A message another run carries ends its own record and log `cancelled` with `reason`
 * (`merged`, `promoted`); its id answers for the carrying run through its steer record.
 */
async function endCarried(
  { store, log, table, ledger }: RecoveryDeps,
  record: RunRecord,
  reason: string,
): Promise<void> {
  const { request: _request, ...stored } = record;
  const handle = table.newHandle(record.request, { stored });
  ledger.inputConsumed(handle);
  const events = await store.readEvents(record.runId);
  log.restoreSeq(record.runId, events.at(-1)?.seq ?? 0, record.sessionId, 0);
  ledger.endRun(handle, { state: 'cancelled', reason });
  ledger.settleRun(handle);
}

/**
 * Settles each pending steer from what is stored: read by its run (its `run.steered` event is
 * in the run's log), carried by a follow-up whose record landed, or neither — then the steers
 * of one run become one follow-up run, for the front of the session's lane.
 */
async function recoverSteers(
  { store, ledger, steers }: RecoveryDeps,
  pending: SteerRecord[],
): Promise<Map<string, RunHandle[]>> {
  const settled = new Set<string>();
  for (const steer of pending) {
    if (settled.has(steer.steerId)) continue;
    const followUp = await store.getRun(steer.steerId);
    // A follow-up's record lists what it carries; a promoted message's own record (same id) does not.
    if (followUp?.carries?.includes(steer.steerId)) {
      for (const id of followUp.carries ?? [steer.steerId]) {
        const carried = id === steer.steerId ? steer : pending.find((s) => s.steerId === id);
        if (!carried) continue;
        steers.settle({
          ...carried,
          ...(id === steer.steerId ? { state: 'requeued' } : { state: 'merged' }),
          followUp: steer.steerId,
        });
        settled.add(id);
      }
      continue;
    }
    const read = (await store.readEvents(steer.into)).find(
      (e) => e.type === 'run.steered' && e.steerId === steer.steerId,
    );
    if (read?.type === 'run.steered') {
      steers.settle({
        ...steer,
        state: 'consumed',
        ...(read.consumedAtTurn !== undefined ? { consumedAtTurn: read.consumedAtTurn } : {}),
      });
      settled.add(steer.steerId);
    }
  }
  const byTarget = new Map<string, SteerRecord[]>();
  for (const steer of pending) {
    if (settled.has(steer.steerId)) continue;
    steers.remember(steer);
    byTarget.set(steer.into, [...(byTarget.get(steer.into) ?? []), steer]);
  }
  const followUps = new Map<string, RunHandle[]>();
  for (const group of byTarget.values()) {
    const [first] = group;
    const handle = steers.followUpOf(
      first!.request,
      group.map((s) => ({ steerId: s.steerId, text: s.request.input })),
      0,
      first!.createdAt,
    );
    ledger.markQueued(handle.status.runId, 1, 'session_busy');
    followUps.set(first!.sessionId, [...(followUps.get(first!.sessionId) ?? []), handle]);
  }
  return followUps;
}

function outcomeOf(record: RunRecord): RunOutcome {
  if (record.state === 'completed') return { state: 'completed', output: record.output ?? '' };
  if (record.state === 'cancelled') return { state: 'cancelled', reason: record.reason ?? 'cancelled' };
  return {
    state: 'failed',
    error: record.error ?? { code: 'internal', message: 'the run failed before the engine stopped' },
  };
}

function recordFromTerminalEvent(record: RunRecord, event: RunEvent): RunRecord {
  const { queuedFor: _queuedFor, ...rest } = record;
  const ended = { ...rest, endedAt: event.at };
  if (event.type === 'run.completed') return { ...ended, state: 'completed', output: event.output };
  if (event.type === 'run.cancelled') return { ...ended, state: 'cancelled', reason: event.reason };
  if (event.type === 'run.failed') return { ...ended, state: 'failed', error: event.error };
  return record;
}

function count(events: RunEvent[], type: RunEvent['type']): number {
  return events.filter((e) => e.type === type).length;
}
