/*
 * The lane across a restart, on the file store (real files): a waiting message's lane wait is a
 * point in time (time spent down counts), the summarize_oldest notice and edits survive, and a
 * merged `collect` message's own record ends `merged` instead of staying queued.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { LowdbStore } from '../../src/store/index.js';
import { SimulatedClock, advance, heldModel, withWorkspaceRoot } from './fixtures.js';
import { until } from '../support/eventually.js';

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function engineOn(dir: string, options: EngineOptions = {}): Promise<Engine> {
  const workspaces = await tempDir('switchyard-lane-ws-');
  const errors: unknown[] = [];
  const engine = await createEngine({
    store: { dir },
    onError: (error) => errors.push(error),
    ...options,
    config: withWorkspaceRoot(options.config ?? {}, workspaces),
  });
  cleanup.push(async () => {
    await engine.close();
    expect(errors).toEqual([]);
  });
  return engine;
}

describe('lane wait across a restart', () => {
  it('counts the time spent down: a message keeps the point in time it must leave the lane by', async () => {
    const dir = await tempDir('switchyard-lane-');
    const config = { execution: { busy_policy: 'queue' as const, wait_lane_max_wait_seconds: 6 } };
    const clock = new SimulatedClock();
    const model = heldModel();
    const engine = await engineOn(dir, { clock, models: { scripted: model.provider }, config });
    await engine.submit({ sessionId: 's', input: 'running', runId: 'r' });
    await until(() => model.isThinking('r'), 'r thinks');
    await engine.submit({ sessionId: 's', input: 'first waiting', runId: 'q1' });
    await engine.submit({ sessionId: 's', input: 'second waiting', runId: 'q2' });
    expect(engine.lane('s').entries.map((e) => e.leaveBy)).toEqual([
      new Date(6_000).toISOString(),
      new Date(6_000).toISOString(),
    ]);
    await advance(clock, 4_000);
    await engine.close();

    // Down for one second: q1 takes the slot at once, q2 has 1 s of its 6 s left (not 6 s again).
    const later = new SimulatedClock();
    later.set(5_000);
    const model2 = heldModel();
    const again = await engineOn(dir, { clock: later, models: { scripted: model2.provider }, config });
    await until(() => model2.isThinking('q1'), 'q1 runs after the restart');
    expect(again.lane('s').entries.map((e) => [e.runId, e.leaveBy])).toEqual([['q2', new Date(6_000).toISOString()]]);
    await advance(later, 999);
    expect(again.status('q2')?.state).toBe('queued');
    await advance(later, 1);
    expect(await again.wait('q2')).toMatchObject({ state: 'failed', error: { code: 'lane_timeout' } });
  });

  it('a message whose point in time passed while the engine was down leaves at once', async () => {
    const dir = await tempDir('switchyard-lane-');
    const config = { execution: { busy_policy: 'queue' as const, wait_lane_max_wait_seconds: 6 } };
    const clock = new SimulatedClock();
    const model = heldModel();
    const engine = await engineOn(dir, { clock, models: { scripted: model.provider }, config });
    await engine.submit({ sessionId: 's', input: 'running', runId: 'r' });
    await until(() => model.isThinking('r'), 'r thinks');
    await engine.submit({ sessionId: 's', input: 'first waiting', runId: 'q1' });
    await engine.submit({ sessionId: 's', input: 'second waiting', runId: 'q2' });
    await engine.close();

    const later = new SimulatedClock();
    later.set(11_000);
    const model2 = heldModel();
    const again = await engineOn(dir, { clock: later, models: { scripted: model2.provider }, config });
    await advance(later, 0);
    expect(await again.wait('q2')).toMatchObject({ state: 'failed', error: { code: 'lane_timeout' } });
  });
});

describe('what the lane carries across a restart', () => {
  it('the summarize_oldest notice reaches the next run that starts after the restart', async () => {
    const dir = await tempDir('switchyard-lane-');
    const config = {
      execution: { busy_policy: 'queue' as const, wait_lane_capacity: 1, lane_overflow: 'summarize_oldest' as const },
    };
    const model = heldModel();
    const engine = await engineOn(dir, { models: { scripted: model.provider }, config });
    await engine.submit({ sessionId: 's', input: 'running', runId: 'r' });
    await until(() => model.isThinking('r'), 'r thinks');
    await engine.submit({ sessionId: 's', input: 'dropped words here', runId: 'old' });
    await engine.submit({ sessionId: 's', input: 'the newest', runId: 'new' });
    expect(await engine.wait('old')).toMatchObject({ state: 'cancelled', reason: 'dropped_overflow' });
    await engine.close();

    const model2 = heldModel();
    await engineOn(dir, { models: { scripted: model2.provider }, config });
    await until(() => model2.isThinking('new'), 'new runs');
    const said = model2.calls[0]!.messages.map((m) => String(m.content)).join('\n');
    expect(said).toContain('"dropped words here" (id old)');
  });

  it('an edited message runs with its edited text after a restart', async () => {
    const dir = await tempDir('switchyard-lane-');
    const model = heldModel();
    const engine = await engineOn(dir, {
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'queue' } },
    });
    await engine.submit({ sessionId: 's', input: 'running', runId: 'r' });
    await until(() => model.isThinking('r'), 'r thinks');
    await engine.submit({ sessionId: 's', input: 'first draft', runId: 'q' });
    await engine.submit({ sessionId: 's', input: 'behind it', runId: 'q2' });
    await engine.editWaiting('q', { input: 'final text' });
    await engine.moveInLane('q2', 1);
    await engine.close();

    const order: string[] = [];
    const again = await engineOn(dir, {
      models: { scripted: scriptedModel((ctx) => (order.push(ctx.input), { text: `done ${ctx.input}` })) },
    });
    expect(await again.wait('q')).toMatchObject({ state: 'completed', output: 'done final text' });
    expect(order).toEqual(['behind it', 'final text']);
  });

  it('a merged collect message ends merged (not queued) and answers for the run that carried it, before and after a restart', async () => {
    const dir = await tempDir('switchyard-lane-');
    const model = heldModel();
    const engine = await engineOn(dir, {
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'collect' } },
    });
    await engine.submit({ sessionId: 's', input: 'running', runId: 'r' });
    await until(() => model.isThinking('r'), 'r thinks');
    await engine.submit({ sessionId: 's', input: 'one', runId: 'c1' });
    await engine.submit({ sessionId: 's', input: 'two', runId: 'c2' });
    model.answer('r');
    await until(() => model.isThinking('c1'), 'c1 carries c2');
    model.answer('c1', 'both answered');
    expect(await engine.wait('c2')).toMatchObject({ runId: 'c1', state: 'completed', output: 'both answered' });
    expect((await engine.history('c2')).at(-1)).toMatchObject({ runId: 'c1', type: 'run.completed' });
    await engine.close();

    const store = await LowdbStore.open(dir);
    expect((await store.getRun('c2'))?.state).toBe('cancelled');
    expect((await store.getRun('c2'))?.reason).toBe('merged');
    expect((await store.openRuns()).map((r) => r.runId)).toEqual([]);
    await store.close();

    const again = await engineOn(dir);
    expect(await again.wait('c2')).toMatchObject({ runId: 'c1', state: 'completed', output: 'both answered' });
    expect(await again.getRun('c2')).toMatchObject({ runId: 'c1', state: 'completed', steer: { state: 'merged' } });
  });
});
