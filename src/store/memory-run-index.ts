/*
 * The runs index of the memory store (run-index.ts): its lists as arrays in memory.
 */
import { isTerminalState } from '../core/run-status.js';
import { placeRun, type PlacedRun, type RunIndexEntry, type RunIndexReader, type RunList } from './run-index.js';
import type { RunRecord } from './types.js';

export class MemoryRunIndex implements RunIndexReader {
  private lastPosition = 0;
  private readonly placed = new Map<string, PlacedRun>();
  private readonly notEnded = new Map<string, PlacedRun>();
  private readonly lists = new Map<string, RunIndexEntry[]>();

  constructor(private readonly record: (runId: string) => RunRecord | undefined) {}

  /** Places a saved run (the record itself is kept by the store). */
  save(record: RunRecord): void {
    const { placed, lists, entry } = placeRun(record, this.placed.get(record.runId), () => ++this.lastPosition);
    this.placed.set(record.runId, placed);
    if (isTerminalState(placed.state)) this.notEnded.delete(record.runId);
    else this.notEnded.set(record.runId, placed);
    for (const list of lists) {
      const key = listKey(list);
      const entries = this.lists.get(key);
      if (entries) entries.push(entry);
      else this.lists.set(key, [entry]);
    }
  }

  async *backward(list: RunList, before: number): AsyncIterable<RunIndexEntry> {
    const entries = this.lists.get(listKey(list)) ?? [];
    for (let i = firstAtOrAbove(entries, before) - 1; i >= 0; i--) yield entries[i]!;
  }

  *unended(before: number): Iterable<RunIndexEntry> {
    const runs = [...this.notEnded]
      .filter(([, placed]) => placed.position < before)
      .sort(([, a], [, b]) => b.position - a.position);
    for (const [runId, { position, state }] of runs) yield [position, runId, state, null];
  }

  current([position, runId]: RunIndexEntry): Promise<RunRecord | undefined> {
    return Promise.resolve(this.placed.get(runId)?.position === position ? this.record(runId) : undefined);
  }

  /** A copy that shares nothing mutable, reading records through `record`. */
  copy(record: (runId: string) => RunRecord | undefined): MemoryRunIndex {
    const copy = new MemoryRunIndex(record);
    copy.lastPosition = this.lastPosition;
    for (const [runId, placed] of this.placed) copy.placed.set(runId, placed);
    for (const [runId, placed] of this.notEnded) copy.notEnded.set(runId, placed);
    for (const [key, entries] of this.lists) copy.lists.set(key, [...entries]);
    return copy;
  }
}

function listKey(list: RunList): string {
  switch (list.kind) {
    case 'all':
      return 'all';
    case 'session':
      return `session\0${list.sessionId}`;
    case 'state':
      return `state\0${list.state}`;
    case 'outcome':
      return `outcome\0${list.state}\0${list.outcome}`;
  }
}

/** Index of the first entry whose position is at least `position` (entries ascend). */
function firstAtOrAbove(entries: RunIndexEntry[], position: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid]![0] < position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
