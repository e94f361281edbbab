/*
 * A retried submit through the gateway (issue 27.7; docs/runs.md, "A retried submit"): a client
 * whose connection died resubmits on a new connection with the same runId and gets the first
 * answer; a different request with that runId is refused with duplicate_run_id.
 */
import { describe, expect, it } from 'vitest';
import { heldModel } from '../engine/fixtures.js';
import { until } from '../support/eventually.js';
import { closeRaw, gatewayFixture, request } from './fixtures.js';

const newHarness = gatewayFixture();

describe('run.submit retried with the same runId', () => {
  it('answers the same request with its first result on a new connection, refuses a different one', async () => {
    const model = heldModel();
    const harness = await newHarness({ engine: { models: { scripted: model.provider } } });
    const params = { runId: 'r-retry', sessionId: 's', input: 'hello' };
    const first = await harness.raw();
    const answer = await request(first, 'run.submit', params);
    expect(answer['result']).toEqual({ runId: 'r-retry', sessionId: 's', outcome: 'started' });
    // The connection dies before the client read its answer; it resubmits on a new one.
    await closeRaw(first);
    const second = await harness.raw();
    const retried = await request(second, 'run.submit', { input: 'hello', sessionId: 's', runId: 'r-retry' });
    expect(retried['result']).toEqual(answer['result']);
    const different = await request(second, 'run.submit', { ...params, input: 'goodbye' });
    expect(different['error']).toMatchObject({ data: { code: 'duplicate_run_id' } });
    await until(() => model.isThinking('r-retry'), 'the run thinking');
    model.answer('r-retry');
    await harness.engine.wait('r-retry');
    expect(model.calls).toHaveLength(1);
  });
});
