/*
 * The limiter (docs/runs.md, "Limits"): max_runs_global and max_runs_per_agent held for a run's
 * lifetime, waiters granted in arrival order skipping an agent at its cap, and hot reconfiguration:
 * raising admits at once, shrinking preempts nothing.
 */
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/engine/index.js';
import { engineFixture, heldModel, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

async function limitedEngine(execution: Record<string, unknown>) {
  const model = heldModel();
  const engine = await newEngine({ models: { scripted: model.provider }, config: { execution } });
  return { engine, model };
}

/** Submits one run per session (sessions differ, so only the limiter can hold them back). */
async function submitEach(engine: Engine, specs: { id: string; agentId?: string }[]) {
  const results = [];
  for (const spec of specs) {
    results.push(
      await engine.submit({ sessionId: `session-${spec.id}`, runId: spec.id, input: spec.id, agentId: spec.agentId }),
    );
  }
  return results;
}

async function finish(engine: Engine, model: ReturnType<typeof heldModel>, runId: string): Promise<void> {
  await until(() => model.isThinking(runId), `${runId} thinks`);
  model.answer(runId);
  expect((await engine.wait(runId)).state).toBe('completed');
}

describe('max_runs_global', () => {
  it('lets at most N runs hold permits; the rest wait and are granted in arrival order', async () => {
    const { engine, model } = await limitedEngine({ max_runs_global: 2 });
    const recorder = recordEvents(engine);
    const results = await submitEach(engine, [{ id: 'r1' }, { id: 'r2' }, { id: 'r3' }, { id: 'r4' }]);
    expect(results.map((r) => [r.outcome, r.position])).toEqual([
      ['started', undefined],
      ['started', undefined],
      ['queued', 1],
      ['queued', 2],
    ]);
    expect(engine.snapshot()).toMatchObject({
      global: { inUse: 2, max: 2 },
      waiting: 2,
      perAgent: { main: { inUse: 2 } },
    });
    expect(engine.status('r3')).toMatchObject({ state: 'queued', queuedFor: 'limits', position: 1 });

    await finish(engine, model, 'r2');
    await until(() => model.isThinking('r3'), 'r3 gets the freed permit');
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 2 }, waiting: 1 });
    await finish(engine, model, 'r1');
    await until(() => model.isThinking('r4'), 'r4 gets the next one');
    await finish(engine, model, 'r3');
    await finish(engine, model, 'r4');
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 0 }, waiting: 0, running: [] });

    await settle();
    const queued = recorder.runEvents().filter((e) => e.type === 'run.queued');
    expect(
      queued.map((e) => [e.runId, e.type === 'run.queued' && e.reason, e.type === 'run.queued' && e.position]),
    ).toEqual([
      ['r3', 'limits', 1],
      ['r4', 'limits', 2],
    ]);
    for (const event of recorder.all)
      if (event.type === 'engine.running') expect(event.running.length).toBeLessThanOrEqual(2);
    recorder.close();
  });
});

describe('max_runs_per_agent', () => {
  it('holds back an agent at its cap without blocking another agent', async () => {
    const { engine, model } = await limitedEngine({ max_runs_per_agent: 1 });
    const results = await submitEach(engine, [
      { id: 'a1', agentId: 'a' },
      { id: 'a2', agentId: 'a' },
      { id: 'b1', agentId: 'b' },
    ]);
    expect(results.map((r) => r.outcome)).toEqual(['started', 'queued', 'started']);
    expect(engine.snapshot()).toMatchObject({
      global: { inUse: 2 },
      perAgent: { a: { inUse: 1, max: 1 }, b: { inUse: 1, max: 1 } },
      waiting: 1,
    });
    await finish(engine, model, 'b1');
    expect(engine.status('a2')?.state).toBe('queued');
    await finish(engine, model, 'a1');
    await finish(engine, model, 'a2');
  });

  it('grants a later waiter of a free agent past an earlier waiter whose agent is at its cap', async () => {
    const { engine, model } = await limitedEngine({ max_runs_global: 2, max_runs_per_agent: 1 });
    await submitEach(engine, [
      { id: 'a1', agentId: 'a' },
      { id: 'c1', agentId: 'c' },
      { id: 'a2', agentId: 'a' },
      { id: 'b1', agentId: 'b' },
    ]);
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 2 }, waiting: 2 });
    await finish(engine, model, 'c1');
    // a2 is first in line but agent a is at its cap: b1 gets the global permit.
    await until(() => model.isThinking('b1'), 'b1 is granted');
    expect(engine.status('a2')?.state).toBe('queued');
    await finish(engine, model, 'a1');
    await finish(engine, model, 'a2');
    await finish(engine, model, 'b1');
  });
});

describe('hot reconfiguration', () => {
  it('raising max_runs_global admits the waiters at once', async () => {
    const { engine, model } = await limitedEngine({ max_runs_global: 1 });
    const recorder = recordEvents(engine);
    await submitEach(engine, [{ id: 'r1' }, { id: 'r2' }, { id: 'r3' }]);
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 1, max: 1 }, waiting: 2 });

    engine.reconfigure({ execution: { max_runs_global: 3 } });
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 3, max: 3 }, waiting: 0 });
    expect(['r1', 'r2', 'r3'].map((id) => engine.status(id)?.state)).toEqual(['running', 'running', 'running']);
    await until(() => model.thinking().length === 3, 'all three think');
    await settle();
    expect(recorder.all.find((e) => e.type === 'limits.changed')).toMatchObject({
      max_runs_global: 3,
      max_runs_per_agent: 3,
    });
    for (const id of ['r1', 'r2', 'r3']) await finish(engine, model, id);
    recorder.close();
  });

  it('raising max_runs_per_agent admits that agent’s waiters at once', async () => {
    const { engine, model } = await limitedEngine({ max_runs_per_agent: 1 });
    await submitEach(engine, [{ id: 'r1' }, { id: 'r2' }]);
    expect(engine.snapshot().waiting).toBe(1);
    engine.reconfigure({ execution: { max_runs_per_agent: 2 } });
    expect(engine.snapshot()).toMatchObject({ perAgent: { main: { inUse: 2, max: 2 } }, waiting: 0 });
    for (const id of ['r1', 'r2']) await finish(engine, model, id);
  });

  it('shrinking preempts nothing and grants again only once usage is under the new limit', async () => {
    const { engine, model } = await limitedEngine({ max_runs_global: 3 });
    await submitEach(engine, [{ id: 'r1' }, { id: 'r2' }, { id: 'r3' }, { id: 'r4' }, { id: 'r5' }]);
    await until(() => model.thinking().length === 3, 'three runs think');

    engine.reconfigure({ execution: { max_runs_global: 1 } });
    await settle();
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 3, max: 1 }, waiting: 2 });
    expect(model.thinking().sort()).toEqual(['r1', 'r2', 'r3']);

    await finish(engine, model, 'r1');
    await settle();
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 2 }, waiting: 2 });
    await finish(engine, model, 'r2');
    await settle();
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 1 }, waiting: 2 });
    expect(engine.status('r4')?.state).toBe('queued');

    await finish(engine, model, 'r3');
    await until(() => model.isThinking('r4'), 'r4 is granted once usage is under the limit');
    expect(engine.snapshot()).toMatchObject({ global: { inUse: 1 }, waiting: 1 });
    expect(engine.status('r5')?.state).toBe('queued');
    await finish(engine, model, 'r4');
    await finish(engine, model, 'r5');
    expect(model.calls.map((c) => c.runId).slice(3)).toEqual(['r4', 'r5']);
  });
});
