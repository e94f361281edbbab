/*
 * The dispatch rules of the Act phase (docs/claims.md, "Dispatch rules of the Act phase"), through
 * a real engine: probe tools whose claims and durations each call chooses, a SimulatedClock, and
 * the recorded order (and virtual time) of every start and finish.
 */
import { describe, expect, it } from 'vitest';
import type { EngineOptions } from '../../src/engine/index.js';
import { MemoryStore } from '../../src/store/index.js';
import { engineFixture, expectWellFormedHistory } from '../engine/fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import {
  call,
  driveRun,
  eventsOf,
  finishedById,
  global,
  nodes,
  paths,
  probeEngineFrom,
  scheduleOf,
  sessions,
  shared,
  toolMessages,
  type Probe,
} from './fixtures.js';

const newEngine = engineFixture();
const probeEngine = probeEngineFrom(newEngine);

/** Virtual start time of each probe id. */
const startTimes = (probe: Probe, ids: string[]) => ids.map((id) => probe.startOf(id)?.at);

describe('parallel dispatch is on iff parallel_tool_concurrency >= 2', () => {
  const three = [call('a', shared(), { ms: 10 }), call('b', shared(), { ms: 10 }), call('c', shared(), { ms: 10 })];
  const cases: [cap: number, mode: 'serial' | 'groups', starts: number[], maxInFlight: number][] = [
    [0, 'serial', [0, 10, 20], 1],
    [1, 'serial', [0, 10, 20], 1],
    [2, 'groups', [0, 0, 10], 2],
    [8, 'groups', [0, 0, 0], 3],
  ];

  it.each(cases)('parallel_tool_concurrency = %i → %s', async (cap, mode, starts, maxInFlight) => {
    const { clock, probe, engine } = await probeEngine([three], { tool_service: { parallel_tool_concurrency: cap } });
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    expect(startTimes(probe, ['a', 'b', 'c'])).toEqual(starts);
    expect(probe.maxInFlight).toBe(maxInFlight);
    const schedule = scheduleOf(history);
    expect(schedule).toMatchObject({ mode, concurrency: cap });
    if (mode === 'serial') {
      expect(schedule.groups).toEqual([
        [0, 1],
        [1, 2],
        [2, 3],
      ]);
      expect(schedule.boundaries).toEqual([
        { index: 1, previous: 'a', next: 'b', reason: 'serial: concurrency < 2' },
        { index: 2, previous: 'b', next: 'c', reason: 'serial: concurrency < 2' },
      ]);
    } else {
      expect(schedule.groups).toEqual([[0, 3]]);
      expect(schedule.boundaries).toEqual([]);
    }
  });
});

describe('the cap inside a group', () => {
  it('never has more than parallel_tool_concurrency calls in flight (cap 2, a group of 5)', async () => {
    const durations = [10, 30, 10, 10, 10];
    const batch = durations.map((ms, i) => call(`p${i}`, shared(), { ms }));
    const { clock, probe, engine } = await probeEngine([batch], { tool_service: { parallel_tool_concurrency: 2 } });
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);

    expect(scheduleOf(history).groups).toEqual([[0, 5]]);
    expect(probe.maxInFlight).toBe(2);
    let inFlight = 0;
    for (const record of probe.records) {
      inFlight += record.kind === 'start' ? 1 : -1;
      expect(inFlight).toBeLessThanOrEqual(2);
    }
    // A freed slot goes to the next call in model order at once.
    expect(probe.started()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    expect(startTimes(probe, ['p0', 'p1', 'p2', 'p3', 'p4'])).toEqual([0, 0, 10, 20, 30]);
  });
});

describe('claims', () => {
  it('are computed once per call per batch, from the admitted arguments, and carried into dispatch', async () => {
    const { clock, probe, engine } = await probeEngine([
      [call('a', paths('/w/a'), { ms: 5 }), call('b', shared(['/w/b']), { ms: 5 }), call('c', nodes('n1'), { ms: 5 })],
      [call('d', sessions('k'), { ms: 5 }), call('e', global(), { ms: 5 })],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    expect(Object.fromEntries(probe.claimCalls)).toEqual({ a: 1, b: 1, c: 1, d: 1, e: 1 });
    expect(scheduleOf(history, 0).claims.map((c) => c.label)).toEqual([
      'paths [/w/a]',
      'shared reads [/w/b]',
      'nodes [n1]',
    ]);
    expect(scheduleOf(history, 1).claims.map((c) => c.label)).toEqual(['sessions [k]', 'global']);
  });

  it('an unknown tool gets a global claim and an unknown_tool error result; the run goes on and the model sees it', async () => {
    const { clock, probe, engine, seen } = await probeEngine([
      [
        call('a', shared(), { ms: 5 }),
        { id: 'x', name: 'no_such_tool', args: { path: '/w/a' } },
        call('b', shared(), { ms: 5 }),
      ],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expectWellFormedHistory(history);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed', output: 'done' });

    const schedule = scheduleOf(history);
    expect(schedule.claims[1]).toMatchObject({
      callId: 'x',
      tool: 'no_such_tool',
      claim: { kind: 'exclusive', scope: { kind: 'global' } },
      label: 'global',
    });
    expect(schedule.groups).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ]);
    expect(schedule.boundaries.map((b) => b.reason)).toEqual(['global', 'global']);
    expect(finishedById(history).get('x')).toMatchObject({
      ok: false,
      error: { code: 'unknown_tool', message: expect.stringContaining('no_such_tool') },
    });
    expect(probe.started()).toEqual(['a', 'b']);

    const results = toolMessages(seen[1]!.messages);
    expect(results.map((m) => m.toolCallId)).toEqual(['a', 'x', 'b']);
    expect(JSON.parse(results[1]!.content)).toMatchObject({ error: { code: 'unknown_tool' } });
  });

  it('invalid arguments give an invalid_arguments error result (and a global claim)', async () => {
    const { clock, probe, engine, seen } = await probeEngine([
      [
        call('a', shared(), { ms: 5 }),
        { id: 'bad', name: 'probe', args: { id: 'bad', claim: { kind: 'everything' } } },
      ],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });
    expect(finishedById(history).get('bad')).toMatchObject({
      ok: false,
      error: { code: 'invalid_arguments', message: expect.stringContaining('claim') },
    });
    expect(scheduleOf(history).claims[1]!.label).toBe('global');
    expect(probe.executions.has('bad')).toBe(false);
    expect(probe.claimCalls.has('bad')).toBe(false);
    expect(JSON.parse(toolMessages(seen[1]!.messages)[1]!.content)).toMatchObject({
      error: { code: 'invalid_arguments' },
    });
  });
});

describe('rewritten arguments', () => {
  it('make that group run serially, say so at its boundaries, and leave other groups parallel', async () => {
    const batch = [
      call('a', paths('/w/a'), { ms: 10 }),
      call('b', paths('/w/b'), { ms: 10 }),
      call('c', paths('/w/c'), { ms: 10 }),
      call('g', global(), { ms: 10 }),
      call('d', shared(), { ms: 10 }),
      call('e', shared(), { ms: 10 }),
    ];
    const rewriteArguments: EngineOptions['rewriteArguments'] = ({ args }) => {
      const input = args as { id: string };
      return input.id === 'b' ? { ...input, note: 'rewritten by a hook' } : undefined;
    };
    const { clock, probe, engine } = await probeEngine([batch], {}, { rewriteArguments });
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    const schedule = scheduleOf(history);
    expect(schedule.mode).toBe('groups');
    expect(schedule.groups).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
      [3, 4],
      [4, 6],
    ]);
    const reasons = schedule.boundaries.map((b) => b.reason);
    expect(reasons[0]).toMatch(/rewritten/);
    expect(reasons[1]).toMatch(/rewritten/);
    expect(reasons.slice(2)).toEqual(['global', 'global']);
    // The claim came from the model's arguments; the call ran with the rewritten ones.
    expect(schedule.claims[1]!.label).toBe('paths [/w/b]');
    expect(probe.inputs.get('b')?.note).toBe('rewritten by a hook');
    expect(startTimes(probe, ['a', 'b', 'c', 'g', 'd', 'e'])).toEqual([0, 10, 20, 30, 40, 40]);
  });
});

describe('duplicates', () => {
  it('run the batch serially; the repeat returns the first call’s result without executing', async () => {
    const batch = [
      { id: 'c1', name: 'probe', args: { id: 'x', claim: { kind: 'shared' }, ms: 10 } },
      call('y', shared(), { ms: 10 }),
      // Same tool and canonical arguments, keys in another order.
      { id: 'c3', name: 'probe', args: { ms: 10, claim: { kind: 'shared' }, id: 'x' } },
    ];
    const { clock, probe, engine, seen } = await probeEngine([batch]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    const schedule = scheduleOf(history);
    expect(schedule.mode).toBe('serial');
    expect(schedule.groups).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ]);
    expect(schedule.boundaries).toEqual([
      { index: 1, previous: 'c1', next: 'y', reason: 'serial: duplicate calls in the batch' },
      { index: 2, previous: 'c1', next: 'c3', reason: 'duplicate' },
    ]);
    expect(probe.executions.get('x')).toBe(1);
    expect(probe.maxInFlight).toBe(1);
    expect(startTimes(probe, ['x', 'y'])).toEqual([0, 10]);

    const finished = finishedById(history);
    expect(finished.get('c1')).toMatchObject({ ok: true, output: { id: 'x' } });
    expect(finished.get('c1')?.synthetic).toBeUndefined();
    expect(finished.get('c3')).toMatchObject({ ok: true, output: { id: 'x' }, synthetic: true });
    expect(eventsOf(history, 'tool.started').map((e) => e.callId)).toEqual(['c1', 'y', 'c3']);
    const results = toolMessages(seen[1]!.messages);
    expect(results.map((m) => [m.toolCallId, JSON.parse(m.content)])).toEqual([
      ['c1', { id: 'x' }],
      ['y', { id: 'y' }],
      ['c3', { id: 'x' }],
    ]);
  });
});

describe('order of events and results', () => {
  it('tool.started in input order, tool.finished in completion order, results to the model and the store in input order', async () => {
    const store = new MemoryStore();
    const { clock, probe, engine, seen } = await probeEngine(
      [[call('a', shared(), { ms: 30 }), call('b', shared(), { ms: 10 }), call('c', shared(), { ms: 20 })]],
      {},
      { store },
    );
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    expect(eventsOf(history, 'tool.started').map((e) => e.callId)).toEqual(['a', 'b', 'c']);
    expect(eventsOf(history, 'tool.finished').map((e) => [e.callId, e.durationMs])).toEqual([
      ['b', 10],
      ['c', 20],
      ['a', 30],
    ]);
    const expected = [
      { role: 'tool', toolCallId: 'a', content: JSON.stringify({ id: 'a' }) },
      { role: 'tool', toolCallId: 'b', content: JSON.stringify({ id: 'b' }) },
      { role: 'tool', toolCallId: 'c', content: JSON.stringify({ id: 'c' }) },
    ];
    expect(toolMessages(seen[1]!.messages)).toEqual(expected);
    await settle();
    const conversation = await store.readConversation('s');
    expect(conversation.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'tool', 'assistant']);
    expect(toolMessages(conversation)).toEqual(expected);
  });
});

describe('a tool’s own error', () => {
  it('becomes an error result the model sees, and the batch goes on with its later groups', async () => {
    const { clock, probe, engine, seen } = await probeEngine([
      [
        call('a', paths('/w/a'), { ms: 5, fail: 'boom' }),
        call('b', paths('/w/b'), { ms: 5, fail: 'disk is full', code: 'ENOSPC' }),
        call('g', global(), { ms: 5 }),
        call('h', shared(), { ms: 5 }),
      ],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    const finished = finishedById(history);
    expect(finished.get('a')).toMatchObject({ ok: false, error: { code: 'tool_error', message: 'boom' } });
    expect(finished.get('b')).toMatchObject({ ok: false, error: { code: 'ENOSPC', message: 'disk is full' } });
    expect(finished.get('a')?.synthetic).toBeUndefined();
    expect(finished.get('g')).toMatchObject({ ok: true });
    expect(finished.get('h')).toMatchObject({ ok: true });
    expect(probe.started()).toEqual(['a', 'b', 'g', 'h']);
    expect(JSON.parse(toolMessages(seen[1]!.messages)[0]!.content)).toMatchObject({
      error: { code: 'tool_error', message: 'boom' },
    });
  });
});

describe('a tool call’s own timeout', () => {
  it('[tool_service] default_timeout_seconds ends a call with code timeout, aborts it, and the batch goes on', async () => {
    const { clock, probe, engine } = await probeEngine(
      [[call('slow', shared(), { ms: 5_000 }), call('next', global(), { ms: 10 })]],
      {
        tool_service: { default_timeout_seconds: 1 },
      },
    );
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId, [1_000]);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed' });

    expect(probe.timeouts.get('slow')).toBe(1_000);
    const finished = finishedById(history);
    expect(finished.get('slow')).toMatchObject({
      ok: false,
      error: { code: 'timeout', message: expect.stringContaining('1000 ms') },
      durationMs: 1_000,
    });
    expect(finished.get('slow')?.synthetic).toBeUndefined();
    expect(probe.signals.get('slow')?.aborted).toBe(true);
    expect(probe.startOf('next')?.at).toBe(1_000);
    expect(finished.get('next')).toMatchObject({ ok: true });
  });

  it('is clipped to the run’s remaining deadline', async () => {
    const { clock, probe, engine } = await probeEngine([
      [call('first', shared(), { ms: 200 })],
      [call('slow', shared(), { ms: 5_000 })],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go', timeoutMs: 800 });
    const history = await driveRun(engine, clock, probe, run.runId, [800]);

    // 800 ms for the run, 200 of them spent in the first batch.
    expect(probe.timeouts.get('first')).toBe(800);
    expect(probe.timeouts.get('slow')).toBe(600);
    expect(finishedById(history).get('slow')).toMatchObject({ ok: false, error: { code: 'timeout' } });
    expect(probe.signals.get('slow')?.aborted).toBe(true);
    expect(history.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'timeout' } });
  });
});

describe('tool.scheduled', () => {
  it('explains itself: groups, each call’s claim and label, and the conflicting pair and resource at each boundary', async () => {
    const batch = [
      call('r1', shared(['/w/a']), { ms: 5 }),
      call('r2', shared(['/w/b']), { ms: 5 }),
      call('w', paths('/w/a/x.ts'), { ms: 5 }),
      call('n1', nodes('n1'), { ms: 5 }),
      call('n2', nodes('n1', 'n2'), { ms: 5 }),
      call('s', sessions('k'), { ms: 5 }),
      call('u', shared(), { ms: 5 }),
      call('g', global(), { ms: 5 }),
    ];
    const { clock, probe, engine } = await probeEngine([batch]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    const history = await driveRun(engine, clock, probe, run.runId);
    const schedule = scheduleOf(history);

    expect(schedule).toMatchObject({ turn: 0, mode: 'groups', concurrency: 8 });
    expect(schedule.claims).toEqual([
      { callId: 'r1', tool: 'probe', claim: { kind: 'shared', reads: ['/w/a'] }, label: 'shared reads [/w/a]' },
      { callId: 'r2', tool: 'probe', claim: { kind: 'shared', reads: ['/w/b'] }, label: 'shared reads [/w/b]' },
      {
        callId: 'w',
        tool: 'probe',
        claim: { kind: 'exclusive', scope: { kind: 'paths', paths: ['/w/a/x.ts'] } },
        label: 'paths [/w/a/x.ts]',
      },
      {
        callId: 'n1',
        tool: 'probe',
        claim: { kind: 'exclusive', scope: { kind: 'nodes', nodes: ['n1'] } },
        label: 'nodes [n1]',
      },
      {
        callId: 'n2',
        tool: 'probe',
        claim: { kind: 'exclusive', scope: { kind: 'nodes', nodes: ['n1', 'n2'] } },
        label: 'nodes [n1, n2]',
      },
      {
        callId: 's',
        tool: 'probe',
        claim: { kind: 'exclusive', scope: { kind: 'sessions', sessions: ['k'] } },
        label: 'sessions [k]',
      },
      { callId: 'u', tool: 'probe', claim: { kind: 'shared' }, label: 'shared' },
      { callId: 'g', tool: 'probe', claim: { kind: 'exclusive', scope: { kind: 'global' } }, label: 'global' },
    ]);
    expect(schedule.groups).toEqual([
      [0, 2],
      [2, 4],
      [4, 5],
      [5, 6],
      [6, 7],
      [7, 8],
    ]);
    expect(schedule.boundaries).toEqual([
      { index: 2, previous: 'r1', next: 'w', reason: 'path /w/a overlaps /w/a/x.ts' },
      { index: 4, previous: 'n1', next: 'n2', reason: 'node n1' },
      { index: 5, previous: 'n2', next: 's', reason: 'unknown footprint of delegated sessions [k]' },
      { index: 6, previous: 's', next: 'u', reason: 'unknown read footprint vs sessions [k]' },
      { index: 7, previous: 'u', next: 'g', reason: 'global' },
    ]);
    expect(schedule.deps).toBeUndefined();
    // It comes before the batch's first call, right after the model's message.
    const types = history.map((e) => e.type);
    expect(types.indexOf('tool.scheduled')).toBe(types.indexOf('model.message') + 1);
    expect(types.indexOf('tool.scheduled')).toBeLessThan(types.indexOf('tool.started'));
  });
});

describe('hot reload', () => {
  it('reconfigure({ tool_service: { parallel_tool_concurrency: 1 } }) applies to the next batch, not the running one', async () => {
    const { probe, engine } = await probeEngine([
      [call('a', shared(), { hold: true }), call('b', shared(), { hold: true })],
      [call('c', shared(), { hold: true }), call('d', shared(), { hold: true })],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    await until(() => probe.isHolding('a') && probe.isHolding('b'), 'the first batch runs in parallel');

    expect(engine.reconfigure({ tool_service: { parallel_tool_concurrency: 1 } }).applied).toContain(
      'tool_service.parallel_tool_concurrency',
    );
    probe.release('a');
    probe.release('b');
    await until(() => probe.isHolding('c'), 'the second batch starts');
    await settle();
    expect(probe.isRunning('d')).toBe(false);
    probe.release('c');
    await until(() => probe.isHolding('d'), 'd starts after c');
    probe.release('d');
    await engine.wait(run.runId);

    const history = await engine.history(run.runId);
    expect(scheduleOf(history, 0)).toMatchObject({ mode: 'groups', concurrency: 8, groups: [[0, 2]] });
    expect(scheduleOf(history, 1)).toMatchObject({
      mode: 'serial',
      concurrency: 1,
      groups: [
        [0, 1],
        [1, 2],
      ],
      boundaries: [{ index: 1, previous: 'c', next: 'd', reason: 'serial: concurrency < 2' }],
    });
    expect(probe.maxInFlight).toBe(2);
  });

  it('reconfigure({ tool_service: { scheduling: "dag" } }) applies to the next batch', async () => {
    const { clock, probe, engine } = await probeEngine([
      [call('a', paths('/w/a'), { ms: 5 })],
      [call('b', paths('/w/a'), { ms: 5 }), call('c', paths('/w/b'), { ms: 5 })],
    ]);
    const run = await engine.submit({ sessionId: 's', input: 'go' });
    await until(() => probe.isRunning('a'), 'the first batch runs');
    engine.reconfigure({ tool_service: { scheduling: 'dag' } });
    const history = await driveRun(engine, clock, probe, run.runId);
    expect(scheduleOf(history, 0).mode).toBe('groups');
    expect(scheduleOf(history, 1)).toMatchObject({ mode: 'dag', deps: [[], []] });
  });
});
