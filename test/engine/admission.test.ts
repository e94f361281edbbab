/*
 * Session exclusivity and the wait lane's order (docs/runs.md): one running run per
 * session whatever arrives at once, admission in arrival order, and `queue` never disturbs
 * the running run.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isTerminalEvent } from '../../src/engine/index.js';
import type { Engine } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { engineFixture, expectWellFormedHistory, heldModel, holdTool, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

describe('session exclusivity', () => {
  it('50 concurrent submits to one session never run two of its runs at once', async () => {
    const violations: string[] = [];
    let engine!: Engine;
    /** Checked from inside each run, while it is running: it alone holds the session. */
    const checkAlone = (runId: string, where: string) => {
      const snap = engine.snapshot();
      if (snap.running.length !== 1 || snap.running[0] !== runId)
        violations.push(`${where} ${runId}: running ${snap.running.join(',')}`);
      const session = snap.sessions.find((s) => s.sessionId === 's');
      if (session?.activeRunId !== runId) violations.push(`${where} ${runId}: session holds ${session?.activeRunId}`);
    };
    const step = defineTool({
      name: 'step',
      description: 'Yields a macrotask so runs overlap in time if the engine lets them.',
      input: z.object({}),
      execute: async (_input, ctx) => {
        checkAlone(ctx.runId, 'tool');
        await new Promise<void>((resolve) => setImmediate(resolve));
        checkAlone(ctx.runId, 'tool after yield');
        return 'stepped';
      },
    });
    engine = await newEngine({
      config: { execution: { busy_policy: 'queue', wait_lane_capacity: 64 } },
      tools: [step],
      models: {
        scripted: scriptedModel((ctx) => {
          checkAlone(ctx.runId, `model turn ${ctx.turn}`);
          return ctx.turn === 0 ? { toolCalls: [{ name: 'step', args: {} }] } : { text: `done ${ctx.input}` };
        }),
      },
    });
    const recorder = recordEvents(engine);

    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => engine.submit({ sessionId: 's', input: `m${i}` })),
    );

    expect(results[0]).toMatchObject({ outcome: 'started' });
    expect(results.slice(1).map((r) => [r.outcome, r.position])).toEqual(
      results.slice(1).map((_, i) => ['queued', i + 1]),
    );
    const finals = await Promise.all(results.map((r) => engine.wait(r.runId)));
    expect(finals.map((f) => f.state)).toEqual(results.map(() => 'completed'));
    expect(finals.map((f) => f.output)).toEqual(results.map((_, i) => `done m${i}`));
    await settle();
    recorder.close();
    await recorder.ended;

    expect(violations).toEqual([]);
    // In the one ordered log, each run.started follows the previous run's terminal event.
    let current: string | undefined;
    const startOrder: string[] = [];
    for (const event of recorder.runEvents()) {
      if (event.type === 'run.started') {
        expect(current, `${event.runId} started while ${current} was running`).toBeUndefined();
        current = event.runId;
        startOrder.push(event.runId);
      } else if (isTerminalEvent(event)) {
        expect(event.runId).toBe(current);
        current = undefined;
      }
    }
    expect(startOrder).toEqual(results.map((r) => r.runId));
    // engine.running never lists two runs (all 50 belong to one session).
    for (const event of recorder.all) {
      if (event.type === 'engine.running') expect(event.running.length).toBeLessThanOrEqual(1);
    }
    for (const r of results) expectWellFormedHistory(await engine.history(r.runId));
    const snap = engine.snapshot();
    expect(snap.global.inUse).toBe(0);
    expect(snap.running).toEqual([]);
    expect(snap.sessions.filter((s) => s.activeRunId !== undefined || s.laneDepth > 0)).toEqual([]);
  });

  it('runs of different sessions run side by side', async () => {
    const model = heldModel();
    const engine = await newEngine({ models: { scripted: model.provider } });
    const a = await engine.submit({ sessionId: 'a', input: 'x' });
    const b = await engine.submit({ sessionId: 'b', input: 'y' });
    expect([a.outcome, b.outcome]).toEqual(['started', 'started']);
    await until(() => model.thinking().length === 2, 'both runs in their model turn');
    expect(new Set(engine.snapshot().running)).toEqual(new Set([a.runId, b.runId]));
    model.answer(a.runId);
    model.answer(b.runId);
    expect((await engine.wait(a.runId)).state).toBe('completed');
    expect((await engine.wait(b.runId)).state).toBe('completed');
  });
});

describe('wait lane order', () => {
  it('admits queued messages first in, first out', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'queue' } },
    });
    const recorder = recordEvents(engine);
    const first = await engine.submit({ sessionId: 's', input: 'first' });
    const queued = [];
    for (const input of ['b', 'c', 'd', 'e']) queued.push(await engine.submit({ sessionId: 's', input }));
    expect(first.outcome).toBe('started');
    expect(queued.map((q) => [q.outcome, q.position])).toEqual([
      ['queued', 1],
      ['queued', 2],
      ['queued', 3],
      ['queued', 4],
    ]);
    expect(engine.snapshot().sessions).toEqual([
      { sessionId: 's', activeRunId: first.runId, laneDepth: 4, lane: queued.map((q) => q.runId) },
    ]);

    for (const run of [first, ...queued]) {
      await until(() => model.isThinking(run.runId), `${run.runId} reaches its model turn`);
      expect(model.thinking()).toEqual([run.runId]);
      model.answer(run.runId);
      expect((await engine.wait(run.runId)).state).toBe('completed');
    }
    expect(model.calls.map((c) => c.input)).toEqual(['first', 'b', 'c', 'd', 'e']);
    const queuedEvents = recorder.runEvents().filter((e) => e.type === 'run.queued');
    expect(
      queuedEvents.map((e) => [e.runId, e.type === 'run.queued' && e.position, e.type === 'run.queued' && e.reason]),
    ).toEqual(queued.map((q, i) => [q.runId, i + 1, 'session_busy']));
    recorder.close();
  });

  it('a message submitted with busyPolicy queue leaves the running run untouched', async () => {
    const hold = holdTool();
    const engine = await newEngine({
      tools: [hold.tool],
      models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
    });
    const running = await engine.submit({ sessionId: 's', input: 'long job' });
    await until(() => hold.isHolding(running.runId), 'the run is inside its tool');
    const next = await engine.submit({ sessionId: 's', input: 'after you', busyPolicy: 'queue' });
    expect(next).toMatchObject({ outcome: 'queued', position: 1 });
    await settle();

    expect(hold.signalOf(running.runId)?.aborted).toBe(false);
    expect(engine.status(running.runId)?.state).toBe('running');
    expect(engine.status(next.runId)?.state).toBe('queued');
    const before = (await engine.history(running.runId)).map((e) => e.type);
    expect(before).not.toContain('run.steered');
    expect(before).not.toContain('run.cancelled');

    hold.release(running.runId);
    expect(await engine.wait(running.runId)).toMatchObject({ state: 'completed', output: 'finished' });
    await until(() => hold.isHolding(next.runId), 'the queued run starts after');
    hold.release(next.runId);
    expect(await engine.wait(next.runId)).toMatchObject({ state: 'completed' });
    const firstHistory = await engine.history(running.runId);
    const secondHistory = await engine.history(next.runId);
    expect(firstHistory.at(-1)!.sessionSeq).toBeLessThan(
      secondHistory.find((e) => e.type === 'run.started')!.sessionSeq,
    );
  });
});
