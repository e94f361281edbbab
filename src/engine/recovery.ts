/*
 * Restart recovery: picks up where a previous engine on the same store stopped. A run that
 * was running ends `failed` / `interrupted` (its log continues without a gap); every message
 * that was waiting — in a lane, admitted and waiting for permits, or accepted as a steer and
 * not consumed — is queued again, in order; approval grants come back.
 */
import type { SessionGrants } from '../approval/index.js';
import { isoNow, type Clock } from '../core/clock.js';
import type { AdmittedRequest } from '../core/run-request.js';
import type { RunRecord, Store } from '../store/types.js';
import type { EventLog } from './event-log.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';
import type { SessionHost } from './session.host.js';
import type { Steers } from './steers.js';

export interface RecoveryDeps {
  store: Store;
  clock: Clock;
  log: EventLog;
  grants: SessionGrants;
  table: RunTable;
  ledger: RunLedger;
  sessions: SessionHost;
  steers: Steers;
}

export interface Recovered {
  interrupted: string[];
  requeued: string[];
}

export async function recover(deps: RecoveryDeps): Promise<Recovered> {
  const { store, log, table, ledger, sessions } = deps;
  for (const [sessionId, fingerprints] of Object.entries((await store.readGrants?.()) ?? {})) {
    deps.grants.restore(sessionId, fingerprints);
  }
  const open = await store.listRuns(['running', 'queued']);
  if (open.length === 0) return { interrupted: [], requeued: [] };
  const lanes = await store.readLanes();
  const sessionSeqs = new Map<string, number>();
  for (const record of open) {
    if (!sessionSeqs.has(record.sessionId)) sessionSeqs.set(record.sessionId, await sessions.storedSeq(record.sessionId));
    const events = await store.readEvents(record.runId);
    log.restoreSeq(record.runId, events.at(-1)?.seq ?? 0, record.sessionId, sessionSeqs.get(record.sessionId)!);
    sessions.markSeqLoaded(record.sessionId);
  }
  const steerFollowUps = restoreSteers(deps, open);
  const interrupted: string[] = [];
  const admitted = new Map<string, RunHandle[]>();
  const queued = new Map<string, RunHandle>();
  for (const record of open) {
    if (record.queuedFor === 'steer') continue;
    const handle = table.newHandle(record.request, 0);
    const { request: _request, ...status } = record;
    handle.status = { ...handle.status, ...status };
    table.add(handle);
    if (record.state === 'running') {
      interrupted.push(record.runId);
      // Its input entered the conversation when it started; only a run that never did carries it.
      handle.inbox = [];
      ledger.endRun(handle, { state: 'failed', error: { code: 'interrupted', message: 'the engine stopped while this run was running; submit it again to retry' } });
      ledger.settleRun(handle);
    } else if (record.queuedFor === 'limits') {
      const list = admitted.get(record.sessionId) ?? [];
      list.push(handle);
      admitted.set(record.sessionId, list);
    } else {
      queued.set(record.runId, handle);
    }
  }
  const requeued: string[] = [];
  const sessionIds = new Set([...steerFollowUps.keys(), ...admitted.keys(), ...[...queued.values()].map((h) => h.status.sessionId)]);
  for (const sessionId of sessionIds) {
    const lane = lanes[sessionId] ?? [];
    const inLane = lane.map((e) => queued.get(e.runId)).filter((h): h is RunHandle => h !== undefined);
    const strays = [...queued.values()].filter((h) => h.status.sessionId === sessionId && !inLane.includes(h));
    const order = [...(steerFollowUps.get(sessionId) ?? []), ...(admitted.get(sessionId) ?? []), ...inLane, ...strays];
    const entries = order.map((h) => ({
      runId: h.status.runId,
      viaInterrupt: lane.find((e) => e.runId === h.status.runId)?.viaInterrupt ?? false,
      model: h.request.model,
      workspace: h.workspace,
    }));
    requeued.push(...entries.map((e) => e.runId));
    sessions.restore(sessionId, entries);
  }
  return { interrupted, requeued };
}

/** Steers accepted but never consumed become one queued run per target, for the lane front. */
function restoreSteers({ table, ledger, steers, store, clock }: RecoveryDeps, open: RunRecord[]): Map<string, RunHandle[]> {
  const byTarget = new Map<string, RunRecord[]>();
  for (const record of open) {
    if (record.queuedFor !== 'steer') continue;
    const key = record.steeredInto ?? record.runId;
    byTarget.set(key, [...(byTarget.get(key) ?? []), record]);
  }
  const followUps = new Map<string, RunHandle[]>();
  for (const group of byTarget.values()) {
    const [first, ...rest] = group.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const request: AdmittedRequest = {
      ...first!.request,
      input: group.map((r) => r.request.input).join('\n\n'),
      busyPolicy: 'queue',
      expectedRunId: undefined,
    };
    const handle = table.newHandle(request, 0);
    handle.status.createdAt = first!.createdAt;
    table.add(handle);
    ledger.markQueued(first!.runId, 1, 'session_busy');
    for (const merged of rest) {
      steers.restoreMerged(merged.runId, first!.runId);
      const { queuedFor: _queuedFor, ...settled } = merged;
      ledger.write(store.saveRun({ ...settled, state: 'completed', endedAt: isoNow(clock), reason: `merged into run ${first!.runId}` }));
    }
    followUps.set(request.sessionId, [...(followUps.get(request.sessionId) ?? []), handle]);
  }
  return followUps;
}
