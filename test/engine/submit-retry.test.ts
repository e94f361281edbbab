/*
 * A retried submit is not a second message (issue 27.7; docs/runs.md, "A retried submit"): the
 * same request with the same runId answers with the first submit's outcome — while that one is
 * still being decided, once it is stored, and after a restart on the file store — and a
 * different request with that runId is still `duplicate_run_id`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type EngineOptions } from '../../src/engine/index.js';
import { engineFixture, heldModel, withWorkspaceRoot } from './fixtures.js';
import { until } from '../support/eventually.js';

const newEngine = engineFixture();

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** An engine on the file store in `dir`. */
async function engineOn(dir: string, options: EngineOptions): Promise<Engine> {
  const engine = await createEngine({
    store: { dir },
    ...options,
    config: withWorkspaceRoot(options.config ?? {}, await tempDir('switchyard-retry-ws-')),
  });
  cleanup.push(() => engine.close());
  return engine;
}

const duplicate = { code: 'duplicate_run_id' };

describe('a retried submit', () => {
  it('answers a started run again with its first outcome; a different request is duplicate_run_id', async () => {
    const model = heldModel();
    const engine = await newEngine({ models: { scripted: model.provider } });
    const request = { runId: 'r1', sessionId: 's', input: 'hello', metadata: { a: '1', b: '2' } };
    const first = await engine.submit(request);
    expect(first).toEqual({ runId: 'r1', sessionId: 's', outcome: 'started' });
    // The same fields in another order, and a new trace context (transport only): the same request.
    await expect(
      engine.submit({
        metadata: { b: '2', a: '1' },
        input: 'hello',
        sessionId: 's',
        runId: 'r1',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      }),
    ).resolves.toEqual(first);
    await expect(engine.submit({ ...request, input: 'hello!' })).rejects.toMatchObject(duplicate);
    await expect(engine.submit({ ...request, sessionId: 't' })).rejects.toMatchObject(duplicate);
    await expect(engine.submit({ ...request, busyPolicy: 'queue' })).rejects.toMatchObject(duplicate);
    // The retry started nothing: one run, answered once by the model.
    await until(() => model.isThinking('r1'), 'r1 thinking');
    model.answer('r1');
    await expect(engine.wait('r1')).resolves.toMatchObject({ state: 'completed' });
    expect(model.calls.map((c) => c.runId)).toEqual(['r1']);
    // Still the first outcome once the run has ended.
    await expect(engine.submit(request)).resolves.toEqual(first);
  });

  it('a queued message keeps its first answer (queued, its position then) after it started', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'queue' } },
    });
    await engine.submit({ runId: 'a', sessionId: 's', input: 'first' });
    const queued = await engine.submit({ runId: 'b', sessionId: 's', input: 'second' });
    expect(queued).toEqual({ runId: 'b', sessionId: 's', outcome: 'queued', position: 1 });
    await expect(engine.submit({ runId: 'b', sessionId: 's', input: 'second' })).resolves.toEqual(queued);
    await until(() => model.isThinking('a'), 'a thinking');
    model.answer('a');
    await until(() => model.isThinking('b'), 'b thinking');
    await expect(engine.submit({ runId: 'b', sessionId: 's', input: 'second' })).resolves.toEqual(queued);
    model.answer('b');
    await engine.wait('b');
    expect(model.calls.map((c) => c.runId)).toEqual(['a', 'b']);
  });

  it('a steer answers steered into the same run again, and is not steered twice', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'steer' } },
    });
    await engine.submit({ runId: 'a', sessionId: 's', input: 'first' });
    const steer = { runId: 'st', sessionId: 's', input: 'also this' };
    const steered = await engine.submit(steer);
    expect(steered).toEqual({ runId: 'st', sessionId: 's', outcome: 'steered', intoRunId: 'a' });
    await expect(engine.submit(steer)).resolves.toEqual(steered);
    await expect(engine.submit({ ...steer, input: 'something else' })).rejects.toMatchObject(duplicate);
    await until(() => model.isThinking('a'), 'a thinking');
    model.answer('a');
    await until(() => model.calls.length === 2, 'the turn that reads the steer');
    model.answer('a');
    await engine.wait('a');
    const history = await engine.history('a');
    expect(history.filter((e) => e.type === 'run.steered')).toHaveLength(1);
  });

  it('a retry while the first submit is still being decided gets the same answer, and one run', async () => {
    const model = heldModel();
    const engine = await newEngine({ models: { scripted: model.provider } });
    const request = { runId: 'r', sessionId: 's', input: 'at once' };
    const answers = await Promise.allSettled([
      engine.submit(request),
      engine.submit(request),
      engine.submit({ ...request, input: 'not the same' }),
      engine.submit(request),
    ]);
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const values = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    expect(values).toEqual([0, 1, 2].map(() => ({ runId: 'r', sessionId: 's', outcome: 'started' })));
    expect((answers[2] as PromiseRejectedResult).reason).toMatchObject(duplicate);
    await until(() => model.isThinking('r'), 'r thinking');
    model.answer('r');
    await engine.wait('r');
    expect(model.calls).toHaveLength(1);
  });

  it('a generated runId is never a retry: submits without runId are each a message', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'queue' } },
    });
    const a = await engine.submit({ sessionId: 's', input: 'same' });
    const b = await engine.submit({ sessionId: 's', input: 'same' });
    expect(a.runId).not.toBe(b.runId);
    expect(b.outcome).toBe('queued');
  });

  it('survives a restart on the file store: the same request answers as first, a different one is refused', async () => {
    const dir = await tempDir('switchyard-retry-');
    const model = heldModel();
    const options = { models: { scripted: model.provider }, config: { execution: { busy_policy: 'queue' as const } } };
    const before = await engineOn(dir, options);
    const started = await before.submit({ runId: 'a', sessionId: 's', input: 'first' });
    const queued = await before.submit({ runId: 'b', sessionId: 's', input: 'second' });
    await before.close();

    const after = await engineOn(dir, options);
    await expect(after.submit({ runId: 'a', sessionId: 's', input: 'first' })).resolves.toEqual(started);
    await expect(after.submit({ runId: 'b', sessionId: 's', input: 'second' })).resolves.toEqual(queued);
    await expect(after.submit({ runId: 'b', sessionId: 's', input: 'another' })).rejects.toMatchObject(duplicate);
    await expect(after.submit({ runId: 'a', sessionId: 's', input: 'first', timeoutMs: 5_000 })).rejects.toMatchObject(
      duplicate,
    );
  });
});
