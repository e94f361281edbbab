/*
 * A queue you can see and change (docs/runs.md): lane.list, withdraw, move, promote, edit through
 * the engine. Each answers once durable, leaves a `lane.changed` event on the message's log, and
 * refuses a message that no longer waits with `not_waiting` naming its state — whichever of the
 * operation and the session freeing comes first, the session chart decides.
 */
import { describe, expect, it } from 'vitest';
import { isEngineError, type EngineError } from '../../src/engine/index.js';
import { engineFixture, expectWellFormedHistory, heldModel, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

async function busy(config: Record<string, unknown> = {}) {
  const model = heldModel();
  const engine = await newEngine({
    models: { scripted: model.provider },
    config: { execution: { busy_policy: 'queue', ...config } },
  });
  const running = await engine.submit({ sessionId: 's', input: 'running', runId: 'r' });
  await until(() => model.isThinking(running.runId), 'the first run thinks');
  for (const id of ['a', 'b', 'c']) await engine.submit({ sessionId: 's', input: `message ${id}`, runId: id });
  return { engine, model };
}

async function refusal(promise: Promise<unknown>): Promise<EngineError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isEngineError(error)) throw new Error(`expected an EngineError, got ${String(error)}`);
  return error;
}

describe('lane.list', () => {
  it('lists the waiting messages front first with positions, policies, age and the time each leaves by', async () => {
    const { engine } = await busy({ wait_lane_max_wait_seconds: 60 });
    const listing = engine.lane('s');
    expect(listing).toMatchObject({ sessionId: 's', activeRunId: 'r' });
    expect(listing.entries.map((e) => [e.runId, e.position, e.busyPolicy, e.preview])).toEqual([
      ['a', 1, 'queue', 'message a'],
      ['b', 2, 'queue', 'message b'],
      ['c', 3, 'queue', 'message c'],
    ]);
    for (const entry of listing.entries) {
      expect(entry.ageMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(entry.leaveBy!) - Date.parse(entry.createdAt)).toBeGreaterThanOrEqual(59_000);
    }
    expect(engine.snapshot().sessions).toEqual([
      { sessionId: 's', activeRunId: 'r', laneDepth: 3, lane: ['a', 'b', 'c'] },
    ]);
    expect(engine.lane('nobody')).toEqual({ sessionId: 'nobody', entries: [] });
  });
});

describe('withdraw', () => {
  it('ends the message cancelled/withdrawn, the others close up, and a second withdraw answers not_waiting', async () => {
    const { engine, model } = await busy();
    const recorder = recordEvents(engine, { sessionId: 's' });
    expect(await engine.withdraw('b')).toEqual({ runId: 'b', sessionId: 's', change: 'withdrawn', lane: ['a', 'c'] });
    expect(await engine.wait('b')).toMatchObject({ state: 'cancelled', reason: 'withdrawn' });
    expect(engine.lane('s').entries.map((e) => [e.runId, e.position])).toEqual([
      ['a', 1],
      ['c', 2],
    ]);
    const history = await engine.history('b');
    expectWellFormedHistory(history);
    expect(history.map((e) => e.type)).toEqual(['run.queued', 'lane.changed', 'run.cancelled']);
    expect(history[1]).toMatchObject({ change: 'withdrawn', lane: ['a', 'c'] });
    await until(() => recorder.types('b').includes('run.cancelled'), 'a session follower sees it');
    expect(recorder.types('b')).toEqual(['lane.changed', 'run.cancelled']);
    recorder.close();

    const again = await refusal(engine.withdraw('b'));
    expect(again.code).toBe('not_waiting');
    expect(again.details).toMatchObject({ runId: 'b', state: 'cancelled', reason: 'withdrawn' });
    const running = await refusal(engine.withdraw('r'));
    expect(running).toMatchObject({ code: 'not_waiting', details: { state: 'running' } });
    expect((await refusal(engine.withdraw('unknown'))).code).toBe('not_found');

    model.answer('r');
    await until(() => model.isThinking('a'), 'a starts');
    model.answer('a');
    await until(() => model.isThinking('c'), 'c starts after a; b never runs');
    model.answer('c');
    expect(await engine.wait('c')).toMatchObject({ state: 'completed' });
    expect(model.calls.map((c) => c.runId)).toEqual(['r', 'a', 'c']);
  });
});

describe('move', () => {
  it('reorders the lane; the messages start in the new order', async () => {
    const { engine, model } = await busy();
    expect(await engine.moveInLane('c', 1)).toMatchObject({ change: 'moved', lane: ['c', 'a', 'b'] });
    expect(await engine.moveInLane('a', 99)).toMatchObject({ lane: ['c', 'b', 'a'] });
    expect((await engine.history('a')).at(-1)).toMatchObject({ type: 'lane.changed', change: 'moved', position: 3 });
    await expect(engine.moveInLane('a', 0)).rejects.toMatchObject({ code: 'invalid_request' });
    for (const id of ['r', 'c', 'b', 'a']) {
      await until(() => model.isThinking(id), `${id} thinks`);
      model.answer(id);
    }
    expect(await engine.wait('a')).toMatchObject({ state: 'completed' });
    expect(model.calls.map((c) => c.runId)).toEqual(['r', 'c', 'b', 'a']);
  });
});

describe('promote', () => {
  it('makes a waiting message a steer of the running run; its id answers for that run', async () => {
    const { engine, model } = await busy();
    const waiter = engine.wait('b');
    expect(await engine.promoteToSteer('b')).toEqual({
      runId: 'b',
      sessionId: 's',
      change: 'promoted',
      lane: ['a', 'c'],
      intoRunId: 'r',
    });
    expect(engine.status('b')).toMatchObject({ runId: 'r', steer: { steerId: 'b', into: 'r', state: 'pending' } });
    expect((await refusal(engine.promoteToSteer('b'))).details).toMatchObject({ state: 'steered', intoRunId: 'r' });
    model.answer('r', 'read the steer?');
    // The run reads the steer at its turn boundary and answers again.
    await until(() => model.calls.filter((c) => c.runId === 'r').length === 2, 'r takes a turn for the steer');
    expect(model.calls.at(-1)?.messages.some((m) => m.content === 'message b')).toBe(true);
    model.answer('r', 'answered both');
    expect(await waiter).toMatchObject({ runId: 'r', state: 'completed', output: 'answered both' });
  });

  it('refuses a message that cannot steer (not plain text) with not_steerable, and it keeps its place', async () => {
    const { engine } = await busy();
    await engine.submit({ sessionId: 's', input: 'with an override', runId: 'o', timeoutMs: 60_000 });
    const error = await refusal(engine.promoteToSteer('o'));
    expect(error.code).toBe('not_steerable');
    expect(error.details).toMatchObject({ runId: 'o', state: 'queued' });
    expect(engine.lane('s').entries.map((e) => e.runId)).toEqual(['a', 'b', 'c', 'o']);
  });
});

describe('edit', () => {
  it('replaces the text of a waiting message; its run starts with the new text', async () => {
    const { engine, model } = await busy();
    expect(await engine.editWaiting('a', { input: 'better words' })).toMatchObject({ change: 'edited' });
    expect((await engine.getRun('a'))?.state).toBe('queued');
    expect((await engine.history('a')).at(-1)).toMatchObject({ type: 'lane.changed', input: 'better words' });
    model.answer('r');
    await until(() => model.isThinking('a'), 'a thinks');
    expect(model.calls.at(-1)?.input).toBe('better words');
    expect(model.calls.at(-1)?.messages.at(-1)).toMatchObject({ role: 'user', content: 'better words' });
  });

  it('races the session freeing: either the edit lands before the message starts, or it answers not_waiting', async () => {
    const outcomes = new Set<string>();
    for (let rounds = 0; rounds < 8; rounds++) {
      const { engine, model } = await busy();
      model.answer('r');
      await settle(rounds);
      const edited = await engine.editWaiting('a', { input: `edited after ${rounds}` }).then(
        () => 'edited',
        (e: EngineError) => {
          expect(e.code).toBe('not_waiting');
          expect(['running', 'completed']).toContain((e.details as { state: string }).state);
          return 'not_waiting';
        },
      );
      outcomes.add(edited);
      await until(() => model.isThinking('a'), 'a thinks');
      // The run started with exactly the text the answer implies.
      expect(model.calls.at(-1)?.input).toBe(edited === 'edited' ? `edited after ${rounds}` : 'message a');
      await engine.close();
    }
    expect(outcomes).toEqual(new Set(['edited', 'not_waiting']));
  });
});
