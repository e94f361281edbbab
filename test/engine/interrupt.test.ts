/*
 * busyPolicy "interrupt" (docs/runs.md, "Busy sessions"): the running run is cancelled and the
 * message runs as a fresh run once the slot frees; a burst of interrupts leaves only the last one
 * to run, and an interrupt never cancels a run that had not started yet.
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
    config: { execution: config },
  });
  return { engine, hold };
}

describe('interrupt', () => {
  it('cancels the running run, then runs the new message', async () => {
    const { engine, hold } = await holdingEngine();
    const recorder = recordEvents(engine);
    const running = await engine.submit({ sessionId: 's', input: 'old task' });
    await until(() => hold.isHolding(running.runId), 'the run holds');

    const interrupt = await engine.submit({ sessionId: 's', input: 'new task', busyPolicy: 'interrupt' });
    expect(interrupt).toMatchObject({ outcome: 'queued', position: 1 });
    expect(hold.signalOf(running.runId)?.aborted).toBe(true);
    expect(await engine.wait(running.runId)).toMatchObject({ state: 'cancelled', reason: 'interrupted' });

    await until(() => hold.isHolding(interrupt.runId), 'the interrupting message runs');
    hold.release(interrupt.runId);
    expect(await engine.wait(interrupt.runId)).toMatchObject({ state: 'completed', output: 'finished' });
    await settle();
    const order = recorder
      .runEvents()
      .filter((e) => e.type === 'run.started' || e.type === 'run.cancelled' || e.type === 'run.completed')
      .map((e) => `${e.type}:${e.runId === running.runId ? 'old' : 'new'}`);
    expect(order).toEqual(['run.started:old', 'run.cancelled:old', 'run.started:new', 'run.completed:new']);
    recorder.close();
  });

  it('in a burst of five, only the last runs; the others are superseded without ever starting', async () => {
    const { engine, hold } = await holdingEngine();
    const recorder = recordEvents(engine);
    const running = await engine.submit({ sessionId: 's', input: 'old task' });
    await until(() => hold.isHolding(running.runId), 'the run holds');

    const burst = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => engine.submit({ sessionId: 's', input: `interrupt ${i}`, busyPolicy: 'interrupt' })),
    );
    expect(burst.map((b) => b.outcome)).toEqual(['queued', 'queued', 'queued', 'queued', 'queued']);
    const last = burst[4]!;
    await until(() => hold.isHolding(last.runId), 'the last interrupt runs');
    hold.release(last.runId);
    expect(await engine.wait(last.runId)).toMatchObject({ state: 'completed' });

    expect(await engine.wait(running.runId)).toMatchObject({ state: 'cancelled', reason: 'interrupted' });
    for (const superseded of burst.slice(0, 4)) {
      expect(await engine.wait(superseded.runId)).toMatchObject({ state: 'cancelled', reason: 'superseded' });
      const history = await engine.history(superseded.runId);
      expectWellFormedHistory(history);
      expect(history.map((e) => e.type)).not.toContain('run.started');
    }
    await settle();
    const started = recorder
      .runEvents()
      .filter((e) => e.type === 'run.started')
      .map((e) => e.runId);
    expect(started).toEqual([running.runId, last.runId]);
    recorder.close();
  });

  it('on an idle session starts at once', async () => {
    const { engine, hold } = await holdingEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x', busyPolicy: 'interrupt' });
    expect(run.outcome).toBe('started');
    await until(() => hold.isHolding(run.runId), 'it runs');
  });

  it('does not cancel a run that is still waiting for limiter permits', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { max_runs_global: 1 } },
    });
    const blocker = await engine.submit({ sessionId: 'other', input: 'blocker' });
    const waiting = await engine.submit({ sessionId: 's', input: 'waiting for a permit' });
    expect(waiting.outcome).toBe('queued');
    const interrupt = await engine.submit({ sessionId: 's', input: 'interrupt', busyPolicy: 'interrupt' });
    expect(interrupt).toMatchObject({ outcome: 'queued', position: 1 });
    await settle();
    expect(engine.status(waiting.runId)?.state).toBe('queued');

    await until(() => model.isThinking(blocker.runId), 'blocker thinks');
    model.answer(blocker.runId);
    await until(() => model.isThinking(waiting.runId), 'the waiting run gets its permit and runs');
    model.answer(waiting.runId);
    expect((await engine.wait(waiting.runId)).state).toBe('completed');
    await until(() => model.isThinking(interrupt.runId), 'then the interrupt runs');
    model.answer(interrupt.runId);
    expect((await engine.wait(interrupt.runId)).state).toBe('completed');
  });

  it('keeps messages that were queued (not interrupting) ahead of it', async () => {
    const { engine, hold } = await holdingEngine();
    const running = await engine.submit({ sessionId: 's', input: 'old' });
    await until(() => hold.isHolding(running.runId), 'the run holds');
    const queued = await engine.submit({ sessionId: 's', input: 'queued', busyPolicy: 'queue' });
    const interrupt = await engine.submit({ sessionId: 's', input: 'interrupt', busyPolicy: 'interrupt' });
    expect([queued.position, interrupt.position]).toEqual([1, 2]);
    expect((await engine.wait(running.runId)).state).toBe('cancelled');

    await until(() => hold.isHolding(queued.runId), 'the queued message runs first');
    expect(hold.isHolding(interrupt.runId)).toBe(false);
    hold.release(queued.runId);
    expect((await engine.wait(queued.runId)).state).toBe('completed');
    await until(() => hold.isHolding(interrupt.runId), 'then the interrupt');
    hold.release(interrupt.runId);
    expect((await engine.wait(interrupt.runId)).state).toBe('completed');
  });
});
