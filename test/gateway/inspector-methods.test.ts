/*
 * What the inspector page asks the gateway for, over a real socket: `runs.query` (a page of the
 * stored runs, filtered; the store's contract is in src/store/types.ts) and, on
 * `inspect.subscribe`, the live actors as they are before anything else, so a page opened
 * mid-run shows them at once.
 */
import { describe, expect, it } from 'vitest';
import { ClientError } from '../../src/client/index.js';
import type { SerializedInspectionEvent } from '../../src/gateway/inspection/inspect-serialize.js';
import { RpcErrorCode } from '../../src/gateway/index.js';
import { scriptedModel, type ScriptContext, type ScriptTurn } from '../../src/model/index.js';
import { until } from '../support/eventually.js';
import { gatewayFixture } from './fixtures.js';

const harness = gatewayFixture();

/** "slow" thinks for 30 s (the test ends it); "fail" fails; anything else answers at once. */
function script(ctx: ScriptContext): ScriptTurn {
  if (ctx.input === 'slow') return { text: 'finally', delayMs: 30_000 };
  if (ctx.input === 'fail') throw Object.assign(new Error('the model is down'), { code: 'model_error' });
  return { text: `answer to ${ctx.input}` };
}

const engine = { models: { scripted: scriptedModel(script) } };

describe('runs.query', () => {
  it('pages through the stored runs, newest first, filtered by session, state and outcome', async () => {
    const h = await harness({ engine });
    const client = await h.client();
    const ids: string[] = [];
    for (const [sessionId, input] of [
      ['alice', 'one'],
      ['bob', 'two'],
      ['alice', 'fail'],
      ['bob', 'three'],
    ] as const) {
      const { runId } = await client.submit({ sessionId, input });
      await client.wait(runId);
      ids.push(runId);
    }
    const first = await client.call('runs.query', { limit: 3 });
    expect(first.runs.map((r) => r.runId)).toEqual([ids[3], ids[2], ids[1]]);
    expect(first.runs[0]).toMatchObject({
      sessionId: 'bob',
      state: 'completed',
      outcome: 'completed',
      input: 'three',
      turns: 1,
      toolCalls: 0,
    });
    expect(first.runs[1]).toMatchObject({ state: 'failed', outcome: 'model_error', turns: 0 });
    const second = await client.call('runs.query', { limit: 3, before: first.cursor! });
    expect(second).toEqual({ runs: [expect.objectContaining({ runId: ids[0] })] });
    expect((await client.call('runs.query', { sessionId: 'alice', limit: 10 })).runs.map((r) => r.runId)).toEqual([
      ids[2],
      ids[0],
    ]);
    expect((await client.call('runs.query', { states: ['failed'], limit: 10 })).runs.map((r) => r.runId)).toEqual([
      ids[2],
    ]);
    expect(
      (await client.call('runs.query', { outcome: 'completed', sessionId: 'bob', limit: 10 })).runs.map((r) => r.runId),
    ).toEqual([ids[3], ids[1]]);
    // Without a limit, a page of 50.
    expect((await client.call('runs.query', {})).runs).toHaveLength(4);
  });

  it.each<[string, Record<string, unknown>]>([
    ['a limit of 0', { limit: 0 }],
    ['a limit above 500', { limit: 501 }],
    ['a cursor that is not one', { before: 'yesterday' }],
    ['an unknown state', { states: ['sleeping'] }],
    ['an unknown key', { session: 'alice' }],
  ])('answers %s with invalid params', async (_name, params) => {
    const h = await harness({ engine });
    const client = await h.client();
    const error = await client.call('runs.query', params as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).code).toBe(RpcErrorCode.InvalidParams);
  });
});

describe('inspect.subscribe', () => {
  it('starts with the live actors as they are, then streams what happens to them', async () => {
    const h = await harness({ engine });
    const submitter = await h.client();
    const { runId } = await submitter.submit({ sessionId: 'alice', input: 'slow' });
    await until(() => h.engine.status(runId)?.state === 'running', 'the run runs');

    const client = await h.client();
    const inspect = client.inspect();
    const seen: SerializedInspectionEvent[] = [];
    const reading = (async () => {
      for await (const event of inspect) {
        seen.push(event);
        if (event.actorId === `run:${runId}` && event.snapshot?.status === 'done') break;
      }
    })();
    await inspect.ready;
    // Shown at once: nothing happens to the run until it is cancelled below.
    await until(() => seen.some((e) => e.actorId === `run:${runId}`), 'the running run is shown');
    await submitter.cancel(runId);
    await reading;

    const firstLive = seen.findIndex((e) => e.event?.type !== 'inspect.current');
    const current = seen.slice(0, firstLive);
    expect(current.map((e) => e.actorId)).toEqual(expect.arrayContaining(['limiter', 'session:alice', `run:${runId}`]));
    expect(current.find((e) => e.actorId === `run:${runId}`)).toMatchObject({
      type: '@xstate.snapshot',
      machineId: 'run',
      snapshot: { status: 'active', value: { live: { running: 'thinking' } } },
    });
    expect(current.find((e) => e.actorId === 'session:alice')?.snapshot?.value).toBe('busy');
    // Then live, from the cancel on.
    expect(seen[firstLive]).toMatchObject({
      actorId: `run:${runId}`,
      type: '@xstate.event',
      event: { type: 'CANCEL' },
    });
    expect(seen.slice(firstLive).every((e) => e.event?.type !== 'inspect.current')).toBe(true);
    expect(seen.at(-1)?.snapshot?.value).toBe('cancelled');
  });
});
