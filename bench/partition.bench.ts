/**
 * Cost of partitionParallelGroups per call on realistic mixed batches of 8, 64 and 512 calls,
 * against the pairwise definition of §2.3 as a baseline. Building claims is not timed.
 */

import { Claims, claimsConflict, partitionParallelGroups } from '../src/concurrency/index.js';
import type { Claim } from '../src/concurrency/index.js';
import type { BenchFigure, Benchmark } from './types.js';

/** mulberry32: a seeded generator, so every run measures the same batches. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILES = Array.from({ length: 36 }, (_, i) => `/w/src/${['core', 'api', 'ui'][i % 3]}/file${i}.ts`);

/** A model's batch: mostly reads of known files, some edits, a little bash and remote work. */
function mixedBatch(size: number, random: () => number): Claim[] {
  const pick = (): string => FILES[Math.floor(random() * FILES.length)]!;
  return Array.from({ length: size }, () => {
    const roll = random();
    if (roll < 0.45) return Claims.shared(random() < 0.8 ? [pick()] : [pick(), pick()]);
    if (roll < 0.55) return Claims.shared();
    if (roll < 0.8) return Claims.paths([pick()]);
    if (roll < 0.83) return Claims.global();
    if (roll < 0.95) return Claims.nodes([`node-${Math.floor(random() * 4)}`]);
    return Claims.sessions([`agent:${Math.floor(random() * 3)}`]);
  });
}

/** Reads and edits of distinct files only: one wide group, where pairwise checks go quadratic. */
function wideBatch(size: number): Claim[] {
  return Array.from({ length: size }, (_, i) =>
    i % 2 === 0 ? Claims.shared([`/w/src/read${i}.ts`]) : Claims.paths([`/w/src/edit${i}.ts`]),
  );
}

function pairwisePartition(claims: readonly Claim[]): [number, number][] {
  const groups: [number, number][] = [];
  let start = 0;
  for (let index = 0; index < claims.length; index++) {
    for (let member = start; member < index; member++) {
      if (claimsConflict(claims[member]!, claims[index]!)) {
        groups.push([start, index]);
        start = index;
        break;
      }
    }
  }
  if (claims.length > 0) groups.push([start, claims.length]);
  return groups;
}

type Partition = (claims: readonly Claim[]) => [number, number][];

/** Microseconds per call: best of several rounds, each sized to take a few milliseconds. */
function microsPerCall(partition: Partition, batches: Claim[][]): number {
  const calls = batches.reduce((sum, batch) => sum + batch.length, 0);
  const iterations = Math.max(1, Math.ceil(10_000 / calls));
  const round = (): number => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) for (const batch of batches) partition(batch);
    return Number(process.hrtime.bigint() - started) / 1000;
  };
  for (let i = 0; i < 10; i++) round();
  let best = Infinity;
  for (let i = 0; i < 20; i++) best = Math.min(best, round());
  return best / (iterations * calls);
}

function sameGroups(batches: Claim[][]): void {
  for (const batch of batches) {
    if (JSON.stringify(partitionParallelGroups(batch)) !== JSON.stringify(pairwisePartition(batch))) {
      throw new Error('partitionParallelGroups disagrees with the pairwise definition; fix before timing');
    }
  }
}

function figureFor(label: string, batches: Claim[][]): BenchFigure & { baseline: number } {
  sameGroups(batches);
  const value = microsPerCall(partitionParallelGroups, batches);
  const baseline = microsPerCall(pairwisePartition, batches);
  return { figure: label, value, unit: 'µs/call', baseline, ratio: value / baseline };
}

const partitionBenchmark: Benchmark = async () => {
  const random = seededRandom(0x5eed);
  // Many different batches per size, so the figure is not one lucky batch.
  const mixed = (size: number): Claim[][] =>
    Array.from({ length: Math.max(4, 2048 / size) }, () => mixedBatch(size, random));
  const sizes = [8, 64, 512];
  const perSize = sizes.map((size) => figureFor(`partition mixed batch of ${size}`, mixed(size)));
  const wide = {
    ...figureFor('partition wide batch of 512 (one group)', [wideBatch(512)]),
    note: 'reads and edits of 512 distinct files; pairwise checks are quadratic here',
  };
  const at8 = perSize[0]!;
  const at512 = perSize[2]!;
  const growth = at512.value / at8.value;
  const baselineGrowth = at512.baseline / at8.baseline;
  const scaling: BenchFigure = {
    figure: 'per-call cost at 512 ÷ at 8',
    value: growth,
    unit: '×',
    baseline: baselineGrowth,
    ratio: growth / baselineGrowth,
    target: 'near 1 (linear)',
  };
  return [...perSize, wide, scaling];
};

export default partitionBenchmark;
