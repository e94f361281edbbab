/*
 * cancel(runId) and stopSession(sessionId) (docs/runs.md, "The wait lane", "Deadlines and
 * cancellation"): a running run is aborted all the way down to its tool's AbortSignal, a queued one
 * ends without ever starting, and both calls return only once the slot and the permits are free.
 */
import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, expectWellFormedHistory, heldModel, holdTool, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

async function holdingEngine(config: Record<string, unknown> = {}) {
  const hold = holdTool();
  const engine = await newEngine({
    tools: [hold.tool],
    models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
    config: { execution: { busy_policy: 'queue', ...config } },
  });
  return { engine, hold };
}

describe('cancel', () => {
  it('aborts a running run down to its tool’s signal and returns once the run is released', async () => {
    const { engine, hold } = await holdingEngine();
    const run = await engine.submit({ sessionId: 's', input: 'long' });
    await until(() => hold.isHolding(run.runId), 'the run is inside its tool');
    const signal = hold.signalOf(run.runId)!;
    expect(signal.aborted).toBe(false);

    expect(await engine.cancel(run.runId, 'user pressed stop')).toBe(true);
    expect(signal.aborted).toBe(true);
    const snap = engine.snapshot();
    expect(snap.global.inUse).toBe(0);
    expect(snap.running).toEqual([]);
    expect(snap.sessions.some((s) => s.activeRunId === run.runId)).toBe(false);

    expect(await engine.wait(run.runId)).toEqual({ runId: run.runId, state: 'cancelled', reason: 'user pressed stop' });
    expect(engine.status(run.runId)).toMatchObject({ state: 'cancelled', reason: 'user pressed stop' });
    await settle();
    const history = await engine.history(run.runId);
    expectWellFormedHistory(history);
    const milestones = [
      'run.started',
      'turn.started',
      'model.message',
      'tool.started',
      'turn.finished',
      'run.cancelled',
    ];
    expect(history.map((e) => e.type).filter((t) => milestones.includes(t))).toEqual(
      milestones.filter((t) => t !== 'turn.finished'),
    );
    expect(history.at(-1)).toMatchObject({ reason: 'user pressed stop' });
    for (const event of history) if (event.type === 'tool.finished') expect(event.ok).toBe(false);
  });

  it('uses the reason "cancelled" when none is given', async () => {
    const { engine, hold } = await holdingEngine();
    const run = await engine.submit({ sessionId: 's', input: 'long' });
    await until(() => hold.isHolding(run.runId), 'the run is inside its tool');
    await engine.cancel(run.runId);
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'cancelled', reason: 'cancelled' });
  });

  it('ends a run queued in the wait lane without ever starting it', async () => {
    const { engine, hold } = await holdingEngine();
    const first = await engine.submit({ sessionId: 's', input: 'first' });
    const queued = await engine.submit({ sessionId: 's', input: 'second' });
    const after = await engine.submit({ sessionId: 's', input: 'third' });
    expect(queued.outcome).toBe('queued');

    expect(await engine.cancel(queued.runId)).toBe(true);
    expect(await engine.wait(queued.runId)).toMatchObject({ state: 'cancelled', reason: 'cancelled' });
    expect(engine.snapshot().sessions).toEqual([
      { sessionId: 's', activeRunId: first.runId, laneDepth: 1, lane: [after.runId] },
    ]);

    await until(() => hold.isHolding(first.runId), 'first holds');
    hold.release(first.runId);
    await until(() => hold.isHolding(after.runId), 'the next one in the lane runs');
    hold.release(after.runId);
    await engine.wait(after.runId);
    expect((await engine.history(queued.runId)).map((e) => e.type)).toEqual(['run.queued', 'run.cancelled']);
    expect(hold.signalOf(queued.runId)).toBeUndefined();
  });

  it('ends a run waiting for limiter permits and gives up its place', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { max_runs_global: 1 } },
    });
    const holder = await engine.submit({ sessionId: 'a', input: 'holder' });
    const waiting = await engine.submit({ sessionId: 'b', input: 'waits' });
    const next = await engine.submit({ sessionId: 'c', input: 'waits too' });
    expect([waiting.outcome, next.outcome]).toEqual(['queued', 'queued']);
    expect(engine.snapshot().waiting).toBe(2);

    expect(await engine.cancel(waiting.runId)).toBe(true);
    expect(engine.snapshot()).toMatchObject({ waiting: 1, global: { inUse: 1 } });
    expect(engine.snapshot().sessions.some((s) => s.activeRunId === waiting.runId)).toBe(false);
    expect((await engine.history(waiting.runId)).map((e) => e.type)).toEqual(['run.queued', 'run.cancelled']);

    await until(() => model.isThinking(holder.runId), 'the holder thinks');
    model.answer(holder.runId);
    await until(() => model.isThinking(next.runId), 'the permit goes to the next waiter');
    model.answer(next.runId);
    await engine.wait(next.runId);
    expect(model.calls.map((c) => c.runId)).toEqual([holder.runId, next.runId]);
  });

  it('returns false for a finished or unknown run', async () => {
    const engine = await newEngine();
    const run = await engine.submit({ sessionId: 's', input: 'quick' });
    await engine.wait(run.runId);
    expect(await engine.cancel(run.runId)).toBe(false);
    expect(await engine.cancel('no-such-run')).toBe(false);
    expect((await engine.wait(run.runId)).state).toBe('completed');
  });

  it('cancels the runs a run delegated to (parentRunId)', async () => {
    const { engine, hold } = await holdingEngine();
    const parent = await engine.submit({ sessionId: 'parent', input: 'delegate' });
    const child = await engine.submit({ sessionId: 'child', input: 'sub task', parentRunId: parent.runId });
    await until(() => hold.isHolding(parent.runId) && hold.isHolding(child.runId), 'both runs hold');

    await engine.cancel(parent.runId);
    expect((await engine.wait(parent.runId)).state).toBe('cancelled');
    expect(await engine.wait(child.runId)).toMatchObject({ state: 'cancelled', reason: 'parent cancelled' });
    expect(hold.signalOf(child.runId)?.aborted).toBe(true);
  });
});

describe('stopSession', () => {
  it('cancels the running run with reason "stopped" and purges the lane', async () => {
    const { engine, hold } = await holdingEngine();
    const recorder = recordEvents(engine);
    const running = await engine.submit({ sessionId: 's', input: 'running' });
    const q1 = await engine.submit({ sessionId: 's', input: 'q1' });
    const q2 = await engine.submit({ sessionId: 's', input: 'q2' });
    const other = await engine.submit({ sessionId: 'other', input: 'untouched' });
    await until(() => hold.isHolding(running.runId) && hold.isHolding(other.runId), 'both sessions hold');

    expect(await engine.stopSession('s')).toEqual({ cancelled: running.runId, purged: 2 });
    expect(hold.signalOf(running.runId)?.aborted).toBe(true);
    const snap = engine.snapshot();
    expect(snap.running).toEqual([other.runId]);
    expect(snap.global.inUse).toBe(1);
    expect(
      snap.sessions.filter((s) => s.sessionId === 's' && (s.activeRunId !== undefined || s.laneDepth > 0)),
    ).toEqual([]);

    expect(await engine.wait(running.runId)).toMatchObject({ state: 'cancelled', reason: 'stopped' });
    expect(await engine.wait(q1.runId)).toMatchObject({ state: 'cancelled', reason: 'purged' });
    expect(await engine.wait(q2.runId)).toMatchObject({ state: 'cancelled', reason: 'purged' });
    await settle();
    for (const purged of [q1, q2]) expect(recorder.types(purged.runId)).toEqual(['run.queued', 'run.cancelled']);
    expect(hold.signalOf(other.runId)?.aborted).toBe(false);
    hold.release(other.runId);
    expect((await engine.wait(other.runId)).state).toBe('completed');
    recorder.close();
  });

  it('leaves nothing to run afterwards: the stopped run’s unconsumed steers are purged too', async () => {
    const { engine, hold } = await holdingEngine({ busy_policy: 'steer' });
    const recorder = recordEvents(engine);
    const running = await engine.submit({ sessionId: 's', input: 'running' });
    await until(() => hold.isHolding(running.runId), 'the run holds');
    const steer = await engine.submit({ sessionId: 's', input: 'a steer' });
    expect(steer.outcome).toBe('steered');

    expect(await engine.stopSession('s')).toEqual({ cancelled: running.runId, purged: 1 });
    const snap = engine.snapshot();
    expect(snap.running).toEqual([]);
    expect(snap.global.inUse).toBe(0);
    expect(await engine.wait(steer.runId)).toMatchObject({ state: 'cancelled', reason: 'purged' });
    await settle();
    expect(engine.snapshot().running).toEqual([]);
    expect(
      recorder
        .runEvents()
        .filter((e) => e.type === 'run.started')
        .map((e) => e.runId),
    ).toEqual([running.runId]);
    recorder.close();
  });

  it('on a session with nothing running purges nothing', async () => {
    const engine = await newEngine();
    expect(await engine.stopSession('unknown')).toEqual({ purged: 0 });
  });
});
