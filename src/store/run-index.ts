/*
 * The index behind Store.queryRuns (its contract is in types.ts), shared by the stores that
 * keep it as lists: where a save puts a run, and how a page is read from the lists. A store
 * keeps, each in ascending position: every run's entries, each session's, each terminal
 * state's and each (terminal state, outcome)'s; and its open runs on the side.
 *
 * A list only grows: a run that ends gets a new entry at its new position, and the entry of
 * its old one stays behind. An entry is current while the run still holds that position;
 * reading skips the others, so a list never needs rewriting and a crash between two list
 * writes leaves at most entries that are skipped.
 */
import { isTerminalState } from '../core/run-status.js';
import { checkRunQuery, cursorOf, passesStateFilters, runOutcomeOf, runSummaryOf, statesOf } from './run-summary.js';
import { isStoreError } from './store-error.js';
import type { RunPage, RunQuery, RunRecord, RunState, SkippedRun } from './types.js';

/** One entry of a list: the run's position, id, and state and outcome when it took the position. */
export type RunIndexEntry = [position: number, runId: string, state: RunState, outcome: string | null];

export type RunList =
  | { kind: 'all' }
  | { kind: 'session'; sessionId: string }
  | { kind: 'state'; state: RunState }
  | { kind: 'outcome'; state: RunState; outcome: string };

/** Where a run is in the index: what the store remembers of it between saves. */
export interface PlacedRun {
  position: number;
  state: RunState;
  outcome: string | undefined;
}

export interface RunPlacement {
  placed: PlacedRun;
  /** The lists that get an entry for the new position; empty when the run keeps its position. */
  lists: RunList[];
  entry: RunIndexEntry;
}

/**
 * Places a saved run: a new position at its first save and at the save that first ends it
 * (or changes how it ended), the old one otherwise. `previous` is unknown for a run the store
 * has not placed (or no longer remembers: then an ended run is placed again, at the top).
 */
export function placeRun(record: RunRecord, previous: PlacedRun | undefined, nextPosition: () => number): RunPlacement {
  const outcome = runOutcomeOf(record);
  const { state, runId, sessionId } = record;
  const ended = isTerminalState(state);
  const moves = previous === undefined || (ended && (previous.state !== state || previous.outcome !== outcome));
  const position = moves ? nextPosition() : previous.position;
  const lists: RunList[] = [];
  if (moves) {
    lists.push({ kind: 'all' }, { kind: 'session', sessionId });
    if (ended) lists.push({ kind: 'state', state }, { kind: 'outcome', state, outcome: outcome! });
  }
  return { placed: { position, state, outcome }, lists, entry: [position, runId, state, outcome ?? null] };
}

/** What a store gives queryPage to read its index with. */
export interface RunIndexReader {
  /** The entries of one list with a position below `before`, highest position first. */
  backward(list: RunList, before: number): AsyncIterable<RunIndexEntry>;
  /** An entry for each run not ended, with a position below `before`, highest first. */
  unended(before: number): Iterable<RunIndexEntry> | AsyncIterable<RunIndexEntry>;
  /** The run's latest record if `entry` is still its position, else undefined. */
  current(entry: RunIndexEntry): Promise<RunRecord | undefined>;
}

/** The lists that hold every run a query can match, each newest first. */
function sourcesOf(query: RunQuery, before: number, index: RunIndexReader): AsyncIterator<RunIndexEntry>[] {
  const iterate = (entries: AsyncIterable<RunIndexEntry> | Iterable<RunIndexEntry>): AsyncIterator<RunIndexEntry> =>
    Symbol.asyncIterator in entries ? entries[Symbol.asyncIterator]() : toAsync(entries[Symbol.iterator]());
  if (query.sessionId !== undefined)
    return [iterate(index.backward({ kind: 'session', sessionId: query.sessionId }, before))];
  const states = statesOf(query);
  if (states.length === 5) return [iterate(index.backward({ kind: 'all' }, before))];
  const sources: AsyncIterator<RunIndexEntry>[] = [];
  if (states.some((state) => !isTerminalState(state))) sources.push(iterate(index.unended(before)));
  for (const state of states.filter(isTerminalState)) {
    const list: RunList =
      query.outcome === undefined ? { kind: 'state', state } : { kind: 'outcome', state, outcome: query.outcome };
    sources.push(iterate(index.backward(list, before)));
  }
  return sources;
}

/** Reads one page: merges the query's lists by position, skipping entries that are not current or do not match. */
export async function queryPage(query: RunQuery, index: RunIndexReader): Promise<RunPage> {
  const before = checkRunQuery(query);
  const sources = sourcesOf(query, before, index);
  const heads = await Promise.all(sources.map((source) => source.next()));
  const found: { position: number; record: RunRecord }[] = [];
  const skipped: SkippedRun[] = [];
  try {
    while (found.length <= query.limit) {
      let pick = -1;
      heads.forEach((head, i) => {
        if (!head.done && (pick < 0 || head.value[0] > (heads[pick]!.value as RunIndexEntry)[0])) pick = i;
      });
      if (pick < 0) break;
      const entry = heads[pick]!.value as RunIndexEntry;
      heads[pick] = await sources[pick]!.next();
      const [position, , state, outcome] = entry;
      // An ended run's entry is final: one that cannot match is passed over unread.
      if (isTerminalState(state) && !passesStateFilters(query, state, outcome ?? undefined)) continue;
      let record: RunRecord | undefined;
      try {
        record = await index.current(entry);
      } catch (error) {
        // One damaged run does not take the list down with it: it is left out and named.
        if (!isStoreError(error) || error.code !== 'corrupt_file') throw error;
        if (!skipped.some((s) => s.runId === entry[1]))
          skipped.push({ runId: entry[1], code: 'corrupt_file', message: error.message });
        continue;
      }
      if (!record || (query.sessionId !== undefined && record.sessionId !== query.sessionId)) continue;
      if (!passesStateFilters(query, record.state, runOutcomeOf(record))) continue;
      found.push({ position, record });
    }
  } finally {
    await Promise.all(sources.map((source) => source.return?.()));
  }
  const page = found.slice(0, query.limit);
  return {
    runs: page.map(({ record }) => runSummaryOf(record)),
    ...(found.length > query.limit ? { cursor: cursorOf(page.at(-1)!.position) } : {}),
    ...(skipped.length > 0 ? { skipped } : {}),
  };
}

function toAsync<T>(iterator: Iterator<T>): AsyncIterator<T> {
  return { next: () => Promise.resolve(iterator.next()) };
}
