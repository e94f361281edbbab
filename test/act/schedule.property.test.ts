/*
 * Dispatch invariants for all batches (docs/claims.md, "Ordered bucketing", "Dispatch rules of the
 * Act phase"), through a real engine on a SimulatedClock: random batches of probe calls over a
 * small universe of paths, nodes and sessions (plus shared and global claims), random durations and
 * a random cap, in both scheduling modes. Order is checked on the probe's own record sequence,
 * which is stricter than comparing virtual times.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { claimsConflict, partitionParallelGroups } from '../../src/concurrency/index.js';
import { engineFixture } from '../engine/fixtures.js';
import {
  call,
  claimOf,
  driveRun,
  global,
  nodes,
  paths,
  probeEngineFrom,
  scheduleOf,
  sessions,
  shared,
  type ClaimSpec,
  type Probe,
} from './fixtures.js';

const probeEngine = probeEngineFrom(engineFixture());

const PATHS = ['/w/a', '/w/a/b', '/w/c'];
const NODES = ['n1', 'n2'];
const SESSIONS = ['k1', 'k2'];

const claimSpec: fc.Arbitrary<ClaimSpec> = fc.oneof(
  fc.constant(shared()),
  fc.subarray(PATHS, { minLength: 1 }).map((reads) => shared(reads)),
  fc.subarray(PATHS, { minLength: 1 }).map((p) => paths(...p)),
  fc.subarray(NODES, { minLength: 1 }).map((n) => nodes(...n)),
  fc.subarray(SESSIONS, { minLength: 1 }).map((k) => sessions(...k)),
  fc.constant(global()),
);

const batchSample = fc.record({
  calls: fc.array(fc.record({ claim: claimSpec, ms: fc.integer({ min: 0, max: 5 }) }), { minLength: 3, maxLength: 12 }),
  cap: fc.integer({ min: 1, max: 4 }),
});
type BatchSample = typeof batchSample extends fc.Arbitrary<infer T> ? T : never;

const NUM_RUNS = 60;

/** Every probe id ran exactly once, and the starts/ends it recorded. */
function intervals(probe: Probe, n: number) {
  return Array.from({ length: n }, (_, i) => {
    const id = `p${i}`;
    expect(probe.executions.get(id), `${id} runs exactly once`).toBe(1);
    const start = probe.startOf(id)!;
    const end = probe.endOf(id)!;
    expect(end.kind).toBe('end');
    return { start, end };
  });
}

async function runSample(scheduling: 'groups' | 'dag', sample: BatchSample) {
  const batch = sample.calls.map((c, i) => call(`p${i}`, c.claim, { ms: c.ms }));
  const { clock, probe, engine } = await probeEngine([batch], {
    tool_service: { parallel_tool_concurrency: sample.cap, scheduling },
  });
  try {
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });
    return { probe, schedule: scheduleOf(history) };
  } finally {
    await engine.close();
  }
}

/** The invariants both modes share. */
function checkCommon(sample: BatchSample, probe: Probe) {
  const n = sample.calls.length;
  const claims = sample.calls.map((c) => claimOf(c.claim));
  const spans = intervals(probe, n);

  // At most `cap` calls in flight, at every moment.
  let inFlight = 0;
  for (const record of probe.records) {
    inFlight += record.kind === 'start' ? 1 : -1;
    expect(inFlight).toBeLessThanOrEqual(sample.cap);
  }
  // Conflicting calls never overlap, and run in model order.
  for (let j = 0; j < n; j++) {
    for (let i = 0; i < j; i++) {
      if (!claimsConflict(claims[i]!, claims[j]!)) continue;
      expect(spans[i]!.end.seq, `p${i} ends before p${j} (which conflicts with it) starts`).toBeLessThan(
        spans[j]!.start.seq,
      );
      expect(spans[i]!.end.at).toBeLessThanOrEqual(spans[j]!.start.at);
    }
  }
  return { claims, spans };
}

describe('dispatch invariants (property)', () => {
  it('groups mode: conflicts never overlap, model order within conflicts, each call once, at most cap in flight, groups run one after another', async () => {
    await fc.assert(
      fc.asyncProperty(batchSample, async (sample) => {
        const { probe, schedule } = await runSample('groups', sample);
        const { claims, spans } = checkCommon(sample, probe);
        const n = claims.length;

        const groups =
          sample.cap < 2 ? claims.map((_, i): [number, number] => [i, i + 1]) : partitionParallelGroups(claims);
        expect(schedule.mode).toBe(sample.cap < 2 ? 'serial' : 'groups');
        expect(schedule.groups).toEqual(groups);
        expect(schedule.boundaries.map((b) => b.index)).toEqual(groups.slice(1).map(([start]) => start));
        // Calls start in model order.
        expect(probe.started()).toEqual(claims.map((_, i) => `p${i}`));
        for (let g = 1; g < groups.length; g++) {
          const [prevStart, prevEnd] = groups[g - 1]!;
          const [start, end] = groups[g]!;
          const lastEnd = Math.max(...spans.slice(prevStart, prevEnd).map((s) => s.end.seq));
          const firstStart = Math.min(...spans.slice(start, end).map((s) => s.start.seq));
          expect(lastEnd, `group ${g} starts after group ${g - 1} has finished`).toBeLessThan(firstStart);
        }
        // With room for everyone, a group starts the moment the previous one is done.
        if (sample.cap >= n) {
          for (let g = 0; g < groups.length; g++) {
            const previous = g === 0 ? [] : spans.slice(groups[g - 1]![0], groups[g - 1]![1]);
            const readyAt = Math.max(0, ...previous.map((s) => s.end.at));
            for (const span of spans.slice(groups[g]![0], groups[g]![1])) expect(span.start.at).toBe(readyAt);
          }
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });

  it('dag mode: conflicts never overlap, model order within conflicts, each call once, at most cap in flight, nothing held back', async () => {
    await fc.assert(
      fc.asyncProperty(batchSample, async (sample) => {
        const { probe, schedule } = await runSample('dag', sample);
        const { claims, spans } = checkCommon(sample, probe);
        const n = claims.length;
        if (sample.cap < 2) {
          expect(schedule.mode).toBe('serial');
          return;
        }
        const deps = claims.map((claim, j) =>
          claims.slice(0, j).flatMap((earlier, i) => (claimsConflict(earlier, claim) ? [i] : [])),
        );
        expect(schedule.mode).toBe('dag');
        expect(schedule.deps).toEqual(deps);
        // A call waits for the calls it conflicts with (and, with a tight cap, for a slot), never longer.
        for (let j = 0; j < n; j++) {
          const readyAt = Math.max(0, ...deps[j]!.map((i) => spans[i]!.end.at));
          if (sample.cap >= n)
            expect(spans[j]!.start.at, `p${j} starts as soon as its conflicts are done`).toBe(readyAt);
          else expect(spans[j]!.start.at).toBeGreaterThanOrEqual(readyAt);
        }
      }),
      { numRuns: NUM_RUNS },
    );
  });
});
