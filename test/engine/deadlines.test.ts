/*
 * Run deadlines (docs/runs.md, "Deadlines and cancellation") on a SimulatedClock: expiry ends the
 * run failed/timeout and aborts what it was waiting on; the clock starts when the run starts, so
 * time spent queued (in the lane or for permits) does not count.
 */
import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/model/index.js';
import { SimulatedClock, advance, engineFixture, expectWellFormedHistory, holdTool } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

describe('run deadline', () => {
  it('ends the run failed with code timeout when timeoutMs passes during a model turn', async () => {
    const clock = new SimulatedClock();
    const engine = await newEngine({
      clock,
      models: { scripted: scriptedModel([{ text: 'too late', delayMs: 10_000 }]) },
    });
    const run = await engine.submit({ sessionId: 's', input: 'x', timeoutMs: 5_000 });
    await settle();

    await advance(clock, 4_999);
    expect(engine.status(run.runId)?.state).toBe('running');
    await advance(clock, 1);
    const result = await engine.wait(run.runId);
    expect(result).toMatchObject({ state: 'failed', error: { code: 'timeout' } });
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 0 }, running: [] });

    const history = await engine.history(run.runId);
    expectWellFormedHistory(history);
    expect(history.at(-1)).toMatchObject({ type: 'run.failed', at: new Date(5_000).toISOString() });
    // The aborted model turn never reports back.
    await advance(clock, 10_000);
    expect(await engine.history(run.runId)).toEqual(history);
  });

  it('aborts the signal of an in-flight tool call', async () => {
    const clock = new SimulatedClock();
    const hold = holdTool();
    const engine = await newEngine({
      clock,
      tools: [hold.tool],
      models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }]) },
    });
    const run = await engine.submit({ sessionId: 's', input: 'x', timeoutMs: 1_000 });
    await until(() => hold.isHolding(run.runId), 'the run holds');
    await advance(clock, 1_000);
    expect(hold.signalOf(run.runId)?.aborted).toBe(true);
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'failed', error: { code: 'timeout' } });
  });

  it('defaults to execution.default_timeout_seconds', async () => {
    const clock = new SimulatedClock();
    const engine = await newEngine({
      clock,
      models: { scripted: scriptedModel([{ text: 'late', delayMs: 10_000 }]) },
      config: { execution: { default_timeout_seconds: 2 } },
    });
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await settle();
    await advance(clock, 1_999);
    expect(engine.status(run.runId)?.state).toBe('running');
    await advance(clock, 1);
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'failed', error: { code: 'timeout' } });
  });

  it('a run that finishes in time completes and its deadline never fires later', async () => {
    const clock = new SimulatedClock();
    const engine = await newEngine({
      clock,
      models: { scripted: scriptedModel([{ text: 'on time', delayMs: 1_000 }]) },
    });
    const run = await engine.submit({ sessionId: 's', input: 'x', timeoutMs: 5_000 });
    await settle();
    await advance(clock, 1_000);
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'on time' });
    const history = await engine.history(run.runId);
    await advance(clock, 10_000);
    expect(await engine.history(run.runId)).toEqual(history);
  });

  const waits: [
    description: string,
    execution: Record<string, unknown>,
    second: { sessionId: string; busyPolicy?: 'queue' },
  ][] = [
    ['in the session’s wait lane', {}, { sessionId: 's', busyPolicy: 'queue' }],
    ['for limiter permits', { max_runs_global: 1 }, { sessionId: 'other' }],
  ];
  it.each(waits)('does not count time spent queued %s', async (_description, execution, second) => {
    const clock = new SimulatedClock();
    const engine = await newEngine({
      clock,
      models: {
        scripted: scriptedModel((ctx) =>
          ctx.input === 'blocker' ? { text: 'blocker done', delayMs: 10_000 } : { text: 'slow', delayMs: 6_000 },
        ),
      },
      config: { execution },
    });
    const blocker = await engine.submit({ sessionId: 's', input: 'blocker' });
    const run = await engine.submit({ ...second, input: 'deadline 5 s', timeoutMs: 5_000 });
    expect(run.outcome).toBe('queued');
    await settle();

    await advance(clock, 10_000);
    expect((await engine.wait(blocker.runId)).state).toBe('completed');
    expect(engine.status(run.runId)?.state).toBe('running');
    expect(engine.status(run.runId)?.startedAt).toBe(new Date(10_000).toISOString());

    await advance(clock, 4_999);
    expect(engine.status(run.runId)?.state).toBe('running');
    await advance(clock, 1);
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'failed', error: { code: 'timeout' } });
    expect((await engine.history(run.runId)).at(-1)?.at).toBe(new Date(15_000).toISOString());
  });
});
