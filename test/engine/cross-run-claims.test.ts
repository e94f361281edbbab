/*
 * Claims across runs (docs/claims.md, "Claims across runs"), on a real engine: a call whose
 * claim conflicts with a running call of another run in the same workspace waits
 * (`tool.waiting`), then starts once the claim is free; other workspaces never wait; a
 * cancelled run, a run deadline and a call timeout all take a waiter out of the queue; a
 * delegated run inherits nothing, and a parent waiting on its child holds nothing;
 * `[tool_service] cross_run_claims = false` restores the old behaviour.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { sandboxDirectory } from '../sandbox/sandbox-workspace.js';
import { z } from 'zod';
import { Claims } from '../../src/concurrency/index.js';
import type { Clock } from '../../src/core/clock.js';
import type { PartialConfig } from '../../src/config/index.js';
import type { RunEventOf } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { defineTool, ToolError } from '../../src/tools/index.js';
import { call, paths, probeTool, type ModelCall } from '../act/fixtures.js';
import { engineFixture, recordEvents, SimulatedClock } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

const newEngine = engineFixture();
let root: string;
let shared: string;
let elsewhere: string;

const tempDir = tempDirs('switchyard-cross-run-', 'afterAll');

beforeAll(async () => {
  root = await tempDir();
  shared = await sandboxDirectory(join(root, 'shared'));
  elsewhere = await sandboxDirectory(join(root, 'elsewhere'));
});

/** Delegates like session_send, into the caller's own workspace (the way a sub-agent on the same checkout works). */
export const delegateHere = defineTool({
  name: 'delegate_here',
  description: "Delegates a task to another session, working in this run's workspace.",
  input: z.object({ session: z.string(), message: z.string() }).strict(),
  concurrencyClaim: ({ session }) => Claims.sessions([session]),
  execute: async ({ session, message }, ctx) => {
    const result = await ctx.delegate!({ sessionId: session, input: message, workspace: ctx.workspace });
    if (result.state !== 'completed')
      throw new ToolError('delegated_run_failed', `${result.runId} ended ${result.state}`);
    return result.output;
  },
});

/** An engine whose model plays, for each run, the batches the test gave it (by runId, or by input for delegated runs). */
async function crossRunEngine(config: PartialConfig = {}, clock?: Clock) {
  const probe = probeTool(clock);
  const plans = new Map<string, ModelCall[][]>();
  const model = scriptedModel((ctx) => {
    const batch = (plans.get(ctx.runId) ?? plans.get(ctx.input))?.[ctx.turn];
    return batch ? { toolCalls: batch } : { text: `done ${ctx.input}` };
  });
  const engine = await newEngine({
    config: {
      ...config,
      execution: { max_runs_per_agent: 8, ...config.execution },
      tool_service: { parallel_tool_concurrency: 4, ...config.tool_service },
    },
    models: { scripted: model },
    tools: [probe.tool, delegateHere],
    ...(clock ? { clock } : {}),
  });
  const recorder = recordEvents(engine);
  const submit = (
    runId: string,
    sessionId: string,
    workspace: string,
    batches: ModelCall[][],
    extra: { timeoutMs?: number } = {},
  ) => {
    plans.set(runId, batches);
    return engine.submit({ runId, sessionId, input: runId, workspace, ...extra });
  };
  const waits = (runId?: string) =>
    recorder
      .runEvents()
      .filter(
        (e): e is RunEventOf<'tool.waiting'> => e.type === 'tool.waiting' && (runId === undefined || e.runId === runId),
      );
  /** Global log positions of a call's events. */
  const at = (runId: string, type: string, callId: string) =>
    recorder.runEvents().findIndex((e) => e.runId === runId && e.type === type && 'callId' in e && e.callId === callId);
  return { engine, probe, recorder, plans, submit, waits, at };
}

describe('claims across runs', () => {
  it('a conflicting call of another run waits, named by tool.waiting, and starts once the holder finished', async () => {
    const { engine, probe, submit, waits, at } = await crossRunEngine();
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds app.ts');
    await submit('B', 'bob', shared, [[call('b1', paths('/repo/app.ts')), call('b2', paths('/repo/other.ts'))]]);
    await until(() => waits('B').length === 1 && probe.executions.has('b2'), 'B waits for a1, b2 ran');

    expect(waits('B')).toEqual([
      expect.objectContaining({
        callId: 'b1',
        blockedBy: { runId: 'A', callId: 'a1', tool: 'probe' },
        resource: 'path /repo/app.ts',
      }),
    ]);
    expect(probe.executions.has('b1')).toBe(false);
    expect(at('B', 'tool.started', 'b1')).toBe(-1);
    // The unrelated call of the same batch went ahead.
    expect(at('B', 'tool.finished', 'b2')).toBeGreaterThan(-1);

    probe.release('a1');
    await expect(engine.wait('B')).resolves.toMatchObject({ state: 'completed' });
    await engine.wait('A');
    expect(at('A', 'tool.finished', 'a1')).toBeLessThan(at('B', 'tool.started', 'b1'));
    expect(at('B', 'tool.waiting', 'b1')).toBeLessThan(at('B', 'tool.started', 'b1'));
    const b1 = (await engine.history('B')).find((e) => e.type === 'tool.finished' && e.callId === 'b1');
    expect(b1).toMatchObject({ ok: true });
  });

  it('reads share across runs; a write waits for the reads ahead of it', async () => {
    const { engine, probe, submit, waits } = await crossRunEngine();
    await submit('A', 'alice', shared, [[call('a1', { kind: 'shared', reads: ['/repo/app.ts'] }, { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A reads');
    await submit('B', 'bob', shared, [[call('b1', { kind: 'shared', reads: ['/repo/app.ts'] }, { hold: true })]]);
    await until(() => probe.isHolding('b1'), 'B reads alongside');
    await submit('C', 'carol', shared, [[call('c1', paths('/repo/app.ts'))]]);
    await until(() => waits('C').length === 1, 'C waits');
    expect(waits('C')[0]).toMatchObject({ blockedBy: { runId: 'A' } });
    probe.release('a1');
    await engine.wait('A');
    await settle();
    expect(probe.executions.has('c1')).toBe(false);
    probe.release('b1');
    await expect(engine.wait('C')).resolves.toMatchObject({ state: 'completed' });
  });

  it('different workspaces never wait on each other', async () => {
    const { engine, probe, submit, waits } = await crossRunEngine();
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds app.ts');
    await submit('B', 'bob', elsewhere, [[call('b1', { kind: 'global' })]]);
    await expect(engine.wait('B')).resolves.toMatchObject({ state: 'completed' });
    expect(waits()).toEqual([]);
    probe.release('a1');
    await engine.wait('A');
  });

  it('[tool_service] cross_run_claims = false: runs no longer wait for each other', async () => {
    const { engine, probe, submit, waits } = await crossRunEngine({ tool_service: { cross_run_claims: false } });
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds app.ts');
    await submit('B', 'bob', shared, [[call('b1', paths('/repo/app.ts'))]]);
    await expect(engine.wait('B')).resolves.toMatchObject({ state: 'completed' });
    expect(waits()).toEqual([]);
    probe.release('a1');
    await engine.wait('A');
  });

  it('first come, first served: the waiters on one file start in the order they arrived', async () => {
    const { engine, probe, submit, waits } = await crossRunEngine();
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds');
    for (const [runId, session] of [
      ['B', 'bob'],
      ['C', 'carol'],
      ['D', 'dave'],
    ] as const) {
      await submit(runId, session, shared, [[call(`${runId.toLowerCase()}1`, paths('/repo/app.ts'), { hold: true })]]);
      await until(() => waits(runId).length === 1, `${runId} waits`);
    }
    // Each names the holder in its way; the queue behind it decides the order.
    expect(waits().map((w) => w.blockedBy.runId)).toEqual(['A', 'A', 'A']);
    for (const id of ['a1', 'b1', 'c1', 'd1']) {
      await until(() => probe.isHolding(id), `${id} holds`);
      probe.release(id);
    }
    await Promise.all(['A', 'B', 'C', 'D'].map((runId) => engine.wait(runId)));
    expect(probe.started()).toEqual(['a1', 'b1', 'c1', 'd1']);
  });

  it('cancelling a waiting run takes its call out of the queue: the next waiter gets the claim', async () => {
    const { engine, probe, submit, waits } = await crossRunEngine();
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds');
    await submit('B', 'bob', shared, [[call('b1', paths('/repo/app.ts'))]]);
    await until(() => waits('B').length === 1, 'B waits');
    await submit('C', 'carol', shared, [[call('c1', paths('/repo/app.ts'))]]);
    await until(() => waits('C').length === 1, 'C waits');

    await engine.cancel('B', 'changed my mind');
    await expect(engine.wait('B')).resolves.toMatchObject({ state: 'cancelled' });
    const b1 = (await engine.history('B')).find((e) => e.type === 'tool.finished');
    expect(b1).toMatchObject({ callId: 'b1', ok: false, error: { code: 'cancelled' } });
    probe.release('a1');
    await expect(engine.wait('C')).resolves.toMatchObject({ state: 'completed' });
    expect(probe.executions.has('b1')).toBe(false);
    expect(probe.started()).toEqual(['a1', 'c1']);
  });

  it('the run deadline ends a wait: the run fails timeout and its place in the queue goes to the next waiter', async () => {
    const clock = new SimulatedClock();
    const { engine, probe, submit, waits } = await crossRunEngine({}, clock);
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds');
    await submit('B', 'bob', shared, [[call('b1', paths('/repo/app.ts'))]], { timeoutMs: 800 });
    await until(() => waits('B').length === 1, 'B waits');
    await submit('C', 'carol', shared, [[call('c1', paths('/repo/app.ts'))]]);
    await until(() => waits('C').length === 1, 'C waits behind B');

    clock.increment(799);
    await settle();
    expect(engine.status('B')?.state).toBe('running');
    clock.increment(1);
    await expect(engine.wait('B')).resolves.toMatchObject({ state: 'failed', error: { code: 'timeout' } });
    probe.release('a1');
    await expect(engine.wait('C')).resolves.toMatchObject({ state: 'completed' });
    expect(probe.executions.has('b1')).toBe(false);
  });

  it('the call timeout bounds a wait: the call fails timeout naming what it waited for, and the run goes on', async () => {
    const clock = new SimulatedClock();
    const { engine, probe, submit, waits } = await crossRunEngine({}, clock);
    await submit('A', 'alice', shared, [[call('a1', paths('/repo/app.ts'), { hold: true })]]);
    await until(() => probe.isHolding('a1'), 'A holds');
    // Calls planned from now on may take one second (A's was planned with the default minute).
    engine.reconfigure({ tool_service: { default_timeout_seconds: 1 } });
    await submit('B', 'bob', shared, [[call('b1', paths('/repo/app.ts'))]]);
    await until(() => waits('B').length === 1, 'B waits');
    clock.increment(999);
    await settle();
    expect((await engine.history('B')).some((e) => e.type === 'tool.finished')).toBe(false);
    clock.increment(1);
    await expect(engine.wait('B')).resolves.toMatchObject({ state: 'completed' });
    const finished = (await engine.history('B')).find((e) => e.type === 'tool.finished');
    expect(finished).toMatchObject({
      callId: 'b1',
      ok: false,
      synthetic: true,
      error: {
        code: 'timeout',
        message: expect.stringMatching(
          /waited its whole timeout of 1000 ms for path \/repo\/app.ts, held by probe of run A/,
        ),
      },
    });
    expect(probe.executions.has('b1')).toBe(false);
    expect(probe.isHolding('a1')).toBe(true);
    probe.release('a1');
    await engine.wait('A');
  });

  it('a parent waiting on its child holds no claims: the child writes what the parent wrote before', async () => {
    const { engine, probe, submit, plans, waits } = await crossRunEngine();
    plans.set('child task', [[call('c1', paths('/repo/app.ts'))]]);
    await submit('P', 'parent', shared, [
      [call('p1', paths('/repo/app.ts'))],
      [{ id: 'd1', name: 'delegate_here', args: { session: 'child', message: 'child task' } }],
      [call('p2', paths('/repo/app.ts'))],
    ]);
    await expect(engine.wait('P')).resolves.toMatchObject({ state: 'completed' });
    expect(probe.started()).toEqual(['p1', 'c1', 'p2']);
    expect(waits()).toEqual([]);
  });

  it('a delegated run inherits nothing: two children the parent fans out to wait for each other like any runs', async () => {
    const { engine, probe, submit, plans, waits } = await crossRunEngine();
    plans.set('first task', [[call('x1', paths('/repo/app.ts'), { hold: true })]]);
    plans.set('second task', [[call('y1', paths('/repo/app.ts'))]]);
    await submit('P', 'parent', shared, [
      [
        { id: 'd1', name: 'delegate_here', args: { session: 'first', message: 'first task' } },
        { id: 'd2', name: 'delegate_here', args: { session: 'second', message: 'second task' } },
      ],
    ]);
    await until(() => probe.isHolding('x1') && waits().length === 1, 'the second child waits for the first');
    const [wait] = waits();
    expect(wait).toMatchObject({
      callId: 'y1',
      blockedBy: { callId: 'x1', tool: 'probe' },
      resource: 'path /repo/app.ts',
    });
    expect(engine.status(wait!.blockedBy.runId)?.parentRunId).toBe('P');
    probe.release('x1');
    await expect(engine.wait('P')).resolves.toMatchObject({ state: 'completed' });
  });
});
