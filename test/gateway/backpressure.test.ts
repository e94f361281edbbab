/*
 * A client that stops reading is closed with 4008 ("slow consumer: resubscribe with
 * fromSeq") and its subscriptions released, while the bytes the server holds for it stay
 * under the limit plus one frame; a client that reads normally gets every event.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connect, type WebSocketLike } from '../../src/client/index.js';
import { isTerminalEvent } from '../../src/engine/index.js';
import { GatewayCloseCode } from '../../src/gateway/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { gatewayFixture } from './fixtures.js';
import { until } from '../support/eventually.js';

const harness = gatewayFixture();

const LIMIT = 1024 * 1024;
const TEXT = 'x'.repeat(64 * 1024);
/** Each run logs the text twice (model.delta and model.message): ~128 KiB of events per run. */
const RUNS = 240;

describe('a slow consumer', () => {
  it('is closed with 4008 while server memory stays bounded; a normal client gets everything', async () => {
    const h = await harness({
      engine: { models: { scripted: scriptedModel([{ text: TEXT }]) }, config: { execution: { max_runs_global: 8 } } },
      // The drain timeout is also how long the normal client (in this same, possibly loaded,
      // process) may take to read a quarter of the limit: room for that, not a race.
      gateway: { sendBufferLimitBytes: LIMIT, drainTimeoutMs: 3_000, closeTimeoutMs: 30_000 },
    });

    let slowSocket: WebSocket | undefined;
    class Captured extends WebSocket {
      constructor(url: string) {
        super(url);
        slowSocket = this;
      }
    }
    const slow = await connect(h.gateway.url, {
      token: h.gateway.token,
      WebSocket: Captured as unknown as new (url: string) => WebSocketLike,
    });
    const slowEvents = slow.subscribe();
    await slowEvents.ready;
    const slowIterating = (async () => {
      for await (const _event of slowEvents) void _event;
    })().catch((error: unknown) => error);
    // Stop reading: the kernel buffers fill, then the server's.
    slowSocket!.pause();

    const normal = await h.client();
    const normalEvents = normal.subscribe();
    await normalEvents.ready;
    let normalBytes = 0;
    const terminals = new Set<string>();
    let sawEveryRun = () => {};
    const everyRunSeen = new Promise<void>((resolve) => (sawEveryRun = resolve));
    // The normal client keeps its subscription open until the test is done with it: closing it
    // early (when it has read everything before the slow client is dropped) would race the
    // subscription count below.
    const normalIterating = (async () => {
      for await (const event of normalEvents) {
        normalBytes += JSON.stringify(event).length;
        if ('runId' in event && isTerminalEvent(event)) terminals.add(event.runId);
        if (terminals.size === RUNS) sawEveryRun();
      }
    })();

    const submitter = await h.client();
    // One after another, at the pace of a busy chat: fast for a reader, far too much for a stalled one.
    for (let i = 0; i < RUNS; i++) await submitter.submit({ sessionId: `s${i}`, input: `run ${i}` });
    await until(() => h.gateway.connections() === 2, 'the slow client is dropped', 20_000);
    // The slow client's subscription is released; the normal client's lives on.
    expect(h.gateway.stats().subscriptions).toBe(1);

    // Reading again, the slow client finds the close frame behind what was already sent.
    slowSocket!.resume();
    expect(await slow.closed).toEqual({
      code: GatewayCloseCode.SlowConsumer,
      reason: 'slow consumer: resubscribe with fromSeq',
    });
    expect(await slowIterating).toMatchObject({ data: { closeCode: 4008 } });
    await everyRunSeen;
    normalEvents.close();
    await normalIterating;

    expect(terminals.size).toBe(RUNS);
    // The normal client received far more than the limit (and than any kernel buffer).
    expect(normalBytes).toBeGreaterThan(20 * LIMIT);
    const stats = h.gateway.stats();
    expect(stats.maxPendingBytes).toBeLessThanOrEqual(LIMIT + TEXT.length + 1024);
    expect(stats.connections).toBe(2);
    // Counted once, when its socket has closed; the normal client is not a slow consumer.
    await until(() => h.gateway.stats().slowConsumersDropped === 1, 'the drop is counted');

    // The normal client and the server go on.
    const { runId } = await normal.submit({ sessionId: 'after', input: 'still fine?' });
    expect(await normal.wait(runId)).toMatchObject({ state: 'completed' });
  });

  it('is dropped at the limit when it sends requests without reading the answers', async () => {
    const h = await harness({
      engine: { models: { scripted: scriptedModel([{ text: TEXT }]) } },
      gateway: { sendBufferLimitBytes: 64 * 1024, closeTimeoutMs: 30_000 },
    });
    const { runId } = await h.engine.submit({ sessionId: 's', input: 'big' });
    await h.engine.wait(runId);
    const ws = await h.raw();
    ws.pause();
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    // Each answer (the run's history) is bigger than the limit: it goes out only when nothing waits.
    const frame = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'run.history', params: { runId } });
    for (let i = 0; i < 10_000 && h.gateway.connections() > 0; i++) {
      ws.send(frame);
      if (i % 20 === 19) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await until(() => h.gateway.connections() === 0, 'dropped');
    const historyBytes = JSON.stringify(await h.engine.history(runId)).length;
    expect(h.gateway.stats().maxPendingBytes).toBeLessThanOrEqual(historyBytes + 1024);
    ws.resume();
    expect(await closed).toBe(4008);
    await until(() => h.gateway.stats().slowConsumersDropped === 1, 'the drop is counted');
  });
});
