/*
 * Every gateway method end to end through the client, against a real engine with a
 * scripted model: results as the engine gives them, engine errors as ClientError with the
 * engine code in data.code, pending calls and subscriptions failing when the socket closes.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { z } from 'zod';
import { ClientError, CONNECTION_CLOSED, connect, type WebSocketLike } from '../../src/client/index.js';
import type { ScriptContext, ScriptTurn } from '../../src/model/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { RpcErrorCode, type SerializedInspectionEvent } from '../../src/gateway/index.js';
import { defineTool } from '../../src/tools/index.js';
import { until } from '../support/eventually.js';
import { gatewayFixture } from '../gateway/fixtures.js';

const harness = gatewayFixture();

/** Answers at once, except that "slow" inputs take 30 s (they get cancelled). */
function script(ctx: ScriptContext): ScriptTurn {
  if (ctx.input.startsWith('slow')) return { text: 'finally', delayMs: 30_000 };
  return { text: `answer to ${ctx.input}` };
}

const scripted = { models: { scripted: scriptedModel(script) } };

async function expectClientError(promise: Promise<unknown>, code: number, engineCode?: string): Promise<ClientError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a ClientError');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ClientError);
  expect(error).toMatchObject({ code });
  if (engineCode !== undefined) expect((error as ClientError).engineCode).toBe(engineCode);
  return error as ClientError;
}

describe('runs', () => {
  it('run.submit, run.wait, run.get, run.history', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const submitted = await client.submit({ sessionId: 'alice', input: 'hello' });
    expect(submitted).toMatchObject({ sessionId: 'alice', outcome: 'started', runId: expect.any(String) });
    expect(await client.wait(submitted.runId)).toEqual({
      runId: submitted.runId,
      state: 'completed',
      output: 'answer to hello',
    });
    expect(await client.get(submitted.runId)).toMatchObject({
      runId: submitted.runId,
      sessionId: 'alice',
      agentId: 'main',
      state: 'completed',
    });
    const history = await client.history(submitted.runId);
    expect(history.map((e) => e.seq)).toEqual(history.map((_, i) => i + 1));
    expect(history.at(-1)).toMatchObject({ type: 'run.completed', output: 'answer to hello' });
  });

  it('queued and steered outcomes carry position and intoRunId', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const first = await client.submit({ sessionId: 's', input: 'slow one' });
    const queued = await client.submit({ sessionId: 's', input: 'next', busyPolicy: 'queue' });
    expect(queued).toMatchObject({ outcome: 'queued', position: 1 });
    const steered = await client.submit({ sessionId: 's', input: 'also this', busyPolicy: 'steer' });
    expect(steered).toMatchObject({ outcome: 'steered', intoRunId: first.runId });
    // The unconsumed steer goes back to the lane as a message of its own, and is purged too.
    expect(await client.stopSession('s')).toEqual({ cancelled: first.runId, purged: 2 });
    expect(await client.wait(first.runId)).toMatchObject({ state: 'cancelled' });
    expect(await client.wait(queued.runId)).toMatchObject({ state: 'cancelled', reason: 'purged' });
  });

  it('run.cancel cancels a running run; false for an unknown one', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const { runId } = await client.submit({ sessionId: 's', input: 'slow' });
    expect(await client.cancel(runId, 'changed my mind')).toBe(true);
    expect(await client.wait(runId)).toMatchObject({ state: 'cancelled', reason: 'changed my mind' });
    expect(await client.cancel('no-such-run')).toBe(false);
  });

  it('engine errors arrive as -32000 with the engine code: lane_full, duplicate_run_id, unknown_model, not_found', async () => {
    const client = await (
      await harness({ engine: { ...scripted, config: { execution: { wait_lane_capacity: 1 } } } })
    ).client();
    const running = await client.submit({ sessionId: 's', input: 'slow', runId: 'r-1' });
    await client.submit({ sessionId: 's', input: 'one', busyPolicy: 'queue' });
    const full = await expectClientError(
      client.submit({ sessionId: 's', input: 'two', busyPolicy: 'queue' }),
      RpcErrorCode.EngineError,
      'lane_full',
    );
    expect(full.message).toContain('wait_lane_capacity');
    await expectClientError(
      client.submit({ sessionId: 'other', input: 'x', runId: 'r-1' }),
      RpcErrorCode.EngineError,
      'duplicate_run_id',
    );
    await expectClientError(
      client.submit({ sessionId: 'other', input: 'x', model: 'nope' }),
      RpcErrorCode.EngineError,
      'unknown_model',
    );
    await expectClientError(client.wait('no-such-run'), RpcErrorCode.EngineError, 'not_found');
    await expectClientError(client.get('no-such-run'), RpcErrorCode.EngineError, 'not_found');
    await client.cancel(running.runId);
  });

  it('an invalid RunRequest is -32602 with the zod issues, and nothing is submitted', async () => {
    const h = await harness({ engine: scripted });
    const client = await h.client();
    const error = await expectClientError(
      client.submit({ sessionId: '', input: 'x', timeoutMs: -5 }),
      RpcErrorCode.InvalidParams,
      'invalid_request',
    );
    const issues = (error.data as { issues: { path: string }[] }).issues.map((i) => i.path);
    expect(issues).toEqual(expect.arrayContaining(['sessionId', 'timeoutMs']));
    const relative = await expectClientError(
      client.submit({ sessionId: 's', input: 'x', workspace: 'relative/dir' }),
      RpcErrorCode.InvalidParams,
      'invalid_request',
    );
    expect(relative.data).toMatchObject({ issues: [{ path: 'workspace' }] });
    expect(h.engine.snapshot().sessions).toEqual([]);
  });
});

describe('engine-wide methods', () => {
  it('engine.snapshot shows what runs', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const { runId } = await client.submit({ sessionId: 's', input: 'slow' });
    const snapshot = await client.snapshot();
    expect(snapshot).toMatchObject({
      global: { inUse: 1, max: 8 },
      perAgent: { main: { inUse: 1, max: 3 } },
      waiting: 0,
      running: [runId],
    });
    expect(snapshot.sessions).toEqual([{ sessionId: 's', activeRunId: runId, laneDepth: 0, lane: [] }]);
    await client.cancel(runId);
  });

  it('config.update applies hot keys, names the ones that need a restart, and rejects bad ones with -32602', async () => {
    const h = await harness({ engine: scripted });
    const client = await h.client();
    expect(await client.updateConfig({ execution: { max_runs_global: 2 }, gateway: { port: 9999 } })).toEqual({
      applied: ['execution.max_runs_global'],
      restartRequired: ['gateway.port'],
    });
    expect((await client.snapshot()).global.max).toBe(2);
    const bad = await expectClientError(
      client.updateConfig({ execution: { max_runs_global: 0 } }),
      RpcErrorCode.InvalidParams,
      'invalid_config',
    );
    expect(bad.data).toMatchObject({ issues: [{ path: 'execution.max_runs_global' }] });
    expect(h.engine.currentConfig().execution.max_runs_global).toBe(2);
  });
});

describe('subscriptions', () => {
  it('events.subscribe by run, from seq 0, replays the whole log; events.unsubscribe ends it', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const { runId } = await client.submit({ sessionId: 's', input: 'hi' });
    await client.wait(runId);
    const subscription = client.subscribe({ runId, fromSeq: 0 });
    const seen: number[] = [];
    for await (const event of subscription) {
      seen.push(event.seq);
      if (event.type === 'run.completed') break;
    }
    expect(seen).toEqual((await client.history(runId)).map((e) => e.seq));
    expect(subscription.lastSeq).toBe(seen.at(-1));
  });

  it('events of all runs include the engine-wide ones', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const all = client.subscribe();
    await all.ready;
    const { runId } = await client.submit({ sessionId: 's', input: 'hi' });
    const types: string[] = [];
    for await (const event of all) {
      types.push(event.type);
      if (event.type === 'run.completed' && 'runId' in event && event.runId === runId) break;
    }
    expect(types).toContain('engine.running');
    expect(types).toContain('run.started');
  });

  it('a failed subscribe ends the iteration with the error', async () => {
    const client = await (await harness()).client();
    const subscription = client.subscribe({ fromSeq: 3 });
    await expect(subscription.ready).rejects.toMatchObject({ code: RpcErrorCode.InvalidParams });
    await expect(async () => {
      for await (const _event of subscription) void _event;
    }).rejects.toMatchObject({ code: RpcErrorCode.InvalidParams });
  });

  it('inspect.subscribe streams JSON-safe inspection events of every actor', async () => {
    // One tool call, so the run has a child (its batch) to show.
    const noop = defineTool({
      name: 'noop',
      description: 'Does nothing.',
      input: z.object({}),
      execute: async () => 'done',
    });
    const model = scriptedModel((ctx) =>
      ctx.turn === 0 ? { toolCalls: [{ id: 'c1', name: 'noop', args: {} }] } : { text: 'ok' },
    );
    const client = await (await harness({ engine: { models: { scripted: model }, tools: [noop] } })).client();
    const inspect = client.inspect();
    await inspect.ready;
    const { runId } = await client.submit({ sessionId: 's', input: 'hi' });
    const events: SerializedInspectionEvent[] = [];
    for await (const event of inspect) {
      events.push(event);
      if (event.actorId === `run:${runId}` && event.snapshot?.status === 'done') break;
    }
    const ofRun = events.filter((e) => e.actorId === `run:${runId}`);
    expect(ofRun[0]).toMatchObject({ type: '@xstate.actor', rootId: `run:${runId}`, machineId: 'run' });
    const values = ofRun.filter((e) => e.snapshot?.value !== undefined).map((e) => JSON.stringify(e.snapshot!.value));
    expect(values.some((v) => v.includes('thinking'))).toBe(true);
    expect(ofRun.some((e) => e.type === '@xstate.microstep' && (e.transitions?.length ?? 0) > 0)).toBe(true);
    expect(ofRun.find((e) => e.snapshot?.context)?.snapshot?.context).toMatchObject({ runId, sessionId: 's' });
    expect(events.some((e) => e.actorId === 'session:s' && e.machineId === 'session')).toBe(true);
    const child = events.find((e) => e.parentId === `run:${runId}`);
    expect(child?.actorId.startsWith(`run:${runId}/`)).toBe(true);
    inspect.close();
  });
});

describe('approvals over the gateway', () => {
  const launched: string[] = [];
  const launch = defineTool({
    name: 'launch',
    description: 'Launches something; a person must confirm.',
    input: z.object({ target: z.string() }),
    requiresConfirmation: true,
    execute: async ({ target }) => {
      launched.push(target);
      return `launched ${target}`;
    },
  });
  const launchingModel = scriptedModel([
    { toolCalls: [{ name: 'launch', args: { target: 'rocket' }, id: 'call-1' }] },
    { text: 'over and out' },
  ]);

  it.each([
    ['allow_once', true],
    ['deny', false],
  ] as const)(
    'approval.requested reaches every connection; approval.respond %s decides the call',
    async (decision, runs) => {
      launched.length = 0;
      const h = await harness({ engine: { models: { scripted: launchingModel }, tools: [launch] } });
      const [asker, watcher] = [await h.client(), await h.client()];
      const seen = { asker: [] as unknown[], watcher: [] as unknown[] };
      watcher.onApprovalRequested((request) => seen.watcher.push(request));
      const answered = new Promise<boolean>((resolve) => {
        asker.onApprovalRequested((request) => {
          seen.asker.push(request);
          void asker.respondApproval(request.approvalId, decision).then(resolve);
        });
      });
      const { runId } = await asker.submit({ sessionId: 's', input: 'launch it' });
      expect(await answered).toBe(true);
      expect(await asker.wait(runId)).toMatchObject({ state: 'completed' });
      expect(launched).toEqual(runs ? ['rocket'] : []);
      const request = seen.asker[0] as { approvalId: string };
      expect(request).toMatchObject({
        approvalId: expect.any(String),
        runId,
        callId: 'call-1',
        action: expect.anything(),
      });
      expect(seen.watcher).toEqual(seen.asker);
      const history = await asker.history(runId);
      expect(history.find((e) => e.type === 'approval.resolved')).toMatchObject({
        approvalId: request.approvalId,
        decision,
      });
      // Answered once; a second answer changes nothing.
      expect(await asker.respondApproval(request.approvalId, 'allow_once')).toBe(false);
    },
  );

  it('approval.respond answers ok: false for an approval nobody asked for, -32602 for a decision that is not one', async () => {
    const client = await (await harness({ engine: scripted })).client();
    expect(await client.respondApproval('no-such-approval', 'allow_once')).toBe(false);
    await expectClientError(
      client.call('approval.respond', { approvalId: 'a', decision: 'maybe' as 'deny' }),
      RpcErrorCode.InvalidParams,
    );
  });
});

describe('notifications and batches', () => {
  it("batch: each call's outcome in order, errors as ClientError values, nothing for a notification", async () => {
    const h = await harness({ engine: scripted });
    const client = await h.client();
    const [submitted, missing, notified, snapshot] = await client.batch([
      { method: 'run.submit', params: { sessionId: 'b', input: 'hi' } },
      { method: 'run.get', params: { runId: 'no-such-run' } },
      { method: 'run.submit', params: { sessionId: 'b2', input: 'quietly', runId: 'quiet' }, notification: true },
      { method: 'engine.snapshot', params: {} },
    ]);
    if (!submitted.ok) throw submitted.error;
    expect(await client.wait(submitted.result.runId)).toMatchObject({ state: 'completed', output: 'answer to hi' });
    expect(missing.ok ? missing.result : missing.error).toBeInstanceOf(ClientError);
    expect(!missing.ok && missing.error.engineCode).toBe('not_found');
    expect(notified).toBeUndefined();
    expect(snapshot).toMatchObject({ ok: true, result: { global: expect.any(Object) } });
    await until(() => h.engine.status('quiet')?.state === 'completed', 'the notified run completes');
  });

  it('notify runs a method and nothing answers it: a run cancelled by notification', async () => {
    const client = await (await harness({ engine: scripted })).client();
    const { runId } = await client.submit({ sessionId: 's', input: 'slow' });
    client.notify('run.cancel', { runId, reason: 'told, not asked' });
    client.notify('run.get', { runId: 'no-such-run' });
    expect(await client.wait(runId)).toMatchObject({ state: 'cancelled', reason: 'told, not asked' });
  });

  it('a batch longer than the gateway takes ends each of its calls with -32600 batch_too_large, and runs none', async () => {
    const h = await harness({ engine: scripted, gateway: { maxBatchRequests: 2 } });
    const client = await h.client();
    const outcomes = await client.batch([
      { method: 'run.submit', params: { sessionId: 'too-many', input: 'one' } },
      { method: 'run.submit', params: { sessionId: 'too-many', input: 'two' } },
      { method: 'engine.snapshot', params: {} },
    ]);
    for (const outcome of outcomes) {
      expect(outcome.ok).toBe(false);
      if (!outcome.ok)
        expect([outcome.error.code, outcome.error.engineCode]).toEqual([
          RpcErrorCode.InvalidRequest,
          'batch_too_large',
        ]);
    }
    expect(h.engine.snapshot().sessions).toEqual([]);
  });

  it('an empty batch resolves at once; calls of a batch still waiting when the connection closes end with CONNECTION_CLOSED', async () => {
    const h = await harness({ engine: scripted });
    const client = await h.client();
    expect(await client.batch([])).toEqual([]);
    const { runId } = await client.submit({ sessionId: 's', input: 'slow' });
    const pending = client.batch([
      { method: 'run.wait', params: { runId } },
      { method: 'engine.snapshot', params: {} },
    ]);
    await h.gateway.close();
    const [waited, snapshot] = await pending;
    expect(waited).toMatchObject({ ok: false, error: { code: CONNECTION_CLOSED } });
    expect(snapshot).toMatchObject({ ok: false, error: { code: CONNECTION_CLOSED } });
    await expect(client.batch([{ method: 'engine.snapshot', params: {} }])).rejects.toMatchObject({
      code: CONNECTION_CLOSED,
    });
  });
});

describe('the connection closing', () => {
  it('rejects pending calls and fails open subscriptions with CONNECTION_CLOSED (close code 1001 on shutdown)', async () => {
    const h = await harness({ engine: scripted });
    const client = await h.client();
    const { runId } = await client.submit({ sessionId: 's', input: 'slow' });
    const waiting = expectClientError(client.wait(runId), CONNECTION_CLOSED);
    const subscription = client.subscribe({ runId, fromSeq: 0 });
    await subscription.ready;
    const iterating = expect(
      (async () => {
        for await (const _event of subscription) void _event;
      })(),
    ).rejects.toMatchObject({ code: CONNECTION_CLOSED });
    await h.gateway.close();
    expect((await waiting).data).toMatchObject({ closeCode: 1001 });
    await iterating;
    expect(await client.closed).toMatchObject({ code: 1001 });
    await expectClientError(client.snapshot(), CONNECTION_CLOSED);
  });

  it('after stopAdmitting, run.submit is refused with engine code closed; other methods still answer', async () => {
    const h = await harness({ engine: scripted });
    const client = await h.client();
    h.gateway.stopAdmitting();
    await expectClientError(client.submit({ sessionId: 's', input: 'x' }), RpcErrorCode.EngineError, 'closed');
    expect(await client.snapshot()).toMatchObject({ running: [] });
  });
});

describe('connect', () => {
  it('works with a standard WebSocket constructor (token in ?token=, as a browser does)', async () => {
    const h = await harness({ engine: scripted });
    const seen: string[] = [];
    class BrowserLikeWebSocket extends WebSocket {
      constructor(url: string) {
        seen.push(url);
        super(url);
      }
    }
    const client = await connect(h.gateway.url, {
      token: h.gateway.token,
      WebSocket: BrowserLikeWebSocket as unknown as new (url: string) => WebSocketLike,
    });
    try {
      expect(seen[0]).toContain(`token=${encodeURIComponent(h.gateway.token)}`);
      const { runId } = await client.submit({ sessionId: 's', input: 'hi' });
      expect(await client.wait(runId)).toMatchObject({ state: 'completed' });
    } finally {
      await client.close();
    }
  });

  it('fails with CONNECTION_CLOSED when nothing listens', async () => {
    await expectClientError(connect('ws://127.0.0.1:1', { token: 'x' }), CONNECTION_CLOSED);
  });
});
