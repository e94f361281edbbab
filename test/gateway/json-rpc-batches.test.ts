/*
 * Notifications and batches as JSON-RPC 2.0 says, spoken by hand over a raw socket: a
 * request without an id runs and is never answered (not even with an error); a batch is
 * answered with one array holding no answer for its notifications, and with nothing when
 * it holds only notifications; an empty batch is one invalid-request error; an element that
 * is not a request object gets an invalid-request error of its own. Handlers start in the
 * order of the batch, and the gateway's per-connection limits count a batch's elements.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { MethodParamsSchemas, RpcErrorCode } from '../../src/gateway/index.js';
import { scriptedModel, type ScriptContext, type ScriptTurn } from '../../src/model/index.js';
import { until } from '../support/eventually.js';
import { gatewayFixture, type GatewayHarness } from './fixtures.js';

const harness = gatewayFixture();
const METHODS = Object.keys(MethodParamsSchemas);

/** Answers at once, except that "slow" inputs take 30 s (the test stops them). */
function script(ctx: ScriptContext): ScriptTurn {
  if (ctx.input.startsWith('slow')) return { text: 'finally', delayMs: 30_000 };
  return { text: `answer to ${ctx.input}` };
}
const scripted = { engine: { models: { scripted: scriptedModel(script) } } };

type Frame = Record<string, unknown>;

/** A raw connection that keeps every frame it receives, in order. */
class Recorder {
  readonly frames: (Frame | Frame[])[] = [];
  private probes = 0;

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => this.frames.push(JSON.parse(String(data)) as Frame | Frame[]));
  }

  static async open(h: GatewayHarness): Promise<Recorder> {
    return new Recorder(await h.raw());
  }

  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** Every frame but the server's notifications (events, inspect, approvals). */
  get answers(): (Frame | Frame[])[] {
    return this.frames.filter((f) => Array.isArray(f) || !('method' in f));
  }

  /**
   * Sends a request and waits for its answer. Answers decided without a handler are sent as
   * soon as a frame is read, so those of the frames sent before come before the probe's.
   */
  async probe(method = 'engine.snapshot', params: unknown = {}): Promise<Frame> {
    const id = `probe-${++this.probes}`;
    this.send({ jsonrpc: '2.0', id, method, params });
    await until(() => this.frames.some((f) => !Array.isArray(f) && f['id'] === id), `the answer to ${id}`);
    return this.frames.find((f) => !Array.isArray(f) && f['id'] === id) as Frame;
  }

  /** The answers other than the probes'. */
  get unprompted(): (Frame | Frame[])[] {
    return this.answers.filter((f) => Array.isArray(f) || !String(f['id']).startsWith('probe-'));
  }

  async nextArray(): Promise<Frame[]> {
    await until(() => this.frames.some((f) => Array.isArray(f)), 'a batch answer');
    return this.frames.find((f) => Array.isArray(f)) as Frame[];
  }
}

const call = (id: string | number, method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method,
  ...(params !== undefined ? { params } : {}),
});
const notification = (method: string, params?: unknown) => ({
  jsonrpc: '2.0',
  method,
  ...(params !== undefined ? { params } : {}),
});

describe('notifications (no id) run and are never answered', () => {
  it('a notification runs its method; one that fails, has bad params or names no method gets nothing either', async () => {
    const h = await harness(scripted);
    const peer = await Recorder.open(h);
    peer.send(notification('run.submit', { sessionId: 'n', input: 'hi', runId: 'by-notification' }));
    peer.send(notification('run.get', { runId: 'no-such-run' }));
    peer.send(notification('run.wait', { runId: 42 }));
    peer.send(notification('no.such.method', { a: 1 }));
    peer.send({ jsonrpc: '2.0', method: 'run.submit', params: 'not structured' });
    await until(() => h.engine.status('by-notification')?.state === 'completed', 'the notified run completes');
    await peer.probe();
    expect(peer.unprompted).toEqual([
      // Not a notification: a request object needs structured params, with or without an id.
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: RpcErrorCode.InvalidRequest }) },
    ]);
  });

  it('whatever method and params a notification carries, nothing answers it', async () => {
    const peer = await Recorder.open(await harness(scripted));
    const anyMethod = fc.oneof(
      fc.constantFrom(...METHODS.filter((m) => m !== 'config.update')),
      fc.string({ minLength: 1, maxLength: 40 }),
    );
    const anyParams = fc.oneof(fc.constant({}), fc.object({ maxDepth: 1 }), fc.array(fc.jsonValue(), { maxLength: 3 }));
    await fc.assert(
      fc.asyncProperty(anyMethod, fc.option(anyParams, { nil: undefined }), async (method, params) => {
        peer.send(notification(method, params));
        await peer.probe();
        expect(peer.unprompted).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });
});

describe('batches', () => {
  it('are answered with one array, in the order of their requests, with results and errors', async () => {
    const peer = await Recorder.open(await harness(scripted));
    peer.send([
      call('a', 'engine.snapshot'),
      call('b', 'run.submit', { sessionId: 'batch', input: 'one', runId: 'r-b' }),
      call('c', 'run.get', { runId: 'no-such-run' }),
      call('d', 'no.such.method'),
      call('e', 'run.wait', { runId: 7 }),
    ]);
    const answer = await peer.nextArray();
    expect(answer.map((a) => a['id'])).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(answer[0]).toMatchObject({ jsonrpc: '2.0', result: { global: expect.any(Object) } });
    expect(answer[1]).toMatchObject({ result: { runId: 'r-b', outcome: 'started' } });
    expect(answer[2]).toMatchObject({ error: { code: RpcErrorCode.EngineError, data: { code: 'not_found' } } });
    expect(answer[3]).toMatchObject({ error: { code: RpcErrorCode.MethodNotFound } });
    expect(answer[4]).toMatchObject({
      error: { code: RpcErrorCode.InvalidParams, data: { issues: expect.any(Array) } },
    });
    await peer.probe();
    expect(peer.unprompted).toHaveLength(1);
  });

  it('run their notifications without answering them; a batch of notifications only gets no answer at all', async () => {
    const h = await harness(scripted);
    const peer = await Recorder.open(h);
    peer.send([
      notification('run.submit', { sessionId: 'quiet', input: 'one', runId: 'q1' }),
      notification('no.such.method'),
      notification('run.get', { runId: 'nope' }),
    ]);
    await until(() => h.engine.status('q1')?.state === 'completed', 'the first notified run completes');
    await peer.probe();
    expect(peer.unprompted).toEqual([]);
    peer.send([
      call(1, 'run.get', { runId: 'q1' }),
      notification('run.submit', { sessionId: 'quiet', input: 'two', runId: 'q2' }),
    ]);
    const answer = await peer.nextArray();
    expect(answer).toEqual([
      expect.objectContaining({ id: 1, result: expect.objectContaining({ runId: 'q1', state: 'completed' }) }),
    ]);
    await until(() => h.engine.status('q2')?.state === 'completed', 'the second notified run completes');
    await peer.probe();
    expect(peer.unprompted).toHaveLength(1);
  });

  it('an element that is not a request object gets an invalid-request error of its own (id null)', async () => {
    const peer = await Recorder.open(await harness());
    peer.send([1, 'x', null, true, [], {}, [call(9, 'engine.snapshot')], call(2, 'engine.snapshot')]);
    const answer = await peer.nextArray();
    expect(answer).toHaveLength(8);
    for (const element of answer.slice(0, 7))
      expect(element).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: RpcErrorCode.InvalidRequest } });
    expect(answer[7]).toMatchObject({ id: 2, result: expect.any(Object) });
  });

  it('an empty batch is one invalid-request error with id null, not an array', async () => {
    const peer = await Recorder.open(await harness());
    peer.send([]);
    await peer.probe();
    expect(peer.unprompted).toEqual([
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: RpcErrorCode.InvalidRequest }) },
    ]);
  });

  it('any mix of calls, notifications and non-requests is answered exactly for its calls and non-requests', async () => {
    const peer = await Recorder.open(await harness());
    let ids = 0;
    const element = fc.oneof(
      fc.constant(() => ({ frame: call(++ids, 'engine.snapshot'), expect: { code: undefined as number | undefined } })),
      fc.constant(() => ({ frame: call(++ids, 'no.such.method'), expect: { code: RpcErrorCode.MethodNotFound } })),
      fc.constant(() => ({
        frame: call(++ids, 'run.get', { runId: 1 }),
        expect: { code: RpcErrorCode.InvalidParams },
      })),
      fc.constant(() => ({ frame: notification('engine.snapshot'), expect: undefined })),
      fc.constant(() => ({ frame: notification('no.such.method'), expect: undefined })),
      fc
        .oneof(fc.integer(), fc.string(), fc.constant(null))
        .map((value) => () => ({ frame: value as unknown, expect: { code: RpcErrorCode.InvalidRequest } })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(element, { minLength: 1, maxLength: 12 }), async (makers) => {
        const batch = makers.map((make) => make());
        peer.frames.length = 0;
        peer.send(batch.map((b) => b.frame));
        await peer.probe();
        const expected = batch.filter((b) => b.expect !== undefined);
        if (expected.length === 0) {
          expect(peer.unprompted).toEqual([]);
          return;
        }
        expect(peer.unprompted).toHaveLength(1);
        const answer = peer.unprompted[0] as Frame[];
        expect(answer.map((a) => a['id'])).toEqual(
          expected.map((b) => (b.expect!.code === RpcErrorCode.InvalidRequest ? null : (b.frame as Frame)['id'])),
        );
        expect(answer.map((a) => (a['error'] as { code?: number } | undefined)?.code)).toEqual(
          expected.map((b) => b.expect!.code),
        );
      }),
      { numRuns: 60 },
    );
  });

  it('start their handlers in order: submits to a busy session are queued 1, 2, 3 as they stand in the batch', async () => {
    const h = await harness(scripted);
    const peer = await Recorder.open(h);
    expect((await peer.probe('run.submit', { sessionId: 'order', input: 'slow first' }))['result']).toMatchObject({
      outcome: 'started',
    });
    peer.send(
      ['a', 'b', 'c'].map((input, i) => call(i, 'run.submit', { sessionId: 'order', input, busyPolicy: 'queue' })),
    );
    const answer = await peer.nextArray();
    expect(answer.map((a) => [a['id'], (a['result'] as { position?: number }).position])).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ]);
    await h.engine.stopSession('order');
  });

  it('a subscription in a batch: its events follow the batch answer, and a replay from fromSeq misses none', async () => {
    const peer = await Recorder.open(await harness(scripted));
    peer.send([
      call(1, 'events.subscribe', { sessionId: 'watched', fromSeq: 0 }),
      call(2, 'run.submit', { sessionId: 'watched', input: 'hello' }),
    ]);
    const answer = await peer.nextArray();
    expect(answer.map((a) => a['result'])).toEqual([
      { subscriptionId: 'sub-1' },
      expect.objectContaining({ outcome: 'started' }),
    ]);
    const events = () =>
      peer.frames
        .filter((f): f is Frame => !Array.isArray(f) && f['method'] === 'event')
        .map((f) => (f['params'] as { event: { type: string; sessionSeq: number } }).event);
    await until(() => events().some((e) => e.type === 'run.completed'), 'the run.completed event');
    const firstEvent = peer.frames.findIndex((f) => !Array.isArray(f) && f['method'] === 'event');
    expect(firstEvent).toBeGreaterThan(peer.frames.indexOf(answer));
    expect(events().map((e) => e.sessionSeq)).toEqual(events().map((_, i) => i + 1));
  });

  it('count their elements against the connection limits: subscriptions, and the batch length', async () => {
    const h = await harness({ ...scripted, gateway: { maxSubscriptionsPerConnection: 2, maxBatchRequests: 4 } });
    const peer = await Recorder.open(h);
    peer.send([
      call(1, 'inspect.subscribe'),
      call(2, 'events.subscribe', {}),
      call(3, 'events.subscribe', { runId: 'r' }),
    ]);
    const subscribed = await peer.nextArray();
    expect(subscribed.map((a) => (a['error'] as { data?: { code?: string } } | undefined)?.data?.code)).toEqual([
      undefined,
      undefined,
      'too_many_subscriptions',
    ]);

    peer.frames.length = 0;
    peer.send([
      call('s', 'run.submit', { sessionId: 'long', input: 'x', runId: 'never' }),
      notification('run.submit', { sessionId: 'long', input: 'y', runId: 'never-either' }),
      call('t', 'engine.snapshot'),
      42,
      call('u', 'no.such.method'),
    ]);
    const refused = await peer.nextArray();
    expect(refused.map((a) => a['id'])).toEqual(['s', 't', null, 'u']);
    for (const element of refused) {
      expect(element).toMatchObject({
        error: { code: RpcErrorCode.InvalidRequest, data: { code: 'batch_too_large', max: 4 } },
      });
    }
    expect(h.engine.status('never')).toBeUndefined();
    expect(h.engine.status('never-either')).toBeUndefined();
  });
});
