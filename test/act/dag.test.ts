/*
 * `[tool_service] scheduling = "dag"` (docs/claims.md, "DAG mode"): a call starts as soon as every
 * earlier call it conflicts with has finished, at most parallel_tool_concurrency at once;
 * conflicting calls keep model order, unrelated work is never held back by a group boundary, and
 * the steer check happens before each call rather than before each group.
 */
import { describe, expect, it } from 'vitest';
import type { PartialConfig } from '../../src/config/index.js';
import { engineFixture } from '../engine/fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import {
  call,
  driveRun,
  finishedById,
  global,
  nodes,
  paths,
  probeEngineFrom,
  scheduleOf,
  shared,
  type ModelCall,
  type Probe,
} from './fixtures.js';

const newEngine = engineFixture();
const probeEngine = probeEngineFrom(newEngine);

const startTimes = (probe: Probe, ids: string[]) => Object.fromEntries(ids.map((id) => [id, probe.startOf(id)?.at]));

describe('dag scheduling', () => {
  const batch = [
    call('long', paths('/w/a'), { ms: 100 }),
    call('after', paths('/w/a/x.ts'), { ms: 10 }),
    call('other', paths('/w/b'), { ms: 10 }),
    call('remote', nodes('n1'), { ms: 10 }),
  ];
  const cases: [scheduling: 'groups' | 'dag', starts: Record<string, number>][] = [
    // Groups: [long] | [after, other, remote] — the boundary holds unrelated work back.
    ['groups', { long: 0, after: 100, other: 100, remote: 100 }],
    // Dag: only `after` waits, for the call it conflicts with.
    ['dag', { long: 0, after: 100, other: 0, remote: 0 }],
  ];

  it.each(cases)('%s: a long call followed by unrelated work', async (scheduling, starts) => {
    const { clock, probe, engine } = await probeEngine([batch], { tool_service: { scheduling } });
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });
    expect(startTimes(probe, ['long', 'after', 'other', 'remote'])).toEqual(starts);
    // Conflicting calls keep model order.
    expect(probe.endOf('long')!.seq).toBeLessThan(probe.startOf('after')!.seq);

    const schedule = scheduleOf(history);
    expect(schedule.mode).toBe(scheduling);
    expect(schedule.groups).toEqual([
      [0, 1],
      [1, 4],
    ]);
    expect(schedule.boundaries).toEqual([
      { index: 1, previous: 'long', next: 'after', reason: 'path /w/a overlaps /w/a/x.ts' },
    ]);
    if (scheduling === 'dag') expect(schedule.deps).toEqual([[], [0], [], []]);
    else expect(schedule.deps).toBeUndefined();
  });

  it('a chain of conflicts runs in model order while independent calls run beside it', async () => {
    const { clock, probe, engine } = await probeEngine(
      [
        [
          call('w1', paths('/w/f'), { ms: 20 }),
          call('r', shared(['/w/f']), { ms: 20 }),
          call('w2', paths('/w/f'), { ms: 20 }),
          call('g', global(), { ms: 5 }),
          call('x', paths('/w/x'), { ms: 5 }),
        ],
      ],
      { tool_service: { scheduling: 'dag' } },
    );
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(scheduleOf(history).deps).toEqual([[], [0], [0, 1], [0, 1, 2], [3]]);
    expect(startTimes(probe, ['w1', 'r', 'w2', 'g', 'x'])).toEqual({ w1: 0, r: 20, w2: 40, g: 60, x: 65 });
  });

  it('still keeps at most parallel_tool_concurrency calls in flight', async () => {
    const batch4 = ['a', 'b', 'c', 'd'].map((id, i) => call(id, paths(`/w/${id}`), { ms: 10 * (i + 1) }));
    const { clock, probe, engine } = await probeEngine([batch4], {
      tool_service: { scheduling: 'dag', parallel_tool_concurrency: 2 },
    });
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    await driveRun(engine, clock, probe, run.runId);
    expect(probe.maxInFlight).toBe(2);
    expect(startTimes(probe, ['a', 'b', 'c', 'd'])).toEqual({ a: 0, b: 0, c: 10, d: 20 });
  });

  const serialCases: [what: string, config: PartialConfig, calls: ModelCall[], reason: string][] = [
    [
      'concurrency < 2',
      { tool_service: { scheduling: 'dag', parallel_tool_concurrency: 1 } },
      [call('a', shared()), call('b', shared())],
      'serial: concurrency < 2',
    ],
    [
      'a duplicate in the batch',
      { tool_service: { scheduling: 'dag' } },
      [call('a', shared()), { id: 'again', name: 'probe', args: { claim: { kind: 'shared' }, id: 'a' } }],
      'duplicate',
    ],
  ];
  it.each(serialCases)('falls back to serial with %s', async (_what, config, calls, reason) => {
    const { clock, probe, engine } = await probeEngine([calls], config);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    const schedule = scheduleOf(history);
    expect(schedule.mode).toBe('serial');
    expect(schedule.deps).toBeUndefined();
    expect(schedule.boundaries.map((b) => b.reason)).toEqual([reason]);
  });

  describe('checks the steer before each call, not only before each group', () => {
    const cases: [scheduling: 'groups' | 'dag', cOutcome: 'ran' | 'deferred'][] = [
      // One group: c is not a group's first call, so it starts once a frees a slot.
      ['groups', 'ran'],
      // Every call is a checkpoint: c is deferred, b (already running) finishes normally.
      ['dag', 'deferred'],
    ];
    it.each(cases)('%s', async (scheduling, cOutcome) => {
      const { probe, engine, seen } = await probeEngine(
        [
          [
            call('a', paths('/w/a'), { hold: true }),
            call('b', paths('/w/b'), { hold: true }),
            call('c', paths('/w/c')),
          ],
        ],
        { tool_service: { scheduling, parallel_tool_concurrency: 2 } },
      );
      const run = await engine.submit({ sessionId: 's', input: 'go' });
      await until(() => probe.isHolding('a') && probe.isHolding('b'), 'a and b run');
      expect(await engine.submit({ sessionId: 's', input: 'wait' })).toMatchObject({ outcome: 'steered' });
      await settle();
      probe.release('a');
      if (cOutcome === 'ran') await until(() => probe.executions.has('c'), 'c starts');
      probe.release('b');
      expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed' });

      const finished = finishedById(await engine.history(run.runId));
      expect(finished.get('a')).toMatchObject({ ok: true });
      expect(finished.get('b')).toMatchObject({ ok: true });
      if (cOutcome === 'ran') expect(finished.get('c')).toMatchObject({ ok: true });
      else expect(finished.get('c')).toMatchObject({ ok: false, error: { code: 'deferred' }, synthetic: true });
      expect(probe.executions.has('c')).toBe(cOutcome === 'ran');
      expect(seen[1]!.messages.at(-1)).toMatchObject({ role: 'user', content: 'wait' });
    });
  });
});
