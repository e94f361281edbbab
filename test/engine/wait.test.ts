/*
 * engine.wait(runId, { signal, timeoutMs }): waiting can be given up without touching the
 * run — an aborted signal rejects with its reason, a timeout (on the engine's clock) rejects
 * with EngineError `timeout` — and a later wait still gets the run's result.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { isEngineError } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { advance, engineFixture, holdTool } from './fixtures.js';
import { until } from '../support/eventually.js';

const newEngine = engineFixture();

async function heldRun(clock?: SimulatedClock) {
  const hold = holdTool();
  const engine = await newEngine({
    tools: [hold.tool],
    models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
    ...(clock ? { clock } : {}),
  });
  const run = await engine.submit({ sessionId: 's', input: 'long' });
  await until(() => hold.isHolding(run.runId), 'the run is inside its tool');
  return { engine, hold, runId: run.runId };
}

describe('wait options', () => {
  it('an aborted signal rejects the wait with its reason; the run goes on and a later wait gets its result', async () => {
    const { engine, hold, runId } = await heldRun();
    const controller = new AbortController();
    const waiting = engine.wait(runId, { signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(waiting).rejects.toThrow('caller gave up');
    expect(engine.status(runId)?.state).toBe('running');
    hold.release(runId);
    expect(await engine.wait(runId)).toMatchObject({ runId, state: 'completed', output: 'finished' });
  });

  it('a signal aborted before the call rejects at once', async () => {
    const { engine, hold, runId } = await heldRun();
    await expect(engine.wait(runId, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    hold.release(runId);
    await engine.wait(runId);
  });

  it('timeoutMs runs on the engine clock and rejects with EngineError timeout', async () => {
    const clock = new SimulatedClock();
    const { engine, hold, runId } = await heldRun(clock);
    let outcome: unknown;
    engine.wait(runId, { timeoutMs: 5_000 }).then(
      (result) => (outcome = result),
      (error: unknown) => (outcome = error),
    );
    await advance(clock, 4_999);
    expect(outcome).toBeUndefined();
    await advance(clock, 1);
    expect(isEngineError(outcome) && outcome.code).toBe('timeout');
    hold.release(runId);
    expect(await engine.wait(runId, { timeoutMs: 5_000 })).toMatchObject({ state: 'completed' });
  });

  it('a wait that ends in time leaves no timer behind', async () => {
    const clock = new SimulatedClock();
    const { engine, hold, runId } = await heldRun(clock);
    const waiting = engine.wait(runId, { timeoutMs: 60_000 });
    hold.release(runId);
    expect(await waiting).toMatchObject({ state: 'completed' });
    // The timer was cleared: moving past it changes nothing and reports no error.
    await advance(clock, 120_000);
  });
});
