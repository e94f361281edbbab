/*
 * events.subscribe replays from the store, then follows live events, with no gap and no
 * duplicate between the two; after the socket dies mid-stream, subscribing again with the
 * last seq seen continues exactly where the client stopped.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { z } from 'zod';
import { connect, type SwitchyardClient, type WebSocketLike } from '../../src/client/index.js';
import type { RunEvent } from '../../src/engine/index.js';
import { scriptedModel, type ScriptContext, type ScriptTurn } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { gatewayFixture, type GatewayHarness } from './fixtures.js';
import { until } from '../support/eventually.js';

const harness = gatewayFixture();

const tick = defineTool({
  name: 'tick',
  description: 'Returns at once.',
  input: z.object({ n: z.number() }),
  readOnly: true,
  execute: async ({ n }) => ({ n }),
});

/** "turns=N" makes N tool turns (two calls each), 5 ms apart, then an answer: a steady stream of events. */
function script(ctx: ScriptContext): ScriptTurn {
  const turns = Number(/turns=(\d+)/.exec(ctx.input)?.[1] ?? 0);
  if (ctx.turn < turns) {
    return {
      toolCalls: [
        { name: 'tick', args: { n: ctx.turn } },
        { name: 'tick', args: { n: -ctx.turn } },
      ],
      delayMs: 5,
    };
  }
  return { text: `done after ${turns}`, delayMs: 5 };
}

const engineOptions = { models: { scripted: scriptedModel(script) }, tools: [tick] };

/** A client whose socket the test can kill without a close handshake. */
async function killableClient(h: GatewayHarness): Promise<{ client: SwitchyardClient; kill(): void }> {
  let socket: WebSocket | undefined;
  class Captured extends WebSocket {
    constructor(url: string) {
      super(url);
      socket = this;
    }
  }
  const client = await connect(h.gateway.url, {
    token: h.gateway.token,
    WebSocket: Captured as unknown as new (url: string) => WebSocketLike,
  });
  return { client, kill: () => socket!.terminate() };
}

function expectGapless(seqs: number[], from = 1): void {
  expect(seqs).toEqual(seqs.map((_, i) => from + i));
}

describe('replay, then live', () => {
  it('a run subscription from seq 0 while the run is halfway: every event once, in order', async () => {
    const h = await harness({ engine: engineOptions });
    const client = await h.client();
    const { runId } = await client.submit({ sessionId: 's', input: 'turns=12' });
    await until(() => h.engine.status(runId)?.state === 'running', 'the run runs');
    await new Promise((resolve) => setTimeout(resolve, 30));
    const seqs: number[] = [];
    for await (const event of client.subscribe({ runId, fromSeq: 0 })) {
      seqs.push(event.seq);
      if (event.type === 'run.completed') break;
    }
    expectGapless(seqs);
    expect(seqs).toHaveLength((await client.history(runId)).length);
  });

  it('from a later seq: only what came after it', async () => {
    const h = await harness({ engine: engineOptions });
    const client = await h.client();
    const { runId } = await client.submit({ sessionId: 's', input: 'turns=3' });
    await client.wait(runId);
    const seqs: number[] = [];
    for await (const event of client.subscribe({ runId, fromSeq: 4 })) {
      seqs.push(event.seq);
      if (event.type === 'run.completed') break;
    }
    expectGapless(seqs, 5);
  });

  it('without fromSeq: live events only', async () => {
    const h = await harness({ engine: engineOptions });
    const client = await h.client();
    const first = await client.submit({ sessionId: 's', input: 'turns=0' });
    await client.wait(first.runId);
    const live = client.subscribe({ sessionId: 's' });
    await live.ready;
    const second = await client.submit({ sessionId: 's', input: 'turns=1' });
    const events: RunEvent[] = [];
    for await (const event of live) {
      events.push(event);
      if (event.type === 'run.completed') break;
    }
    expect(new Set(events.map((e) => e.runId))).toEqual(new Set([second.runId]));
  });
});

describe('resume after a reconnect', () => {
  it('a session stream killed mid-flight continues from lastSeq with no gap and no duplicate', async () => {
    const h = await harness({ engine: engineOptions });
    const submitter = await h.client();
    const runIds: string[] = [];
    for (let i = 0; i < 6; i++)
      runIds.push((await submitter.submit({ sessionId: 'chat', input: `turns=3 #${i}`, busyPolicy: 'queue' })).runId);

    const seen: RunEvent[] = [];
    const first = await killableClient(h);
    const subscription = first.client.subscribe({ sessionId: 'chat', fromSeq: 0 });
    for await (const event of subscription) {
      seen.push(event);
      if (seen.length === 25) break;
    }
    first.kill();
    await first.client.closed;
    const resumeFrom = subscription.lastSeq!;
    expect(resumeFrom).toBe(25);

    const second = await h.client();
    const lastRun = runIds.at(-1)!;
    for await (const event of second.subscribe({ sessionId: 'chat', fromSeq: resumeFrom })) {
      seen.push(event);
      if (event.type === 'run.completed' && event.runId === lastRun) break;
    }
    expectGapless(seen.map((e) => e.sessionSeq));
    for (const runId of runIds) {
      const ofRun = seen.filter((e) => e.runId === runId);
      expect(ofRun).toEqual(await second.history(runId));
    }
  });

  it('a run stream killed mid-flight continues from lastSeq, several times over', async () => {
    const h = await harness({ engine: engineOptions });
    const submitter = await h.client();
    const { runId } = await submitter.submit({ sessionId: 's', input: 'turns=20' });
    const seqs: number[] = [];
    let lastSeq = 0;
    let done = false;
    while (!done) {
      const { client, kill } = await killableClient(h);
      const subscription = client.subscribe({ runId, fromSeq: lastSeq });
      let taken = 0;
      for await (const event of subscription) {
        seqs.push(event.seq);
        if (event.type === 'run.completed') done = true;
        if (done || ++taken === 7) break;
      }
      lastSeq = subscription.lastSeq ?? lastSeq;
      kill();
      await client.closed;
    }
    expectGapless(seqs);
    expect(seqs.length).toBe((await submitter.history(runId)).length);
  });
});

describe('subscriptions are released', () => {
  it('on unsubscribe and when the connection closes', async () => {
    const h = await harness({ engine: engineOptions });
    const client = await h.client();
    const a = client.subscribe({ sessionId: 'x' });
    const b = client.subscribe();
    const c = client.inspect();
    await Promise.all([a.ready, b.ready, c.ready]);
    expect(h.gateway.stats().subscriptions).toBe(3);
    a.close();
    await until(() => h.gateway.stats().subscriptions === 2, 'unsubscribed');
    const { client: other, kill } = await killableClient(h);
    await other.subscribe({ sessionId: 'y' }).ready;
    expect(h.gateway.stats().subscriptions).toBe(3);
    kill();
    await until(() => h.gateway.stats().subscriptions === 2, 'released on close');
    await client.close();
    await until(() => h.gateway.stats().subscriptions === 0 && h.gateway.connections() === 0, 'all released');
  });
});
