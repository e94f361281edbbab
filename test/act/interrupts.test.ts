/*
 * A batch interrupted (docs/claims.md, dispatch rules 7 and 8): a steer defers what has not started
 * and ends the turn; a cancel or the run deadline closes every open call — running ones are aborted
 * down to their signal — with all the synthetic results logged before the run's terminal event, and
 * the session's conversation left well-formed for its next run.
 */
import { describe, expect, it } from 'vitest';
import type { ModelProvider } from '../../src/model/index.js';
import { MemoryStore } from '../../src/store/index.js';
import { engineFixture, expectWellFormedHistory } from '../engine/fixtures.js';
import { deferred } from '../support/deferred.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import {
  call,
  driveRun,
  eventsOf,
  finishedById,
  global,
  paths,
  probeEngineFrom,
  probeTool,
  scheduleOf,
  shared,
  toolMessages,
} from './fixtures.js';

const newEngine = engineFixture();
const probeEngine = probeEngineFrom(newEngine);

const DEFERRED = { ok: false, error: { code: 'deferred' }, synthetic: true };

describe('a steer during a batch', () => {
  it.each(['groups', 'dag'] as const)(
    '%s: defers every call not yet started; running calls finish normally; the model sees the steer next turn',
    async (scheduling) => {
      const { probe, engine, seen } = await probeEngine(
        [
          [
            call('a', shared(), { hold: true }),
            call('b', shared(), { hold: true }),
            call('c', global(), { ms: 5 }),
            call('d', shared(), { ms: 5 }),
          ],
        ],
        { tool_service: { scheduling } },
      );
      const run = await engine.submit({ sessionId: 's', input: 'main task' });
      await until(() => probe.isHolding('a') && probe.isHolding('b'), 'the first group runs');

      const steer = await engine.submit({ sessionId: 's', input: 'stop, look at this first' });
      expect(steer).toMatchObject({ outcome: 'steered', intoRunId: run.runId });
      await settle();
      probe.release('b', 'b done');
      await settle();
      probe.release('a', 'a done');
      expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed' });

      const history = await engine.history(run.runId);
      expectWellFormedHistory(history);
      const finished = finishedById(history);
      expect(finished.get('a')).toMatchObject({ ok: true, output: 'a done' });
      expect(finished.get('b')).toMatchObject({ ok: true, output: 'b done' });
      expect(finished.get('a')?.synthetic).toBeUndefined();
      expect(finished.get('c')).toMatchObject(DEFERRED);
      expect(finished.get('d')).toMatchObject(DEFERRED);
      expect(probe.started()).toEqual(['a', 'b']);
      expect(eventsOf(history, 'tool.started').map((e) => e.callId)).toEqual(['a', 'b']);

      // The turn ended there: the next model turn sees every result, then the steer.
      const next = seen[1]!;
      expect(next.turn).toBe(1);
      const tail = next.messages.slice(-5);
      expect(tail.map((m) => [m.role, m.toolCallId])).toEqual([
        ['tool', 'a'],
        ['tool', 'b'],
        ['tool', 'c'],
        ['tool', 'd'],
        ['user', undefined],
      ]);
      expect(JSON.parse(tail[2]!.content)).toMatchObject({ output: { deferred: true }, error: { code: 'deferred' } });
      expect(tail[4]!.content).toBe('stop, look at this first');
      expect(history.find((e) => e.type === 'run.steered')).toMatchObject({ consumedAtTurn: 1 });
    },
  );

  it('that arrived during the model turn defers the whole batch before any call starts', async () => {
    const gate = deferred<void>();
    const seen: string[][] = [];
    const probe = probeTool();
    const model: ModelProvider = {
      async *complete(request) {
        seen.push(request.messages.map((m) => `${m.role}:${m.content}`));
        if (request.context?.turn === 0) {
          await gate.promise;
          yield { type: 'message', text: '', toolCalls: [call('a', shared()), call('b', global())] };
        } else {
          yield { type: 'message', text: 'saw it', toolCalls: [] };
        }
      },
    };
    const engine = await newEngine({ tools: [probe.tool], models: { scripted: model } });
    const run = await engine.submit({ sessionId: 's', input: 'main task' });
    await until(() => seen.length === 1, 'the model turn runs');
    expect(await engine.submit({ sessionId: 's', input: 'new information' })).toMatchObject({ outcome: 'steered' });
    await settle();
    gate.resolve();
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'saw it' });

    const history = await engine.history(run.runId);
    expect(probe.executions.size).toBe(0);
    expect(eventsOf(history, 'tool.started')).toEqual([]);
    const finished = finishedById(history);
    expect(finished.get('a')).toMatchObject(DEFERRED);
    expect(finished.get('b')).toMatchObject(DEFERRED);
    expect(seen[1]!.slice(-3)).toEqual([
      expect.stringMatching(/^tool:.*"deferred":true/),
      expect.stringMatching(/^tool:.*"deferred":true/),
      'user:new information',
    ]);
  });
});

describe('cancel mid-batch', () => {
  it.each(['groups', 'dag'] as const)(
    '%s: running calls are aborted, waiting ones never start, every result is logged before run.cancelled, and the conversation stays well-formed',
    async (scheduling) => {
      const store = new MemoryStore();
      const { probe, engine, seen } = await probeEngine(
        [
          [call('first', paths('/w/a'), { ms: 0 })],
          [call('a', shared(), { hold: true }), call('b', shared(), { hold: true }), call('c', global(), { ms: 5 })],
        ],
        { tool_service: { scheduling } },
        { store },
      );
      const run = await engine.submit({ sessionId: 's', input: 'main task' });
      await until(() => probe.isHolding('a') && probe.isHolding('b'), 'the second batch runs');
      const signals = [probe.signals.get('a')!, probe.signals.get('b')!];
      expect(signals.map((s) => s.aborted)).toEqual([false, false]);

      expect(await engine.cancel(run.runId, 'user pressed stop')).toBe(true);
      expect(signals.map((s) => s.aborted)).toEqual([true, true]);
      expect(await engine.wait(run.runId)).toMatchObject({ state: 'cancelled', reason: 'user pressed stop' });
      await settle();

      const history = await engine.history(run.runId);
      expectWellFormedHistory(history);
      const finished = finishedById(history);
      for (const id of ['a', 'b']) {
        expect(finished.get(id)).toMatchObject({
          ok: false,
          error: { code: 'cancelled', message: 'run cancelled (user pressed stop) during this call' },
          synthetic: true,
        });
      }
      expect(finished.get('c')).toMatchObject({
        ok: false,
        error: { code: 'cancelled', message: 'run cancelled (user pressed stop) before this call started' },
        synthetic: true,
      });
      expect(probe.executions.has('c')).toBe(false);
      const types = history.map((e) => e.type);
      const lastFinished = types.lastIndexOf('tool.finished');
      expect(types.slice(lastFinished + 1)).toEqual(['run.cancelled']);
      expect(eventsOf(history, 'tool.finished').map((e) => e.callId)).toEqual(['first', 'a', 'b', 'c']);

      // Every tool call of the session has a result, so the next run's conversation is valid.
      const conversation = await store.readConversation('s');
      const assistant = conversation.filter((m) => m.role === 'assistant').at(-1)!;
      expect(assistant.toolCalls?.map((c) => c.id)).toEqual(['a', 'b', 'c']);
      expect(toolMessages(conversation).map((m) => m.toolCallId)).toEqual(['first', 'a', 'b', 'c']);
      const next = await engine.submit({ sessionId: 's', input: 'again' });
      await engine.wait(next.runId);
      const messages = seen.at(-1)!.messages;
      expect(messages.slice(-5).map((m) => [m.role, m.toolCallId])).toEqual([
        ['assistant', undefined],
        ['tool', 'a'],
        ['tool', 'b'],
        ['tool', 'c'],
        ['user', undefined],
      ]);
    },
  );
});

describe('the run deadline mid-batch', () => {
  it.each(['groups', 'dag'] as const)('%s: closes the batch like a cancel, with code timeout', async (scheduling) => {
    const store = new MemoryStore();
    const { clock, probe, engine } = await probeEngine(
      [
        [
          call('a', paths('/w/a', '/w/b'), { ms: 300 }),
          call('b', paths('/w/a'), { ms: 5_000 }),
          call('c', paths('/w/b'), { ms: 5_000 }),
          call('d', global(), { ms: 10 }),
        ],
      ],
      { tool_service: { scheduling } },
      { store },
    );
    const run = await engine.submit({ sessionId: 's', input: 'go', timeoutMs: 1_000 });
    const history = await driveRun(engine, clock, probe, run.runId, [1_000]);
    expectWellFormedHistory(history);
    expect(history.at(-1)).toMatchObject({
      type: 'run.failed',
      error: { code: 'timeout' },
      at: new Date(1_000).toISOString(),
    });

    const finished = finishedById(history);
    expect(finished.get('a')).toMatchObject({ ok: true });
    // b and c waited for a (their paths); each started at 300 with a call timeout of 1000 ms, so the run deadline came first.
    expect([probe.startOf('b')?.at, probe.startOf('c')?.at]).toEqual([300, 300]);
    for (const id of ['b', 'c']) {
      expect(finished.get(id)).toMatchObject({
        ok: false,
        error: { code: 'timeout', message: 'run deadline expired during this call' },
        synthetic: true,
      });
      expect(probe.signals.get(id)?.aborted).toBe(true);
    }
    expect(finished.get('d')).toMatchObject({
      ok: false,
      error: { code: 'timeout', message: 'run deadline expired before this call started' },
      synthetic: true,
    });
    expect(probe.executions.has('d')).toBe(false);
    const types = history.map((e) => e.type);
    expect(types.slice(types.lastIndexOf('tool.finished') + 1)).toEqual(['run.failed']);
    await settle();
    expect(toolMessages(await store.readConversation('s')).map((m) => m.toolCallId)).toEqual(['a', 'b', 'c', 'd']);
    expect(scheduleOf(history).mode).toBe(scheduling);
  });
});
