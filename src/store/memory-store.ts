/*
 * The in-memory Store: for tests, the simulator and embedding without persistence. Every
 * write completes synchronously, so events are published in the same tick they are stored.
 */
import type { RunEvent } from '../core/run-events.js';
import type { Message } from '../model/types.js';
import { isTerminalEvent } from '../core/run-events.js';
import { isTerminalState } from '../core/run-status.js';
import { MemoryRunIndex } from './memory-run-index.js';
import { queryPage } from './run-index.js';
import type { RunPage, RunQuery, RunRecord, RunState, SteerRecord, Store, StoredLaneEntry } from './types.js';

export class MemoryStore implements Store {
  readonly kind = 'memory';
  private readonly runs = new Map<string, RunRecord>();
  private readonly runEvents = new Map<string, RunEvent[]>();
  private readonly sessionEvents = new Map<string, RunEvent[]>();
  private readonly conversations = new Map<string, Message[]>();
  private readonly lanes = new Map<string, StoredLaneEntry[]>();
  private readonly grants = new Map<string, string[]>();
  private readonly steers = new Map<string, SteerRecord>();
  private runIndex = new MemoryRunIndex((runId) => this.runs.get(runId));

  saveRun(record: RunRecord): void {
    this.runs.set(record.runId, record);
    this.runIndex.save(record);
  }

  getRun(runId: string): Promise<RunRecord | undefined> {
    return Promise.resolve(this.runs.get(runId));
  }

  appendEvent(event: RunEvent): void {
    pushTo(this.runEvents, event.runId, event);
    pushTo(this.sessionEvents, event.sessionId, event);
  }

  readEvents(runId: string, afterSeq = 0): Promise<RunEvent[]> {
    return Promise.resolve(after(this.runEvents.get(runId), (e) => e.seq, afterSeq));
  }

  readSessionEvents(sessionId: string, afterSessionSeq = 0): Promise<RunEvent[]> {
    return Promise.resolve(after(this.sessionEvents.get(sessionId), (e) => e.sessionSeq, afterSessionSeq));
  }

  appendMessages(sessionId: string, messages: Message[]): void {
    for (const message of messages) pushTo(this.conversations, sessionId, message);
  }

  lastSessionSeq(sessionId: string): Promise<number> {
    return Promise.resolve(this.sessionEvents.get(sessionId)?.at(-1)?.sessionSeq ?? 0);
  }

  readConversation(sessionId: string): Promise<Message[]> {
    return Promise.resolve([...(this.conversations.get(sessionId) ?? [])]);
  }

  saveLane(sessionId: string, entries: StoredLaneEntry[]): void {
    if (entries.length === 0) this.lanes.delete(sessionId);
    else this.lanes.set(sessionId, [...entries]);
  }

  listRuns(states: readonly RunState[]): Promise<RunRecord[]> {
    return Promise.resolve([...this.runs.values()].filter((run) => states.includes(run.state)));
  }

  queryRuns(query: RunQuery): Promise<RunPage> {
    return queryPage(query, this.runIndex);
  }

  openRuns(): Promise<RunRecord[]> {
    const ended = (run: RunRecord) =>
      isTerminalState(run.state) && (this.runEvents.get(run.runId)?.some(isTerminalEvent) ?? false);
    return Promise.resolve([...this.runs.values()].filter((run) => !ended(run)));
  }

  saveSteer(record: SteerRecord): void {
    this.steers.set(record.steerId, record);
  }

  getSteer(steerId: string): Promise<SteerRecord | undefined> {
    return Promise.resolve(this.steers.get(steerId));
  }

  pendingSteers(): Promise<SteerRecord[]> {
    const pending = [...this.steers.values()].filter((steer) => steer.state === 'pending');
    return Promise.resolve(
      pending.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0)),
    );
  }

  saveGrants(sessionId: string, fingerprints: string[]): void {
    this.grants.set(sessionId, [...fingerprints]);
  }

  readGrants(): Promise<Record<string, string[]>> {
    return Promise.resolve(Object.fromEntries([...this.grants].map(([sessionId, fps]) => [sessionId, [...fps]])));
  }

  readLanes(): Promise<Record<string, StoredLaneEntry[]>> {
    return Promise.resolve(Object.fromEntries([...this.lanes].map(([sessionId, lane]) => [sessionId, [...lane]])));
  }

  /** Every write of the memory store is done when its call returns (and lost with the process). */
  durable(): Promise<void> {
    return Promise.resolve();
  }

  flush(): Promise<void> {
    return Promise.resolve();
  }

  /** A copy that shares no mutable state with this store (the simulator's picture of a disk). */
  copy(): MemoryStore {
    const copy = new MemoryStore();
    const lists = <T>(from: Map<string, T[]>, to: Map<string, T[]>) => {
      for (const [key, list] of from) to.set(key, [...list]);
    };
    for (const [key, value] of this.runs) copy.runs.set(key, value);
    copy.runIndex = this.runIndex.copy((runId) => copy.runs.get(runId));
    for (const [key, value] of this.steers) copy.steers.set(key, value);
    lists(this.runEvents, copy.runEvents);
    lists(this.sessionEvents, copy.sessionEvents);
    lists(this.conversations, copy.conversations);
    lists(this.lanes, copy.lanes);
    lists(this.grants, copy.grants);
    return copy;
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function pushTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Events are appended in order, so the first one past `from` is found by binary search. */
function after(list: RunEvent[] | undefined, key: (e: RunEvent) => number, from: number): RunEvent[] {
  if (!list) return [];
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (key(list[mid]!) <= from) lo = mid + 1;
    else hi = mid;
  }
  return list.slice(lo);
}
