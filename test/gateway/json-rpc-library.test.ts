/*
 * The gateway through a JSON-RPC 2.0 peer we did not write (the `json-rpc-2.0` package from
 * npm) over a plain ws socket: its requests, its errors, its notifications and its batches
 * are understood as the spec says, and the gateway's own notifications reach its server side.
 */
import {
  createJSONRPCNotification,
  createJSONRPCRequest,
  JSONRPCClient,
  JSONRPCErrorException,
  JSONRPCServer,
  JSONRPCServerAndClient,
} from 'json-rpc-2.0';
import { describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { RpcErrorCode } from '../../src/gateway/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { until } from '../support/eventually.js';
import { gatewayFixture, type GatewayHarness } from './fixtures.js';

const harness = gatewayFixture();
const scripted = { engine: { models: { scripted: scriptedModel((ctx) => ({ text: `answer to ${ctx.input}` })) } } };

interface LibraryPeer {
  peer: JSONRPCServerAndClient;
  /** Every frame the gateway sent, parsed. */
  frames: unknown[];
  /** The params of every `event` notification the library's server side received. */
  events: { subscriptionId: string; event: { type: string; runId: string } }[];
}

async function libraryPeer(h: GatewayHarness): Promise<LibraryPeer> {
  const ws: WebSocket = await h.raw();
  const peer = new JSONRPCServerAndClient(
    new JSONRPCServer(),
    new JSONRPCClient((payload) => ws.send(JSON.stringify(payload))),
  );
  const frames: unknown[] = [];
  const events: LibraryPeer['events'] = [];
  peer.addMethod('event', (params: LibraryPeer['events'][number]) => void events.push(params));
  ws.on('message', (data) => {
    const frame: unknown = JSON.parse(String(data));
    frames.push(frame);
    void peer.receiveAndSend(frame);
  });
  ws.once('close', () => peer.rejectAllPendingRequests('the connection closed'));
  return { peer, frames, events };
}

async function rejection(promise: PromiseLike<unknown>): Promise<JSONRPCErrorException> {
  const error = await Promise.resolve(promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JSONRPCErrorException);
  return error as JSONRPCErrorException;
}

describe('a third-party JSON-RPC 2.0 client (json-rpc-2.0)', () => {
  it("requests get results, and errors arrive as the library's error exceptions", async () => {
    const { peer } = await libraryPeer(await harness(scripted));
    const submitted = (await peer.request('run.submit', { sessionId: 'lib', input: 'hello' })) as {
      runId: string;
      outcome: string;
    };
    expect(submitted.outcome).toBe('started');
    expect(await peer.request('run.wait', { runId: submitted.runId })).toEqual({
      runId: submitted.runId,
      state: 'completed',
      output: 'answer to hello',
    });
    expect((await rejection(peer.request('no.such.method', {}))).code).toBe(RpcErrorCode.MethodNotFound);
    const invalid = await rejection(peer.request('run.submit', { sessionId: 42 }));
    expect([invalid.code, (invalid.data as { issues: unknown[] }).issues.length > 0]).toEqual([
      RpcErrorCode.InvalidParams,
      true,
    ]);
    const missing = await rejection(peer.request('run.get', { runId: 'no-such-run' }));
    expect([missing.code, (missing.data as { code: string }).code]).toEqual([RpcErrorCode.EngineError, 'not_found']);
  });

  it('notifications run and are never answered, an unknown or failing one included', async () => {
    const h = await harness(scripted);
    const { peer, frames } = await libraryPeer(h);
    peer.notify('run.submit', { sessionId: 'lib', input: 'fire and forget', runId: 'notified' });
    peer.notify('no.such.method', {});
    peer.notify('run.get', { runId: 'no-such-run' });
    await until(() => h.engine.status('notified')?.state === 'completed', 'the notified run completes');
    // A request after them: everything sent before it has been read by the time it is answered.
    await peer.request('engine.snapshot', {});
    expect(frames).toEqual([expect.objectContaining({ id: expect.any(Number), result: expect.any(Object) })]);
  });

  it('a batch gets one response per request, none for its notifications, matched by the library', async () => {
    const h = await harness(scripted);
    const { peer, frames } = await libraryPeer(h);
    const responses = await peer.requestAdvanced([
      createJSONRPCRequest('submit', 'run.submit', { sessionId: 'lib-batch', input: 'one' }),
      createJSONRPCNotification('run.submit', { sessionId: 'lib-batch-2', input: 'two', runId: 'batch-notified' }),
      createJSONRPCRequest('missing', 'run.get', { runId: 'no-such-run' }),
      createJSONRPCRequest('unknown', 'no.such.method', {}),
    ]);
    expect(responses.map((r) => r.id)).toEqual(['submit', 'missing', 'unknown']);
    expect(responses[0]).toMatchObject({ result: { outcome: 'started' } });
    expect(responses[1]).toMatchObject({ error: { code: RpcErrorCode.EngineError, data: { code: 'not_found' } } });
    expect(responses[2]).toMatchObject({ error: { code: RpcErrorCode.MethodNotFound } });
    expect(frames).toHaveLength(1);
    expect(Array.isArray(frames[0])).toBe(true);
    await until(() => h.engine.status('batch-notified')?.state === 'completed', 'the notification in the batch ran');
    // A batch of notifications only: the library expects nothing back, and nothing comes.
    expect(
      await peer.requestAdvanced([
        createJSONRPCNotification('engine.snapshot', {}),
        createJSONRPCNotification('no.such.method', {}),
      ]),
    ).toEqual([]);
    await peer.request('engine.snapshot', {});
    expect(frames).toHaveLength(2);
  });

  it("a subscription made in a batch delivers its events to the library's server side as notifications", async () => {
    const { peer, events } = await libraryPeer(await harness(scripted));
    const [subscribed, submitted] = await peer.requestAdvanced([
      createJSONRPCRequest(1, 'events.subscribe', { sessionId: 'lib-events', fromSeq: 0 }),
      createJSONRPCRequest(2, 'run.submit', { sessionId: 'lib-events', input: 'watch me' }),
    ]);
    const { subscriptionId } = subscribed!.result as { subscriptionId: string };
    const { runId } = submitted!.result as { runId: string };
    await until(() => events.some((e) => e.event.type === 'run.completed'), 'run.completed reaches the library');
    expect(events.every((e) => e.subscriptionId === subscriptionId && e.event.runId === runId)).toBe(true);
    expect(events[0]?.event.type).toBe('run.started');
  });
});
