/*
 * What survives a stop, through the public API on the file store: a graceful shutdown starts
 * nothing new and leaves what waits queued for the next start; a steer answers with the fate
 * of the run it went into after any restart; recovery repairs a run whose record and log
 * disagree; a finished run is still found by getRun() after a restart.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import type { RunEvent } from '../../src/core/run-events.js';
import { admitRequest } from '../../src/core/run-request.js';
import { createEngine, isEngineError, type Engine, type EngineOptions } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { MemoryStore, type RunRecord } from '../../src/store/index.js';
import { expectWellFormedHistory, heldModel, holdTool, withWorkspaceRoot } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

// Removed after the cleanup steps: after-hooks run in reverse order.
const tempDir = tempDirs();
const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** An engine on the file store in `dir`, closed after the test if the test did not. */
async function engineOn(dir: string, options: EngineOptions = {}): Promise<Engine> {
  const workspaces = await tempDir('switchyard-restart-ws-');
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

describe('graceful shutdown', () => {
  it('starts nothing new: running runs finish, waiting messages stay queued and run after the restart, in order', async () => {
    const dir = await tempDir('switchyard-restart-');
    const model = heldModel();
    const engine = await engineOn(dir, {
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'queue', max_runs_global: 1 } },
    });
    const running = await engine.submit({ sessionId: 's', input: 'running' });
    const lane = [
      await engine.submit({ sessionId: 's', input: 'first waiting' }),
      await engine.submit({ sessionId: 's', input: 'second waiting' }),
    ];
    const forPermit = await engine.submit({ sessionId: 'other', input: 'waiting for a permit' });
    expect(lane.map((r) => r.outcome)).toEqual(['queued', 'queued']);
    expect(forPermit.outcome).toBe('queued');
    await until(() => model.isThinking(running.runId), 'the first run thinks');

    engine.stopAdmitting();
    const refused = await engine.submit({ sessionId: 'third', input: 'too late' }).catch((error: unknown) => error);
    expect(isEngineError(refused) && refused.code).toBe('closed');
    model.answer(running.runId);
    expect(await engine.wait(running.runId)).toMatchObject({ state: 'completed' });
    // Its slot and its permit are free, yet nothing starts while shutting down.
    await until(() => engine.snapshot().running.length === 0, 'nothing runs');
    await settle(1);
    expect(engine.snapshot().running).toEqual([]);
    expect(model.thinking()).toEqual([]);
    expect((await engine.getRun(forPermit.runId))?.state).toBe('queued');
    await engine.close();

    const order: string[] = [];
    const again = await engineOn(dir, {
      models: { scripted: scriptedModel((ctx) => (order.push(ctx.input), { text: `done: ${ctx.input}` })) },
      config: { execution: { busy_policy: 'queue', max_runs_global: 1 } },
    });
    for (const { runId } of [...lane, forPermit]) expect(await again.wait(runId)).toMatchObject({ state: 'completed' });
    expect(order.filter((input) => input !== 'waiting for a permit')).toEqual(['first waiting', 'second waiting']);
    for (const { runId } of [...lane, forPermit]) expectWellFormedHistory(await again.history(runId));
  });
});

describe('steers across a restart', () => {
  it('a pending steer becomes the next run after a stop, and wait(steerId) answers with that run', async () => {
    const dir = await tempDir('switchyard-restart-');
    const hold = holdTool();
    const engine = await engineOn(dir, {
      tools: [hold.tool],
      models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
    });
    const running = await engine.submit({ sessionId: 's', input: 'long task' });
    await until(() => hold.isHolding(running.runId), 'the run is inside its tool');
    const steer = await engine.submit({ sessionId: 's', input: 'also do this', busyPolicy: 'steer' });
    expect(steer).toMatchObject({ outcome: 'steered', intoRunId: running.runId });
    await engine.close();

    const again = await engineOn(dir, { models: { scripted: scriptedModel([{ text: 'did the steer' }]) } });
    expect(await again.wait(running.runId)).toMatchObject({ state: 'cancelled', reason: 'engine closed' });
    expect(await again.wait(steer.runId)).toEqual({ runId: steer.runId, state: 'completed', output: 'did the steer' });
    const status = await again.getRun(steer.runId);
    expect(status).toMatchObject({ runId: steer.runId, state: 'completed', carries: [steer.runId] });
    const history = await again.history(steer.runId);
    expectWellFormedHistory(history);
    expect(history.filter((e) => e.type === 'run.started')).toHaveLength(1);
  });

  it('a steer the run read answers with that run after a restart, and getRun says when it was read', async () => {
    const dir = await tempDir('switchyard-restart-');
    const hold = holdTool();
    const engine = await engineOn(dir, {
      tools: [hold.tool],
      models: {
        scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished with the steer' }]),
      },
    });
    const running = await engine.submit({ sessionId: 's', input: 'long task' });
    await until(() => hold.isHolding(running.runId), 'the run is inside its tool');
    const steer = await engine.submit({ sessionId: 's', input: 'mind the tests', busyPolicy: 'steer' });
    hold.release(running.runId);
    expect(await engine.wait(running.runId)).toMatchObject({ state: 'completed', output: 'finished with the steer' });
    await engine.close();

    const again = await engineOn(dir);
    expect(await again.wait(steer.runId)).toEqual({
      runId: running.runId,
      state: 'completed',
      output: 'finished with the steer',
    });
    const status = await again.getRun(steer.runId);
    expect(status).toMatchObject({
      runId: running.runId,
      steer: { steerId: steer.runId, into: running.runId, state: 'consumed', consumedAtTurn: 1 },
    });
    const steered = (await again.history(steer.runId)).filter((e) => e.type === 'run.steered');
    expect(steered).toEqual([expect.objectContaining({ steerId: steer.runId, consumedAtTurn: 1 })]);
  });
});

describe('recovery repairs what a crash left half-written', () => {
  const at = '2026-01-01T00:00:00.000Z';
  const record = (runId: string, state: RunRecord['state'], extra: Partial<RunRecord> = {}): RunRecord => ({
    runId,
    sessionId: 's',
    agentId: 'main',
    request: { ...admitRequest({ sessionId: 's', input: 'x' }, defaultConfig()), runId },
    state,
    createdAt: at,
    ...extra,
  });
  const event = (runId: string, seq: number, sessionSeq: number, data: Record<string, unknown> & { type: string }) =>
    ({ runId, sessionId: 's', seq, sessionSeq, at, ...data }) as RunEvent;

  it('a record that ended without its terminal event gets the event, and a stale record the ending its log holds', async () => {
    const store = new MemoryStore();
    store.saveRun(record('ended-in-record', 'cancelled', { reason: 'stopped', endedAt: at }));
    store.appendEvent(event('ended-in-record', 1, 1, { type: 'run.queued', position: 1, reason: 'session_busy' }));
    store.saveRun(record('ended-in-log', 'running', { startedAt: at }));
    store.appendEvent(event('ended-in-log', 1, 2, { type: 'run.started', agentId: 'main', model: 'scripted' }));
    store.appendEvent(
      event('ended-in-log', 2, 3, { type: 'run.completed', output: 'done', usage: { turns: 1 }, toolCalls: 0 }),
    );
    const engine = await createEngine({ store });
    cleanup.push(() => engine.close());

    const repaired = await engine.history('ended-in-record');
    expectWellFormedHistory(repaired);
    expect(repaired.at(-1)).toMatchObject({ type: 'run.cancelled', reason: 'stopped', seq: 2, sessionSeq: 4 });
    expect(await engine.wait('ended-in-record')).toEqual({
      runId: 'ended-in-record',
      state: 'cancelled',
      reason: 'stopped',
    });
    expect(await engine.getRun('ended-in-log')).toMatchObject({ state: 'completed', output: 'done' });
    expect(await store.openRuns()).toEqual([]);
    // Numbering of the session goes on past everything stored.
    const next = await engine.submit({ sessionId: 's', input: 'after the repair' });
    await engine.wait(next.runId);
    expect((await engine.history(next.runId))[0]!.sessionSeq).toBe(5);
  });

  it('getRun() finds a run that finished before a restart', async () => {
    const dir = await tempDir('switchyard-restart-');
    const engine = await engineOn(dir, { models: { scripted: scriptedModel([{ text: 'the answer' }]) } });
    const run = await engine.submit({ sessionId: 's', input: 'question' });
    await engine.wait(run.runId);
    await engine.close();
    const again = await engineOn(dir);
    expect(again.status(run.runId)).toBeUndefined();
    expect(await again.getRun(run.runId)).toMatchObject({ runId: run.runId, state: 'completed', output: 'the answer' });
    expect(await again.getRun('never-was')).toBeUndefined();
  });
});
