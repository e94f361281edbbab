/*
 * The second round of busy-session policies (docs/runs.md, "Busy sessions", "The wait lane"):
 * reject, rollback, collect, and what a full lane does (lane_overflow). A held model decides
 * exactly when each run leaves its turn; the collect quiet window runs on a SimulatedClock.
 */
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { admitRequest } from '../../src/core/run-request.js';
import { collectedInput } from '../../src/engine/collect.js';
import { EngineError } from '../../src/engine/index.js';
import { MemoryStore, type RunRecord } from '../../src/store/index.js';
import { SimulatedClock, advance, engineFixture, heldModel, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

async function busySession(execution: Record<string, unknown> = {}, clock?: SimulatedClock) {
  const model = heldModel();
  const engine = await newEngine({
    ...(clock ? { clock } : {}),
    models: { scripted: model.provider },
    config: { execution: { busy_policy: 'queue', ...execution } },
  });
  const running = await engine.submit({ sessionId: 's', input: 'the first request', runId: 'first' });
  await until(() => model.isThinking('first'), 'the first run thinks');
  return { engine, model, running };
}

/** The user messages the model saw at the run's first turn. */
function userTexts(model: ReturnType<typeof heldModel>, runId: string): string[] {
  const call = model.calls.find((c) => c.runId === runId);
  return (call?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
}

describe('busyPolicy reject (LangGraph multitask_strategy "reject")', () => {
  it('answers session_busy naming the active run; nothing is stored and the run goes on', async () => {
    const { engine, model } = await busySession();
    const recorder = recordEvents(engine, { sessionId: 's' });
    const before = engine.snapshot();
    const refused = engine.submit({ sessionId: 's', input: 'not now', runId: 'refused', busyPolicy: 'reject' });
    await expect(refused).rejects.toBeInstanceOf(EngineError);
    await expect(refused).rejects.toMatchObject({
      code: 'session_busy',
      details: { activeRunId: 'first', sessionId: 's' },
    });
    await settle();
    expect(engine.snapshot()).toEqual(before);
    expect(recorder.all).toEqual([]);
    expect(engine.status('refused')).toBeUndefined();
    expect(await engine.getRun('refused')).toBeUndefined();
    // The id stays free: nothing of the refused message was kept.
    model.answer('first');
    expect((await engine.wait('first')).state).toBe('completed');
    expect(await engine.submit({ sessionId: 's', input: 'now', runId: 'refused', busyPolicy: 'reject' })).toMatchObject(
      { outcome: 'started' },
    );
    recorder.close();
  });

  it('is refused while messages wait in the lane too', async () => {
    const { engine } = await busySession();
    await engine.submit({ sessionId: 's', input: 'waiting' });
    await expect(engine.submit({ sessionId: 's', input: 'x', busyPolicy: 'reject' })).rejects.toMatchObject({
      code: 'session_busy',
    });
  });
});

describe('busyPolicy rollback (LangGraph multitask_strategy "rollback")', () => {
  it('cancels the active run as rolled_back, and the new message runs next, ahead of the lane, told what was rolled back', async () => {
    const { engine, model } = await busySession();
    await engine.submit({ sessionId: 's', input: 'queued before', runId: 'waiting' });
    expect(
      await engine.submit({ sessionId: 's', input: 'the right request', runId: 'fix', busyPolicy: 'rollback' }),
    ).toMatchObject({ outcome: 'queued', position: 1 });
    expect(await engine.wait('first')).toMatchObject({ state: 'cancelled', reason: 'rolled_back' });
    expect((await engine.getRun('first'))?.reason).toBe('rolled_back');
    expect((await engine.history('first')).at(-1)).toMatchObject({ type: 'run.cancelled', reason: 'rolled_back' });
    await until(() => model.isThinking('fix'), 'the rollback message runs next');
    expect(engine.status('waiting')?.state).toBe('queued');
    expect(userTexts(model, 'fix').at(-1)).toBe('the right request');
    expect(userTexts(model, 'fix').some((t) => t.includes('rolled back') && t.includes('the first request'))).toBe(
      true,
    );
    model.answer('fix');
    await until(() => model.isThinking('waiting'), 'then the lane');
  });

  it('rollbacks sent together: the last one runs, each earlier one ends cancelled (superseded while waiting, or rolled back once started)', async () => {
    const { engine, model } = await busySession();
    // Submitted together: r1 still waits when r2 arrives.
    await Promise.all([
      engine.submit({ sessionId: 's', input: 'a', runId: 'r1', busyPolicy: 'rollback' }),
      engine.submit({ sessionId: 's', input: 'b', runId: 'r2', busyPolicy: 'rollback' }),
    ]);
    expect(await engine.wait('first')).toMatchObject({ state: 'cancelled', reason: 'rolled_back' });
    expect(['superseded', 'rolled_back']).toContain((await engine.wait('r1')).reason);
    await until(() => model.isThinking('r2'), 'the last rollback runs');
  });

  it('for an idle session it simply starts', async () => {
    const model = heldModel();
    const engine = await newEngine({ models: { scripted: model.provider } });
    expect(await engine.submit({ sessionId: 's', input: 'x', busyPolicy: 'rollback' })).toMatchObject({
      outcome: 'started',
    });
  });
});

describe('lane_overflow (OpenClaw drop policies)', () => {
  it('drop_oldest: the oldest waiting message ends cancelled/dropped_overflow and the newest waits', async () => {
    const { engine } = await busySession({ wait_lane_capacity: 2, lane_overflow: 'drop_oldest' });
    await engine.submit({ sessionId: 's', input: 'q1', runId: 'q1' });
    await engine.submit({ sessionId: 's', input: 'q2', runId: 'q2' });
    expect(await engine.submit({ sessionId: 's', input: 'q3', runId: 'q3' })).toMatchObject({
      outcome: 'queued',
      position: 2,
    });
    expect(await engine.wait('q1')).toMatchObject({ state: 'cancelled', reason: 'dropped_overflow' });
    expect((await engine.history('q1')).at(-1)).toMatchObject({ type: 'run.cancelled', reason: 'dropped_overflow' });
    expect(engine.snapshot().sessions).toEqual([
      { sessionId: 's', activeRunId: 'first', laneDepth: 2, lane: ['q2', 'q3'] },
    ]);
  });

  it('summarize_oldest: the next run that starts gets a notice with the first words of each dropped message', async () => {
    const { engine, model } = await busySession({ wait_lane_capacity: 1, lane_overflow: 'summarize_oldest' });
    await engine.submit({
      sessionId: 's',
      input: 'please rename every file in the docs folder to kebab case',
      runId: 'q1',
    });
    await engine.submit({ sessionId: 's', input: 'also fix the typo', runId: 'q2' });
    await engine.submit({ sessionId: 's', input: 'and run the tests', runId: 'q3' });
    expect((await engine.wait('q2')).reason).toBe('dropped_overflow');
    model.answer('first');
    await until(() => model.isThinking('q3'), 'q3 starts');
    const [notice, input] = userTexts(model, 'q3').slice(-2);
    expect(input).toBe('and run the tests');
    expect(notice).toBe(
      '[2 earlier messages were dropped unanswered because too many were waiting:]\n' +
        '1. "please rename every file in the docs folder …" (id q1)\n' +
        '2. "also fix the typo" (id q2)',
    );
  });

  it('reject_newest (the default) keeps today’s lane_full', async () => {
    const { engine } = await busySession({ wait_lane_capacity: 1 });
    await engine.submit({ sessionId: 's', input: 'q1' });
    await expect(engine.submit({ sessionId: 's', input: 'q2' })).rejects.toMatchObject({ code: 'lane_full' });
  });
});

describe('busyPolicy collect (OpenClaw queue mode "collect")', () => {
  it('compatible messages waiting at the lane front become one run listing each in order; each id answers for it', async () => {
    const clock = new SimulatedClock();
    const { engine, model } = await busySession({ busy_policy: 'collect', collect_quiet_ms: 500 }, clock);
    for (const [i, text] of ['one', 'two', 'three'].entries()) {
      await engine.submit({ sessionId: 's', input: text, runId: `c${i + 1}`, metadata: { from: 'ana' } });
    }
    model.answer('first');
    await engine.wait('first');
    await settle();
    // The quiet window is still open: nothing starts yet, and a message arriving now joins.
    expect(model.isThinking('c1')).toBe(false);
    await engine.submit({ sessionId: 's', input: 'four', runId: 'c4' });
    await engine.submit({ sessionId: 's', input: 'with a model of its own', runId: 'other', model: 'scripted:big' });
    expect(engine.snapshot().sessions[0]?.laneDepth).toBe(5);
    await advance(clock, 499);
    expect(model.isThinking('c1')).toBe(false);
    await advance(clock, 1);
    await until(() => model.isThinking('c1'), 'the batch starts once the lane is quiet');
    const merged = userTexts(model, 'c1').at(-1)!;
    expect(merged.split('\n').filter((l) => l.startsWith('[message'))).toEqual([
      expect.stringMatching(/^\[message 1 of 4, id c1, sent .*, from=ana\]$/),
      expect.stringMatching(/^\[message 2 of 4, id c2, /),
      expect.stringMatching(/^\[message 3 of 4, id c3, /),
      expect.stringMatching(/^\[message 4 of 4, id c4, /),
    ]);
    expect(merged).not.toContain('with a model of its own');
    expect(engine.status('c3')).toMatchObject({ runId: 'c1', state: 'running', carries: ['c1', 'c2', 'c3', 'c4'] });
    expect(await engine.getRun('c2')).toMatchObject({ runId: 'c1' });
    const waited = engine.wait('c4');
    model.answer('c1', 'all four answered');
    expect(await waited).toMatchObject({ runId: 'c1', state: 'completed', output: 'all four answered' });
    // The incompatible message was not merged: it runs on its own, after the batch.
    await until(() => model.isThinking('other'), 'the other-model message runs alone');
    expect(userTexts(model, 'other').at(-1)).toBe('with a model of its own');
  });

  it('collect_max caps a batch; the rest forms the next one', async () => {
    const { engine, model } = await busySession({ busy_policy: 'collect', collect_quiet_ms: 0, collect_max: 2 });
    for (const id of ['c1', 'c2', 'c3']) await engine.submit({ sessionId: 's', input: id, runId: id });
    model.answer('first');
    await until(() => model.isThinking('c1'), 'the first batch');
    expect(engine.status('c2')?.runId).toBe('c1');
    expect(engine.status('c3')).toMatchObject({ runId: 'c3', state: 'queued' });
  });
});

describe('collect across a crash (the merge is one durable write)', () => {
  const at = '2026-01-01T00:00:00.000Z';
  const queuedRecord = (runId: string, input: string, extra: Partial<RunRecord> = {}): RunRecord => ({
    runId,
    sessionId: 's',
    agentId: 'main',
    request: { ...admitRequest({ sessionId: 's', input, busyPolicy: 'collect' }, defaultConfig()), runId },
    state: 'queued',
    queuedFor: 'session_busy',
    createdAt: at,
    ...extra,
  });

  it.each([
    ['after the carrying record, before anything else', false],
    ['after the carrying record and the merged messages', true],
  ])(
    'crashed %s: the batch runs once, its messages never run alone, each id answers for it',
    async (_case, mergedStored) => {
      const store = new MemoryStore();
      const merged = collectedInput([
        { runId: 'c1', input: 'one' },
        { runId: 'c2', input: 'two' },
      ]);
      const carrier = queuedRecord('c1', 'one', { carries: ['c1', 'c2'] });
      store.saveRun({ ...carrier, request: { ...carrier.request, input: merged } });
      store.saveRun(queuedRecord('c2', 'two'));
      // The lane as stored before the merge: both still waiting.
      store.saveLane('s', [
        { runId: 'c1', viaInterrupt: false },
        { runId: 'c2', viaInterrupt: false },
      ]);
      if (mergedStored) {
        store.saveSteer({
          steerId: 'c2',
          sessionId: 's',
          into: 'c1',
          state: 'merged',
          followUp: 'c1',
          createdAt: at,
          request: queuedRecord('c2', 'two').request,
        });
      }
      const model = heldModel();
      const engine = await newEngine({ store, models: { scripted: model.provider } });
      await until(() => model.isThinking('c1'), 'the carrying run starts');
      expect(userTexts(model, 'c1').at(-1)).toBe(merged);
      const waited = engine.wait('c2');
      model.answer('c1', 'both');
      expect(await waited).toMatchObject({ runId: 'c1', state: 'completed', output: 'both' });
      await settle();
      expect(model.calls.map((c) => c.runId)).toEqual(['c1']);
      expect(await engine.getRun('c2')).toMatchObject({ runId: 'c1', state: 'completed' });
    },
  );
});
