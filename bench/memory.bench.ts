/**
 * Memory: heap per idle session (a session that ran once and is now idle) and per queued run
 * (a message waiting in a busy session's lane). Measured as the heap growth over thousands of
 * them after a forced garbage collection, once with the in-memory store (which keeps every
 * event on the heap) and once with a store that keeps nothing, as a disk store would.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createEngine, type Engine } from '../src/engine/index.js';
import { scriptedModel } from '../src/model/index.js';
import { MemoryStore, type Store } from '../src/store/index.js';
import type { BenchFigure, Benchmark } from './types.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const SESSIONS = 2_000;
const QUEUED = 2_000;

/** A store that keeps nothing: the engine's own footprint, as with a store on disk. */
class DiscardingStore extends MemoryStore {
  override appendEvent(): void {}
  override appendMessages(): void {}
  override saveRun(): void {}
}

async function heapAfter(action: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 3; i++) gc();
  const before = process.memoryUsage().heapUsed;
  await action();
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed - before;
}

async function idleSessionBytes(store: () => Store): Promise<number> {
  let engine: Engine | undefined;
  engine = await createEngine({ store: store(), models: { scripted: scriptedModel([{ text: 'ok' }]) } });
  const grown = await heapAfter(async () => {
    const ids = [];
    for (let i = 0; i < SESSIONS; i++)
      ids.push((await engine!.submit({ sessionId: `idle-${i}`, input: 'hello' })).runId);
    for (const id of ids) await engine!.wait(id);
  });
  await engine.close();
  return grown / SESSIONS;
}

async function queuedRunBytes(): Promise<number> {
  const engine = await createEngine({
    store: new DiscardingStore(),
    models: { scripted: scriptedModel([{ text: 'slow', delayMs: 60_000 }]) },
    config: {
      execution: { wait_lane_capacity: QUEUED, busy_policy: 'queue', max_runs_global: 100, max_runs_per_agent: 100 },
    },
  });
  const sessions = 20;
  for (let s = 0; s < sessions; s++) await engine.submit({ sessionId: `busy-${s}`, input: 'occupy' });
  const grown = await heapAfter(async () => {
    for (let i = 0; i < QUEUED; i++) await engine.submit({ sessionId: `busy-${i % sessions}`, input: `waiting ${i}` });
  });
  await engine.close();
  return grown / QUEUED;
}

const benchmark: Benchmark = async () => {
  await idleSessionBytes(() => new DiscardingStore());
  const idleEngineOnly = await idleSessionBytes(() => new DiscardingStore());
  const idleWithHistory = await idleSessionBytes(() => new MemoryStore());
  const queued = await queuedRunBytes();
  const figures: BenchFigure[] = [
    {
      figure: 'memory: heap per idle session (engine, store on disk)',
      value: idleEngineOnly / 1024,
      unit: 'KiB',
      target: '<= 8',
    },
    {
      figure: 'memory: heap per idle session incl. in-memory store history',
      value: idleWithHistory / 1024,
      unit: 'KiB',
    },
    { figure: 'memory: heap per queued run', value: queued / 1024, unit: 'KiB' },
  ];
  return figures;
};

export default benchmark;
