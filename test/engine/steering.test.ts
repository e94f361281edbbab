/*
 * busyPolicy "steer" (docs/runs.md, "Busy sessions"): a plain-text message for a busy session joins
 * the running run's conversation at its next turn boundary; anything more than plain text, a full
 * steer inbox, or a stale expectedRunId queues instead.
 */
import { describe, expect, it } from 'vitest';
import type { Engine, RunRequest } from '../../src/engine/index.js';
import type { Message, ScriptContext } from '../../src/model/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { SimulatedClock, advance, engineFixture, expectWellFormedHistory, heldModel, holdTool } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

/** A function-form script: turn 0 holds in the "hold" tool, later turns answer; it records what the model saw. */
function holdThenAnswer(holdTurns = 1) {
  const seen: ScriptContext[] = [];
  const model = scriptedModel((ctx) => {
    seen.push({ ...ctx, messages: ctx.messages.map((m) => ({ ...m })) });
    return ctx.turn < holdTurns
      ? { toolCalls: [{ name: 'hold', args: {} }] }
      : { text: `answered at turn ${ctx.turn}` };
  });
  return { model, seen };
}

const userTexts = (messages: Message[]) => messages.filter((m) => m.role === 'user').map((m) => m.content);

async function holdingEngine(config: Record<string, unknown> = {}, holdTurns = 1) {
  const hold = holdTool();
  const script = holdThenAnswer(holdTurns);
  const engine = await newEngine({
    tools: [hold.tool],
    models: { scripted: script.model, other: script.model },
    config: { execution: config },
  });
  return { engine, hold, seen: script.seen };
}

async function startHeld(engine: Engine, hold: ReturnType<typeof holdTool>, request: Partial<RunRequest> = {}) {
  const run = await engine.submit({ sessionId: 's', input: 'main task', ...request });
  expect(run.outcome).toBe('started');
  await until(() => hold.isHolding(run.runId), 'the run is inside its tool');
  return run;
}

describe('steer', () => {
  it('is consumed at the next turn boundary and the model sees it as a user message', async () => {
    const { engine, hold, seen } = await holdingEngine();
    const run = await startHeld(engine, hold);

    const steer = await engine.submit({ sessionId: 's', input: 'also check the tests' });
    expect(steer).toEqual({ runId: steer.runId, sessionId: 's', outcome: 'steered', intoRunId: run.runId });
    await settle();
    expect(seen).toHaveLength(1);
    expect(userTexts(seen[0]!.messages)).toEqual(['main task']);

    hold.release(run.runId);
    const result = await engine.wait(run.runId);
    expect(result).toMatchObject({ state: 'completed', output: 'answered at turn 1' });

    const turn1 = seen[1]!;
    expect(turn1.turn).toBe(1);
    expect(turn1.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect(turn1.messages.at(-1)).toEqual({ role: 'user', content: 'also check the tests' });

    const history = await engine.history(run.runId);
    expectWellFormedHistory(history);
    const types = history.map((e) =>
      e.type === 'turn.started' || e.type === 'turn.finished' ? `${e.type}:${e.turn}` : e.type,
    );
    const steered = history.find((e) => e.type === 'run.steered');
    expect(steered).toMatchObject({ steerId: steer.runId, text: 'also check the tests', consumedAtTurn: 1 });
    expect(types.indexOf('run.steered')).toBeGreaterThan(types.indexOf('turn.finished:0'));
    expect(types.indexOf('run.steered')).toBeLessThan(types.indexOf('turn.started:1'));

    // The steer's id is an alias of the run it went into.
    expect(await engine.wait(steer.runId)).toEqual(result);
    expect(engine.status(steer.runId)?.runId).toBe(run.runId);
  });

  it('arriving while the model answers without tool calls gives the model another turn', async () => {
    const clock = new SimulatedClock();
    const seen: ScriptContext[] = [];
    const engine = await newEngine({
      clock,
      models: {
        scripted: scriptedModel((ctx) => {
          seen.push({ ...ctx, messages: [...ctx.messages] });
          return ctx.turn === 0 ? { text: 'first answer', delayMs: 1000 } : { text: 'answer with the steer' };
        }),
      },
    });
    const run = await engine.submit({ sessionId: 's', input: 'question' });
    await settle();
    const steer = await engine.submit({ sessionId: 's', input: 'and one more thing' });
    expect(steer.outcome).toBe('steered');

    await advance(clock, 1000);
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'answer with the steer' });
    expect(seen.map((s) => s.turn)).toEqual([0, 1]);
    expect(seen[1]!.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'question'],
      ['assistant', 'first answer'],
      ['user', 'and one more thing'],
    ]);
    const history = await engine.history(run.runId);
    expect(history.find((e) => e.type === 'run.steered')).toMatchObject({ consumedAtTurn: 1 });
    expect(history.at(-1)).toMatchObject({ type: 'run.completed', usage: { turns: 2 } });
  });

  it('reaches a run still waiting for limiter permits, at its first turn', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { max_runs_global: 1 } },
    });
    const blocker = await engine.submit({ sessionId: 'other', input: 'blocker' });
    const run = await engine.submit({ sessionId: 's', input: 'waits for a permit' });
    expect(run.outcome).toBe('queued');
    const steer = await engine.submit({ sessionId: 's', input: 'steer before start' });
    expect(steer).toMatchObject({ outcome: 'steered', intoRunId: run.runId });

    await until(() => model.isThinking(blocker.runId), 'the blocker thinks');
    model.answer(blocker.runId);
    await until(() => model.isThinking(run.runId), 'the run starts');
    expect(model.calls.at(-1)!.messages.map((m) => m.content)).toEqual(['waits for a permit', 'steer before start']);
    model.answer(run.runId);
    await engine.wait(run.runId);
    expect((await engine.history(run.runId)).find((e) => e.type === 'run.steered')).toMatchObject({
      consumedAtTurn: 0,
    });
  });

  // The running run is submitted with model "scripted" and workspace /tmp/ws-a set explicitly.
  const cases: [description: string, extra: Partial<RunRequest>, outcome: 'steered' | 'queued'][] = [
    ['plain text', {}, 'steered'],
    ['the running run’s own model', { model: 'scripted' }, 'steered'],
    ['the running run’s own workspace', { workspace: '/tmp/ws-a' }, 'steered'],
    ['attachments', { attachments: [{ name: 'a.png', mediaType: 'image/png', data: 'AAAA' }] }, 'queued'],
    ['a timeout override', { timeoutMs: 5000 }, 'queued'],
    ['an iteration override', { maxIterations: 3 }, 'queued'],
    ['a sandbox override', { sandbox: { network: true } }, 'queued'],
    ['another model', { model: 'other' }, 'queued'],
    ['another workspace', { workspace: '/tmp/ws-b' }, 'queued'],
  ];
  it.each(cases)('with %s: %s', async (_description, extra, outcome) => {
    const { engine, hold, seen } = await holdingEngine();
    const run = await startHeld(engine, hold, { model: 'scripted', workspace: '/tmp/ws-a' });
    const message = await engine.submit({ sessionId: 's', input: 'follow-up', ...extra });
    expect(message.outcome).toBe(outcome);
    if (outcome === 'queued') expect(message.position).toBe(1);
    else expect(message.intoRunId).toBe(run.runId);

    hold.release(run.runId);
    await engine.wait(run.runId);
    const turn1 = seen.find((s) => s.runId === run.runId && s.turn === 1)!;
    expect(userTexts(turn1.messages).includes('follow-up')).toBe(outcome === 'steered');
    if (outcome === 'queued') {
      await until(() => hold.isHolding(message.runId), 'the queued message runs as its own run');
      hold.release(message.runId);
      expect(await engine.wait(message.runId)).toMatchObject({ runId: message.runId, state: 'completed' });
    }
  });

  it('queues beyond max_pending_steers, and takes steers again once the boundary drained them', async () => {
    const { engine, hold, seen } = await holdingEngine({ max_pending_steers: 2 }, 2);
    const run = await startHeld(engine, hold);
    const s1 = await engine.submit({ sessionId: 's', input: 's1' });
    const s2 = await engine.submit({ sessionId: 's', input: 's2' });
    const s3 = await engine.submit({ sessionId: 's', input: 's3' });
    expect([s1.outcome, s2.outcome, s3.outcome]).toEqual(['steered', 'steered', 'queued']);

    hold.release(run.runId);
    await until(() => hold.isHolding(run.runId), 'turn 1 holds again');
    const s4 = await engine.submit({ sessionId: 's', input: 's4' });
    expect(s4).toMatchObject({ outcome: 'steered', intoRunId: run.runId });

    hold.release(run.runId);
    await engine.wait(run.runId);
    const turns = seen.filter((s) => s.runId === run.runId);
    expect(userTexts(turns[1]!.messages)).toEqual(['main task', 's1', 's2']);
    expect(userTexts(turns[2]!.messages)).toEqual(['main task', 's1', 's2', 's4']);

    await until(() => hold.isHolding(s3.runId), 's3 runs on its own');
    expect(seen.find((s) => s.runId === s3.runId)?.input).toBe('s3');
    hold.release(s3.runId);
    await until(() => hold.isHolding(s3.runId), 's3 holds at turn 1');
    hold.release(s3.runId);
    expect((await engine.wait(s3.runId)).state).toBe('completed');
  });

  it('with max_pending_steers = 0 every busy message queues', async () => {
    const { engine, hold } = await holdingEngine({ max_pending_steers: 0 });
    await startHeld(engine, hold);
    expect(await engine.submit({ sessionId: 's', input: 'x' })).toMatchObject({ outcome: 'queued', position: 1 });
  });

  const guards: [description: string, expected: (runId: string) => string, outcome: 'steered' | 'queued'][] = [
    ['expectedRunId names the running run', (runId) => runId, 'steered'],
    ['expectedRunId names another run', () => 'an-earlier-run', 'queued'],
  ];
  it.each(guards)('%s: %s', async (_description, expected, outcome) => {
    const { engine, hold } = await holdingEngine();
    const run = await startHeld(engine, hold);
    const message = await engine.submit({ sessionId: 's', input: 'guarded', expectedRunId: expected(run.runId) });
    expect(message.outcome).toBe(outcome);
    if (outcome === 'steered') expect(message.intoRunId).toBe(run.runId);
  });

  it('unconsumed steers of a cancelled run are re-queued at the front of the lane as one run', async () => {
    const { engine, hold, seen } = await holdingEngine();
    const run = await startHeld(engine, hold);
    const s1 = await engine.submit({ sessionId: 's', input: 'first steer' });
    const s2 = await engine.submit({ sessionId: 's', input: 'second steer' });
    const queued = await engine.submit({ sessionId: 's', input: 'queued behind', busyPolicy: 'queue' });
    expect([s1.outcome, s2.outcome, queued.outcome]).toEqual(['steered', 'steered', 'queued']);

    // Waiting on a steer before its run ends follows the steer wherever it goes.
    const waitedEarly = [engine.wait(s1.runId), engine.wait(s2.runId)];
    expect(await engine.cancel(run.runId)).toBe(true);
    expect((await engine.wait(run.runId)).state).toBe('cancelled');
    await until(() => hold.isHolding(s1.runId), 'the steers run as one run');
    expect(seen.find((s) => s.runId === s1.runId)?.input).toBe('first steer\n\nsecond steer');
    expect(hold.isHolding(queued.runId)).toBe(false);

    hold.release(s1.runId);
    const followUp = await engine.wait(s1.runId);
    expect(followUp).toMatchObject({ runId: s1.runId, state: 'completed' });
    expect(await engine.wait(s2.runId)).toEqual(followUp);
    expect(await Promise.all(waitedEarly)).toEqual([followUp, followUp]);
    await until(() => hold.isHolding(queued.runId), 'then the queued message runs');
    hold.release(queued.runId);
    expect((await engine.wait(queued.runId)).state).toBe('completed');
  });
});
