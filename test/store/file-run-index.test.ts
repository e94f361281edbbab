/*
 * The file store's runs index (src/store/file-run-index.ts) beyond the Store contract: a page
 * touches as many files as it has runs (plus a list segment or two) however many runs are
 * stored and however deep the page; entries left behind by a crash are skipped; an index that
 * is missing (older data) is rebuilt from the run files. bench/runs-query.bench.ts measures
 * the same with 10,000 runs.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/run-events.js';
import { LowdbStore, type RunQuery, type RunRecord } from '../../src/store/index.js';
import { runRecord } from './store-conformance.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-run-index-', 'afterAll');

/** Run i of a filled store: its session, and how it ended (a few are left open). */
function planOf(i: number, total: number): { sessionId: string; end: 'completed' | 'timeout' | 'superseded' | 'open' } {
  const sessionId = `s${i % 24}`;
  if (i >= total - 5) return { sessionId, end: 'open' };
  return { sessionId, end: i % 10 === 3 ? 'timeout' : i % 10 === 7 ? 'superseded' : 'completed' };
}

/** Saves `total` runs as the engine does (queued, then ended with the terminal event in its logs). */
async function fill(store: LowdbStore, total: number): Promise<void> {
  const sessionSeq = new Map<string, number>();
  for (let from = 0; from < total; from += 400) {
    const writes: Promise<void>[] = [];
    for (let i = from; i < Math.min(total, from + 400); i++) {
      const { sessionId, end } = planOf(i, total);
      const queued = runRecord(
        `run-${i}`,
        'queued',
        sessionId,
        new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      );
      writes.push(store.saveRun(queued));
      if (end === 'open') continue;
      const { output: _output, error: _error, ...base } = queued;
      const endedAt = queued.createdAt;
      const ended: RunRecord =
        end === 'completed'
          ? { ...base, state: 'completed', output: 'ok', endedAt, turns: 2, toolCalls: 3 }
          : end === 'timeout'
            ? { ...base, state: 'failed', error: { code: 'timeout', message: 'too slow' }, endedAt }
            : { ...base, state: 'cancelled', reason: 'superseded', endedAt };
      writes.push(store.saveRun(ended));
      const next = (sessionSeq.get(sessionId) ?? 0) + 1;
      sessionSeq.set(sessionId, next);
      const at = endedAt;
      const terminal: RunEvent =
        ended.state === 'completed'
          ? {
              type: 'run.completed',
              runId: ended.runId,
              sessionId,
              seq: 1,
              sessionSeq: next,
              at,
              output: 'ok',
              usage: { turns: 2 },
              toolCalls: 3,
            }
          : ended.state === 'failed'
            ? { type: 'run.failed', runId: ended.runId, sessionId, seq: 1, sessionSeq: next, at, error: ended.error! }
            : {
                type: 'run.cancelled',
                runId: ended.runId,
                sessionId,
                seq: 1,
                sessionSeq: next,
                at,
                reason: 'superseded',
              };
      writes.push(store.appendEvent(terminal));
    }
    await Promise.all(writes);
  }
}

describe('LowdbStore runs index with 1,200 runs stored', () => {
  const TOTAL = 1200;
  const LIMIT = 50;
  /** A page may also read the segment files of its lists (and, the first time, their directory and tail). */
  const LIST_READS = 6;
  let dir = '';
  let store: LowdbStore;

  beforeAll(async () => {
    dir = await tempDir();
    const filling = await LowdbStore.open(dir);
    await fill(filling, TOTAL);
    await filling.close();
  }, 120_000);

  /**
   * The files one page reads, after walking `skip` pages; each case opens the store afresh, so
   * nothing is in memory that a restart would not have.
   */
  async function pageReads(query: RunQuery, skip = 0): Promise<{ reads: number; ids: string[] }> {
    store = await LowdbStore.open(dir);
    try {
      let before: string | undefined;
      for (let i = 0; i < skip; i++)
        before = (await store.queryRuns({ ...query, ...(before ? { before } : {}) })).cursor;
      const readsBefore = store.stats().fileReads;
      const page = await store.queryRuns({ ...query, ...(before ? { before } : {}) });
      return { reads: store.stats().fileReads - readsBefore, ids: page.runs.map((r) => r.runId) };
    } finally {
      await store.close();
    }
  }

  // The fill saved (and ended) the runs in order, so positions follow i.
  const indices = Array.from({ length: TOTAL }, (_, i) => i);
  const expected = (keep: (i: number) => boolean) =>
    indices
      .filter(keep)
      .reverse()
      .map((i) => `run-${i}`);

  it.each<[string, Omit<RunQuery, 'limit'>, (i: number) => boolean]>([
    ['every run', {}, () => true],
    ['one session', { sessionId: 's7' }, (i) => planOf(i, TOTAL).sessionId === 's7'],
    ['one ended state', { states: ['failed'] }, (i) => planOf(i, TOTAL).end === 'timeout'],
    ['one outcome', { outcome: 'superseded' }, (i) => planOf(i, TOTAL).end === 'superseded'],
    [
      'open and ended states',
      { states: ['queued', 'cancelled'] },
      (i) => ['open', 'superseded'].includes(planOf(i, TOTAL).end),
    ],
  ])('the first page of %s reads its runs and a list segment or two', async (_name, filters, keep) => {
    const { reads, ids } = await pageReads({ ...filters, limit: LIMIT });
    const want = expected(keep).slice(0, LIMIT);
    expect(ids).toEqual(want);
    expect(reads).toBeLessThanOrEqual(want.length + 1 + LIST_READS);
  });

  it('a page ten pages deep costs what the first does', async () => {
    const { reads, ids } = await pageReads({ limit: LIMIT }, 10);
    expect(ids).toEqual(expected(() => true).slice(10 * LIMIT, 11 * LIMIT));
    expect(reads).toBeLessThanOrEqual(LIMIT + 1 + LIST_READS);
  });

  it('listRuns of an ended state, by contrast, reads every run file', async () => {
    store = await LowdbStore.open(dir);
    try {
      const before = store.stats().fileReads;
      expect(await store.listRuns(['cancelled'])).toHaveLength(
        expected((i) => planOf(i, TOTAL).end === 'superseded').length,
      );
      expect(store.stats().fileReads - before).toBeGreaterThanOrEqual(TOTAL);
    } finally {
      await store.close();
    }
  });
});

describe('LowdbStore runs index: crashes and older data', () => {
  it('skips entries whose run does not hold their position (left by a crash between an entry and its record)', async () => {
    const dir = await tempDir();
    const first = await LowdbStore.open(dir);
    void first.saveRun(runRecord('a', 'completed'));
    void first.saveRun(runRecord('b', 'running'));
    await first.close();
    // As if a crash came after these entries landed and before their records did: a run that
    // never got a record, and b's end.
    const allDir = join(dir, 'runs-index', 'all');
    const [segment] = await readdir(allDir);
    const entries = JSON.parse(await readFile(join(allDir, segment!), 'utf8')) as unknown[];
    entries.push([3, 'ghost', 'completed', 'completed'], [4, 'b', 'completed', 'completed']);
    await writeFile(join(allDir, segment!), JSON.stringify(entries));

    const store = await LowdbStore.open(dir);
    try {
      const ids = async (query: Omit<RunQuery, 'limit'>) =>
        (await store.queryRuns({ ...query, limit: 10 })).runs.map((r) => `${r.runId}:${r.state}`);
      expect(await ids({})).toEqual(['b:running', 'a:completed']);
      // b ends now: it takes a position above the leftovers, and appears once.
      await store.saveRun({ ...runRecord('b', 'completed'), endedAt: '2026-01-01T00:00:09.000Z' });
      expect(await ids({})).toEqual(['b:completed', 'a:completed']);
      expect(await ids({ states: ['completed'] })).toEqual(['b:completed', 'a:completed']);
    } finally {
      await store.close();
    }
  });

  it('rebuilds a missing index from the run files, oldest first, and goes on from there', async () => {
    const dir = await tempDir();
    const first = await LowdbStore.open(dir);
    void first.saveRun(runRecord('late', 'completed', 's1', '2026-01-01T00:00:03.000Z'));
    void first.saveRun(runRecord('early', 'failed', 's2', '2026-01-01T00:00:01.000Z'));
    void first.saveRun(runRecord('waiting', 'queued', 's1', '2026-01-01T00:00:02.000Z'));
    await first.close();
    // A store written before the index existed.
    await rm(join(dir, 'runs-index'), { recursive: true });

    const store = await LowdbStore.open(dir);
    try {
      const ids = async (query: Omit<RunQuery, 'limit'>) =>
        (await store.queryRuns({ ...query, limit: 10 })).runs.map((r) => r.runId);
      expect(await ids({})).toEqual(['late', 'waiting', 'early']);
      expect(await ids({ sessionId: 's1' })).toEqual(['late', 'waiting']);
      expect(await ids({ states: ['queued'] })).toEqual(['waiting']);
      expect(await store.getRun('late')).toEqual(runRecord('late', 'completed', 's1', '2026-01-01T00:00:03.000Z'));
      void store.saveRun(runRecord('waiting', 'completed', 's1', '2026-01-01T00:00:02.000Z'));
      expect(await ids({})).toEqual(['waiting', 'late', 'early']);
    } finally {
      await store.close();
    }
    const reopened = await LowdbStore.open(dir);
    try {
      expect((await reopened.queryRuns({ limit: 10 })).runs.map((r) => r.runId)).toEqual(['waiting', 'late', 'early']);
    } finally {
      await reopened.close();
    }
  });
});
