/**
 * Cost of LowdbStore.appendEvent per event with 100,000 events already stored (100 runs in 10
 * sessions) against the same store with 1,000 stored, in the engine's pattern (each append
 * awaited before the next, so every event is two file writes) and in 100-event bursts over 10
 * runs (coalesced). Short rounds alternate between the two stores, and each store appends
 * three segments' worth to every log it touches, so both see the same machine load and the
 * same mix of short and long segment rewrites. Target: ratio ≤ 1.5 — an append never
 * rewrites history.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '../src/core/run-events.js';
import { LowdbStore } from '../src/store/index.js';
import type { BenchFigure, Benchmark } from './types.js';

const RUNS = 100;
const SESSIONS = 10;
const SEGMENT_ITEMS = 256;

/** Numbers each run's and session's events on from what the store already holds. */
class Appender {
  private readonly seq = new Map<string, number>();
  private readonly sessionSeq = new Map<string, number>();

  constructor(private readonly store: LowdbStore) {}

  append(run: number): Promise<void> {
    const runId = `run-${run}`;
    const sessionId = `session-${run % SESSIONS}`;
    const seq = (this.seq.get(runId) ?? 0) + 1;
    const sessionSeq = (this.sessionSeq.get(sessionId) ?? 0) + 1;
    this.seq.set(runId, seq);
    this.sessionSeq.set(sessionId, sessionSeq);
    const event: RunEvent = {
      type: 'model.delta',
      runId,
      sessionId,
      seq,
      sessionSeq,
      at: new Date().toISOString(),
      turn: Math.floor(seq / 20),
      text: 'a model streams its answer a few words at a time, ',
    };
    return this.store.appendEvent(event);
  }

  /** Continues the numbering of another appender (the one that filled the store). */
  continueFrom(other: Appender): void {
    for (const [runId, seq] of other.seq) this.seq.set(runId, seq);
    for (const [sessionId, sessionSeq] of other.sessionSeq) this.sessionSeq.set(sessionId, sessionSeq);
  }
}

async function prefilled(
  events: number,
): Promise<{ dir: string; store: LowdbStore; appender: Appender; fillMs: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-store-'));
  const started = performance.now();
  const filling = await LowdbStore.open(dir, { segmentItems: SEGMENT_ITEMS });
  const filler = new Appender(filling);
  for (let done = 0; done < events; done += 1000) {
    await Promise.all(Array.from({ length: Math.min(1000, events - done) }, (_, i) => filler.append(i % RUNS)));
  }
  await filling.close();
  const fillMs = performance.now() - started;
  // Measured on a store opened afresh, as after a restart: nothing of the history is cached.
  const store = await LowdbStore.open(dir, { segmentItems: SEGMENT_ITEMS });
  const appender = new Appender(store);
  appender.continueFrom(filler);
  return { dir, store, appender, fillMs };
}

interface Pattern {
  /** Events of one round. */
  events: number;
  /** Rounds per store: together three segments' worth of every log the pattern touches. */
  rounds: number;
  run(appender: Appender): Promise<void>;
}

/** One event awaited at a time, all in run 0 of session 0. */
const awaitedOneByOne: Pattern = {
  events: 32,
  rounds: Math.ceil((3 * SEGMENT_ITEMS) / 32),
  async run(appender) {
    for (let i = 0; i < 32; i++) await appender.append(0);
  },
};

/** A burst of 100 events over runs 0-9 (one per session), awaited as a whole. */
const burstOf100: Pattern = {
  events: 100,
  rounds: Math.ceil((3 * SEGMENT_ITEMS) / 10),
  run: (appender) => Promise.all(Array.from({ length: 100 }, (_, i) => appender.append(i % 10))).then(() => {}),
};

type Prefilled = Awaited<ReturnType<typeof prefilled>>;

/**
 * µs/event of each store, over many short rounds that alternate between the two, so that
 * whatever else the machine is doing weighs on both alike; and the large store's file writes
 * per event.
 */
async function compare(small: Prefilled, large: Prefilled, pattern: Pattern) {
  await pattern.run(small.appender);
  await pattern.run(large.appender);
  const nanos = { small: 0n, large: 0n };
  const cpuMicros = { small: 0, large: 0 };
  const writesBefore = large.store.stats().fileWrites;
  for (let i = 0; i < pattern.rounds; i++) {
    for (const which of i % 2 === 0 ? (['small', 'large'] as const) : (['large', 'small'] as const)) {
      const started = process.hrtime.bigint();
      const cpu = process.cpuUsage();
      await pattern.run((which === 'small' ? small : large).appender);
      const used = process.cpuUsage(cpu);
      nanos[which] += process.hrtime.bigint() - started;
      cpuMicros[which] += used.user + used.system;
    }
  }
  const events = pattern.rounds * pattern.events;
  return {
    small: Number(nanos.small) / 1000 / events,
    large: Number(nanos.large) / 1000 / events,
    cpu: `CPU (this thread and the fs threads) ${(cpuMicros.large / events).toFixed(0)} vs ${(cpuMicros.small / events).toFixed(0)} µs/event`,
    writesPerEvent: (large.store.stats().fileWrites - writesBefore) / events,
  };
}

const benchmark: Benchmark = async () => {
  const small = await prefilled(1_000);
  const large = await prefilled(100_000);
  try {
    const awaited = await compare(small, large, awaitedOneByOne);
    const bursts = await compare(small, large, burstOf100);
    const note = `100,000 events over ${RUNS} runs in ${SESSIONS} sessions, ${SEGMENT_ITEMS}-event segments, rounds alternating between the two stores`;
    return [
      {
        figure: 'store append, awaited one at a time, 100k stored (baseline: 1k stored)',
        value: awaited.large,
        unit: 'µs/event',
        baseline: awaited.small,
        ratio: awaited.large / awaited.small,
        target: 'ratio ≤ 1.5',
        note: `${note}; ${awaited.writesPerEvent.toFixed(2)} file writes per event; ${awaited.cpu}`,
      },
      {
        figure: 'store append, 100-event bursts, 100k stored (baseline: 1k stored)',
        value: bursts.large,
        unit: 'µs/event',
        baseline: bursts.small,
        ratio: bursts.large / bursts.small,
        target: 'ratio ≤ 1.5',
        note: `${bursts.writesPerEvent.toFixed(2)} file writes per event (coalesced: 10 run logs + 10 session logs per burst); ${bursts.cpu}`,
      },
      {
        figure: 'store prefill, 1,000-event bursts',
        value: large.fillMs / 100,
        unit: 'ms/1k events',
        note: `100,000 events written in ${(large.fillMs / 1000).toFixed(1)} s`,
      },
    ] satisfies BenchFigure[];
  } finally {
    await small.store.close();
    await large.store.close();
    await rm(small.dir, { recursive: true, force: true });
    await rm(large.dir, { recursive: true, force: true });
  }
};

export default benchmark;
