/**
 * The inspector's runs list on the file store with 10,000 runs stored (100 runs per session,
 * ended as the engine ends them: record, then terminal event) against the same with 1,000
 * stored: the time and the files read by each page the page asks for (first page, a page 10
 * deep, one session, one outcome, one ended state; every one a full page in both stores),
 * each on a store opened afresh (nothing cached, as after a restart), in rounds alternating
 * between the two stores; and listRuns of an ended state, the full scan the page never makes.
 * Checks that no page reads more files than it has runs plus a few list segments, and throws
 * if one does. Target: ratio ≤ 2.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../src/config/index.js';
import type { RunEvent } from '../src/core/run-events.js';
import { admitRequest } from '../src/core/run-request.js';
import { LowdbStore, type RunQuery, type RunRecord } from '../src/store/index.js';
import type { BenchFigure, Benchmark } from './types.js';

const LARGE = 10_000;
const SMALL = 1_000;
const RUNS_PER_SESSION = 100;
const LIMIT = 50;
const ROUNDS = 5;
/** A page reads its runs' records, plus a few segments of its lists (and their directory). */
const LIST_READS = 8;

/** Run i: its session, and how it ends (one in ten fails with a timeout, one in ten is superseded). */
function recordsOf(i: number, total: number): RunRecord[] {
  const runId = `run-${i}`;
  const sessionId = `session-${i % (total / RUNS_PER_SESSION)}`;
  const createdAt = new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
  const request = admitRequest({ runId, sessionId, input: `message ${i}` }, defaultConfig());
  const base = { runId, sessionId, agentId: 'main', request, createdAt };
  const endedAt = createdAt;
  const ended: RunRecord =
    i % 10 === 3
      ? {
          ...base,
          state: 'failed',
          error: { code: 'timeout', message: 'too slow' },
          startedAt: createdAt,
          endedAt,
          turns: 4,
          toolCalls: 6,
        }
      : i % 10 === 7
        ? { ...base, state: 'cancelled', reason: 'superseded', endedAt, turns: 0, toolCalls: 0 }
        : { ...base, state: 'completed', output: 'ok', startedAt: createdAt, endedAt, turns: 2, toolCalls: 3 };
  return [{ ...base, state: 'queued' }, ended];
}

function terminalEventOf(record: RunRecord, sessionSeq: number): RunEvent {
  const base = { runId: record.runId, sessionId: record.sessionId, seq: 1, sessionSeq, at: record.endedAt! };
  if (record.state === 'failed') return { ...base, type: 'run.failed', error: record.error! };
  if (record.state === 'cancelled') return { ...base, type: 'run.cancelled', reason: record.reason! };
  return { ...base, type: 'run.completed', output: 'ok', usage: { turns: 2 }, toolCalls: 3 };
}

async function filled(runs: number): Promise<{ dir: string; fillMs: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-runs-'));
  const started = performance.now();
  const store = await LowdbStore.open(dir);
  const sessionSeq = new Map<string, number>();
  for (let from = 0; from < runs; from += 500) {
    const writes: Promise<void>[] = [];
    for (let i = from; i < Math.min(runs, from + 500); i++) {
      const [queued, ended] = recordsOf(i, runs);
      writes.push(store.saveRun(queued!), store.saveRun(ended!));
      const next = (sessionSeq.get(ended!.sessionId) ?? 0) + 1;
      sessionSeq.set(ended!.sessionId, next);
      writes.push(store.appendEvent(terminalEventOf(ended!, next)));
    }
    await Promise.all(writes);
  }
  await store.close();
  return { dir, fillMs: performance.now() - started };
}

interface Shape {
  name: string;
  query: Omit<RunQuery, 'limit' | 'before'>;
  /** Pages walked before the one measured. */
  skip: number;
}

const SHAPES: Shape[] = [
  { name: 'first page', query: {}, skip: 0 },
  { name: 'page 10 deep', query: {}, skip: 9 },
  { name: 'one session', query: { sessionId: 'session-4' }, skip: 0 },
  { name: 'one outcome (superseded)', query: { outcome: 'superseded' }, skip: 0 },
  { name: 'one ended state (failed)', query: { states: ['failed'] }, skip: 0 },
];

/** ms and files read by one page of `shape`, on the store in `dir` opened afresh. */
async function measure(dir: string, shape: Shape): Promise<{ ms: number; reads: number; runs: number }> {
  const store = await LowdbStore.open(dir);
  try {
    let before: string | undefined;
    for (let i = 0; i < shape.skip; i++)
      before = (await store.queryRuns({ ...shape.query, limit: LIMIT, ...(before ? { before } : {}) })).cursor;
    const reads = store.stats().fileReads;
    const started = performance.now();
    const page = await store.queryRuns({ ...shape.query, limit: LIMIT, ...(before ? { before } : {}) });
    const ms = performance.now() - started;
    return { ms, reads: store.stats().fileReads - reads, runs: page.runs.length };
  } finally {
    await store.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const benchmark: Benchmark = async () => {
  const small = await filled(SMALL);
  const large = await filled(LARGE);
  try {
    const figures: BenchFigure[] = [];
    const readsNote: string[] = [];
    for (const shape of SHAPES) {
      const times = { small: [] as number[], large: [] as number[] };
      let reads = 0;
      let runs = 0;
      for (let round = 0; round < ROUNDS; round++) {
        for (const which of round % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const)) {
          const result = await measure(which === 'small' ? small.dir : large.dir, shape);
          times[which].push(result.ms);
          if (which === 'large') ({ reads, runs } = result);
        }
      }
      if (reads > runs + 1 + LIST_READS) {
        throw new Error(
          `runs.query (${shape.name}) read ${reads} files for a page of ${runs} runs with ${LARGE} stored: it must read only its page`,
        );
      }
      readsNote.push(`${shape.name}: ${reads} files for ${runs} runs`);
      figures.push({
        figure: `runs query, ${shape.name} (${runs} runs), ${LARGE.toLocaleString('en')} stored (baseline: ${SMALL.toLocaleString('en')} stored)`,
        value: median(times.large),
        unit: 'ms',
        baseline: median(times.small),
        ratio: median(times.large) / median(times.small),
        target: 'ratio ≤ 2',
      });
    }
    const store = await LowdbStore.open(large.dir);
    try {
      const reads = store.stats().fileReads;
      const started = performance.now();
      const failed = await store.listRuns(['failed']);
      figures.push({
        figure: `listRuns(failed) full scan, ${LARGE.toLocaleString('en')} stored (what the page never does)`,
        value: performance.now() - started,
        unit: 'ms',
        note:
          `${failed.length} runs found, ${store.stats().fileReads - reads} files read; per page with ` +
          `${LARGE.toLocaleString('en')} stored, opened afresh: ${readsNote.join('; ')}; the store was ` +
          `filled in ${(large.fillMs / 1000).toFixed(1)} s`,
      });
    } finally {
      await store.close();
    }
    return figures;
  } finally {
    await rm(small.dir, { recursive: true, force: true });
    await rm(large.dir, { recursive: true, force: true });
  }
};

export default benchmark;
