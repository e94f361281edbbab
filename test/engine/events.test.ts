/*
 * engine.events() and history() (docs/events.md): replay past fromSeq then live with no gap and
 * no duplicate, by run (seq) or by session (sessionSeq); live only without fromSeq; every
 * run's events with events({}); close() ends an iteration, also a waiting one.
 */
import { describe, expect, it } from 'vitest';
import { isTerminalEvent } from '../../src/engine/index.js';
import type { Engine, EventStreamFilter, RunEvent, StreamEvent } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { SimulatedClock, advance, engineFixture, holdTool, isRunEvent, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

async function holdingEngine() {
  const hold = holdTool();
  const engine = await newEngine({
    tools: [hold.tool],
    models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
    config: { execution: { busy_policy: 'queue' } },
  });
  return { engine, hold };
}

/** Reads a stream until the terminal event of `runId`, then closes it. */
async function readUntilTerminal(engine: Engine, filter: EventStreamFilter, runId: string): Promise<RunEvent[]> {
  const stream = engine.events(filter);
  const seen: RunEvent[] = [];
  for await (const event of stream) {
    if (!isRunEvent(event)) continue;
    seen.push(event);
    if (event.runId === runId && isTerminalEvent(event)) break;
  }
  return seen;
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('events({ runId, fromSeq })', () => {
  it('replays past fromSeq, then follows live events, with no gap and no duplicate', async () => {
    const { engine, hold } = await holdingEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await until(() => hold.isHolding(run.runId), 'the run holds');
    const stored = await engine.history(run.runId);
    expect(stored.map((e) => e.seq)).toEqual(range(1, stored.length));
    expect(stored.length).toBeGreaterThan(2);

    const reading = readUntilTerminal(engine, { runId: run.runId, fromSeq: 2 }, run.runId);
    hold.release(run.runId);
    const events = await reading;
    const history = await engine.history(run.runId);
    expect(events.map((e) => e.seq)).toEqual(range(3, history.length));
    expect(events).toEqual(history.slice(2));
  });

  it('merges events appended while the replay is being read', async () => {
    const { engine, hold } = await holdingEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await until(() => hold.isHolding(run.runId), 'the run holds');

    const reading = readUntilTerminal(engine, { runId: run.runId, fromSeq: 1 }, run.runId);
    // Appends the terminal event synchronously, before the replay's read has answered.
    await engine.cancel(run.runId);
    const events = await reading;
    const history = await engine.history(run.runId);
    expect(events.map((e) => e.seq)).toEqual(range(2, history.length));
    expect(events).toEqual(history.slice(1));
    expect(events.at(-1)?.type).toBe('run.cancelled');
  });

  it('replays a finished run completely from fromSeq 0', async () => {
    const engine = await newEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await engine.wait(run.runId);
    const history = await engine.history(run.runId);
    expect(await readUntilTerminal(engine, { runId: run.runId, fromSeq: 0 }, run.runId)).toEqual(history);
  });

  it('without fromSeq streams live events only', async () => {
    const { engine, hold } = await holdingEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await until(() => hold.isHolding(run.runId), 'the run holds');
    const before = (await engine.history(run.runId)).length;
    const reading = readUntilTerminal(engine, { runId: run.runId }, run.runId);
    await settle();
    hold.release(run.runId);
    const events = await reading;
    const history = await engine.history(run.runId);
    expect(events.map((e) => e.seq)).toEqual(range(before + 1, history.length));
  });
});

describe('events({ sessionId, fromSeq })', () => {
  it('replays and follows one session by sessionSeq, across its runs, without other sessions', async () => {
    const { engine, hold } = await holdingEngine();
    const first = await engine.submit({ sessionId: 's', input: 'first' });
    const second = await engine.submit({ sessionId: 's', input: 'second' });
    const elsewhere = await engine.submit({ sessionId: 't', input: 'elsewhere' });
    await until(() => hold.isHolding(first.runId) && hold.isHolding(elsewhere.runId), 'both sessions hold');

    const reading = readUntilTerminal(engine, { sessionId: 's', fromSeq: 3 }, second.runId);
    hold.release(first.runId);
    hold.release(elsewhere.runId);
    await until(() => hold.isHolding(second.runId), 'the second run of s holds');
    hold.release(second.runId);
    const events = await reading;

    expect(events.every((e) => e.sessionId === 's')).toBe(true);
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set([first.runId, second.runId]));
    const all = [...(await engine.history(first.runId)), ...(await engine.history(second.runId))].sort(
      (a, b) => a.sessionSeq - b.sessionSeq,
    );
    expect(all.map((e) => e.sessionSeq)).toEqual(range(1, all.length));
    expect(events.map((e) => e.sessionSeq)).toEqual(range(4, all.length));
  });
});

describe('events({})', () => {
  it('streams every run’s live events and the engine-wide events', async () => {
    const engine = await newEngine({ config: { execution: { busy_policy: 'queue' } } });
    const recorder = recordEvents(engine);
    const a = await engine.submit({ sessionId: 'a', input: 'x' });
    const b = await engine.submit({ sessionId: 'b', input: 'y' });
    await engine.wait(a.runId);
    await engine.wait(b.runId);
    engine.reconfigure({ execution: { max_runs_global: 5 } });
    await settle();
    recorder.close();
    await recorder.ended;

    expect(recorder.ofRun(a.runId)).toEqual(await engine.history(a.runId));
    expect(recorder.ofRun(b.runId)).toEqual(await engine.history(b.runId));
    const engineTypes = recorder.all.filter((e) => !isRunEvent(e)).map((e) => e.type);
    expect(engineTypes).toContain('engine.running');
    expect(engineTypes).toContain('limits.changed');
    expect(engineTypes).toContain('config.reloaded');
    const engineSeqs = recorder.all.filter((e: StreamEvent) => !isRunEvent(e)).map((e) => e.seq);
    expect(engineSeqs).toEqual(range(1, engineSeqs.length));
  });

  it('stamps events with the engine clock', async () => {
    const clock = new SimulatedClock();
    clock.set(Date.UTC(2030, 0, 1));
    const engine = await newEngine({ clock, models: { scripted: scriptedModel([{ text: 'late', delayMs: 1_500 }]) } });
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await settle();
    await advance(clock, 1_500);
    await engine.wait(run.runId);
    const history = await engine.history(run.runId);
    expect(history[0]).toMatchObject({ type: 'run.started', at: '2030-01-01T00:00:00.000Z' });
    expect(history.at(-1)).toMatchObject({ type: 'run.completed', at: '2030-01-01T00:00:01.500Z' });
  });
});

describe('close()', () => {
  it('ends an iteration that is waiting for its next event', async () => {
    const engine = await newEngine();
    const stream = engine.events({ sessionId: 'quiet' });
    const iterator = stream[Symbol.asyncIterator]();
    const next = iterator.next();
    await settle();
    stream.close();
    expect(await next).toEqual({ value: undefined, done: true });
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
  });

  it('ends a for-await loop and stops delivery', async () => {
    const engine = await newEngine({ config: { execution: { busy_policy: 'queue' } } });
    const recorder = recordEvents(engine, { sessionId: 's' });
    const first = await engine.submit({ sessionId: 's', input: 'x' });
    await engine.wait(first.runId);
    await settle();
    const count = recorder.all.length;
    expect(count).toBeGreaterThan(0);
    recorder.close();
    await recorder.ended;
    const second = await engine.submit({ sessionId: 's', input: 'y' });
    await engine.wait(second.runId);
    await settle();
    expect(recorder.all.length).toBe(count);
  });

  it('a stream closed before its replay answered yields nothing, even once the replay arrives', async () => {
    const engine = await newEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await engine.wait(run.runId);
    const stream = engine.events({ runId: run.runId, fromSeq: 0 });
    stream.close();
    await settle();
    const seen: StreamEvent[] = [];
    for await (const event of stream) seen.push(event);
    expect(seen).toEqual([]);
  });
});
