/*
 * The wait lane's bounds (docs/runs.md, "The wait lane"): a full lane rejects the newest message
 * with lane_full and drops nothing already queued; a message waits at most
 * wait_lane_max_wait_seconds and then ends failed/lane_timeout. Time comes from a SimulatedClock.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { SimulatedClock, advance, engineFixture, expectWellFormedHistory, holdTool, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

describe('lane capacity', () => {
  async function fullLane() {
    const hold = holdTool();
    const engine = await newEngine({
      tools: [hold.tool],
      models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
      config: { execution: { busy_policy: 'queue', wait_lane_capacity: 2 } },
    });
    const running = await engine.submit({ sessionId: 's', input: 'running' });
    const queued = [
      await engine.submit({ sessionId: 's', input: 'q1' }),
      await engine.submit({ sessionId: 's', input: 'q2' }),
    ];
    await until(() => hold.isHolding(running.runId), 'the run holds');
    return { engine, hold, running, queued };
  }

  it.each(['queue', 'steer', 'interrupt'] as const)(
    'rejects the newest message (busyPolicy %s) with lane_full and changes nothing',
    async (busyPolicy) => {
      const { engine, hold, running, queued } = await fullLane();
      // A steer would fit into the run; disable steering so the message needs the lane.
      engine.reconfigure({ execution: { max_pending_steers: 0 } });
      const recorder = recordEvents(engine);
      const before = engine.snapshot();

      const rejected = engine.submit({ sessionId: 's', input: 'one too many', runId: 'newest', busyPolicy });
      await expect(rejected).rejects.toBeInstanceOf(EngineError);
      await expect(rejected).rejects.toMatchObject({ code: 'lane_full' });
      await settle();

      expect(engine.snapshot()).toEqual(before);
      expect(recorder.all).toEqual([]);
      expect(engine.status('newest')).toBeUndefined();
      expect(hold.signalOf(running.runId)?.aborted).toBe(false);
      recorder.close();

      for (const run of [running, ...queued]) {
        await until(() => hold.isHolding(run.runId), `${run.runId} holds`);
        hold.release(run.runId);
        expect((await engine.wait(run.runId)).state).toBe('completed');
      }
    },
  );

  it('accepts again once a queued message has left the lane', async () => {
    const { engine, hold, running, queued } = await fullLane();
    await expect(engine.submit({ sessionId: 's', input: 'too many' })).rejects.toMatchObject({ code: 'lane_full' });
    hold.release(running.runId);
    await until(() => hold.isHolding(queued[0]!.runId), 'q1 leaves the lane when admitted');
    expect(await engine.submit({ sessionId: 's', input: 'fits now' })).toMatchObject({
      outcome: 'queued',
      position: 2,
    });
  });
});

describe('lane expiry', () => {
  it('fails a message that waited wait_lane_max_wait_seconds with lane_timeout', async () => {
    const clock = new SimulatedClock();
    const engine = await newEngine({
      clock,
      models: { scripted: scriptedModel([{ text: 'slow answer', delayMs: 60_000 }]) },
      config: { execution: { busy_policy: 'queue', wait_lane_max_wait_seconds: 10 } },
    });
    const running = await engine.submit({ sessionId: 's', input: 'slow' });
    await settle();
    const waiting = await engine.submit({ sessionId: 's', input: 'waits' });
    expect(waiting.outcome).toBe('queued');

    await advance(clock, 9_999);
    expect(engine.status(waiting.runId)?.state).toBe('queued');
    await advance(clock, 1);
    const result = await engine.wait(waiting.runId);
    expect(result).toMatchObject({ state: 'failed', error: { code: 'lane_timeout' } });
    expect(engine.snapshot().sessions).toEqual([
      { sessionId: 's', activeRunId: running.runId, laneDepth: 0, lane: [] },
    ]);
    const history = await engine.history(waiting.runId);
    expectWellFormedHistory(history);
    expect(history.map((e) => e.type)).toEqual(['run.queued', 'run.failed']);
    expect(history.at(-1)?.at).toBe(new Date(10_000).toISOString());

    expect(engine.status(running.runId)?.state).toBe('running');
    await advance(clock, 50_000);
    expect(await engine.wait(running.runId)).toMatchObject({ state: 'completed', output: 'slow answer' });
    expect((await engine.history(waiting.runId)).length).toBe(2);
  });

  it('stops counting once the message is admitted', async () => {
    const clock = new SimulatedClock();
    const engine = await newEngine({
      clock,
      models: {
        scripted: scriptedModel((ctx) => ({
          text: `answer to ${ctx.input}`,
          delayMs: ctx.input === 'first' ? 5_000 : 60_000,
        })),
      },
      config: { execution: { busy_policy: 'queue', wait_lane_max_wait_seconds: 10 } },
    });
    const first = await engine.submit({ sessionId: 's', input: 'first' });
    await settle();
    const second = await engine.submit({ sessionId: 's', input: 'second' });
    await advance(clock, 5_000);
    expect((await engine.wait(first.runId)).state).toBe('completed');
    expect(engine.status(second.runId)?.state).toBe('running');
    await advance(clock, 30_000);
    expect(engine.status(second.runId)?.state).toBe('running');
    await advance(clock, 30_000);
    expect(await engine.wait(second.runId)).toMatchObject({ state: 'completed', output: 'answer to second' });
  });
});
