/*
 * The lane methods end to end (lane.list, lane.withdraw, lane.move, lane.promote, lane.edit):
 * through the typed client and the gateway against a real engine; a session subscriber sees each
 * change as a `lane.changed` event; an operation on a message that no longer waits is engine
 * error `not_waiting` with the message's state in details.
 */
import { describe, expect, it } from 'vitest';
import { ClientError } from '../../src/client/index.js';
import type { ScriptContext, ScriptTurn } from '../../src/model/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { RpcErrorCode } from '../../src/gateway/index.js';
import { until } from '../support/eventually.js';
import { gatewayFixture } from '../gateway/fixtures.js';

const harness = gatewayFixture();

function script(ctx: ScriptContext): ScriptTurn {
  if (ctx.input.startsWith('slow')) return { text: 'finally', delayMs: 30_000 };
  return { text: `answer to ${ctx.input}` };
}

describe('lane methods', () => {
  it('list, move, edit, promote and withdraw through the client, each seen by a session subscriber', async () => {
    const client = await (await harness({ engine: { models: { scripted: scriptedModel(script) } } })).client();
    const running = await client.submit({ sessionId: 's', input: 'slow run', runId: 'r' });
    for (const id of ['a', 'b', 'c'])
      await client.submit({ sessionId: 's', input: `message ${id}`, runId: id, busyPolicy: 'queue' });
    const subscription = client.subscribe({ sessionId: 's' });
    const seen: string[] = [];
    void (async () => {
      for await (const event of subscription)
        if (event.type === 'lane.changed') seen.push(`${event.runId}:${event.change}`);
    })();

    const listing = await client.lane('s');
    expect(listing).toMatchObject({ sessionId: 's', activeRunId: running.runId });
    expect(listing.entries.map((e) => [e.runId, e.position, e.busyPolicy])).toEqual([
      ['a', 1, 'queue'],
      ['b', 2, 'queue'],
      ['c', 3, 'queue'],
    ]);
    expect(await client.moveInLane('c', 1)).toMatchObject({ change: 'moved', lane: ['c', 'a', 'b'] });
    expect(await client.editWaiting('a', 'new words')).toMatchObject({ change: 'edited' });
    expect(await client.promoteToSteer('b')).toMatchObject({ change: 'promoted', intoRunId: 'r', lane: ['c', 'a'] });
    expect(await client.withdraw('c')).toMatchObject({ change: 'withdrawn', lane: ['a'] });
    expect(await client.wait('c')).toMatchObject({ state: 'cancelled', reason: 'withdrawn' });
    await until(() => seen.length === 4, 'the subscriber saw four lane changes');
    expect(seen).toEqual(['c:moved', 'a:edited', 'b:promoted', 'c:withdrawn']);
    expect((await client.snapshot()).sessions).toEqual([
      { sessionId: 's', activeRunId: 'r', laneDepth: 1, lane: ['a'] },
    ]);

    const error = await client.withdraw('c').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toMatchObject({ code: RpcErrorCode.EngineError, engineCode: 'not_waiting' });
    expect((error as ClientError).data).toMatchObject({ details: { runId: 'c', state: 'cancelled' } });
    await expect(client.withdraw('r')).rejects.toMatchObject({ engineCode: 'not_waiting' });
    await expect(client.call('lane.move', { runId: 'a', position: 0 })).rejects.toMatchObject({
      code: RpcErrorCode.InvalidParams,
    });
    subscription.close();
    await client.stopSession('s');
  });
});
