/*
 * Validation messages say what they got (issue 26.7): a run request refused by the engine or by
 * the gateway, and any method's params, name the value next to what was expected.
 */
import { describe, expect, it } from 'vitest';
import type { ClientError } from '../../src/client/index.js';
import { RpcErrorCode } from '../../src/gateway/index.js';
import { gatewayFixture, request } from './fixtures.js';

const harness = gatewayFixture();

describe('validation messages say what they got', () => {
  it('engine.submit: each issue names the value', async () => {
    const { engine } = await harness();
    const refusal = await engine
      .submit({ sessionId: 's', input: 'x', timeoutMs: -5, busyPolicy: 'sometimes' as 'queue' })
      .catch((e: unknown) => e as Error);
    expect((refusal as Error).message).toBe(
      'invalid run request: timeoutMs: expected > 0, got -5; busyPolicy: expected one of "steer" | "interrupt" | ' +
        '"queue" | "collect" | "reject" | "rollback", got "sometimes"',
    );
    const relative = await engine.submit({ sessionId: 's', input: 'x', workspace: 'rel/dir' }).catch((e: unknown) => e);
    expect((relative as Error).message).toBe('invalid run request: workspace: must be an absolute path, got "rel/dir"');
  });

  it('run.submit through the gateway: the issues name the values', async () => {
    const client = await (await harness()).client();
    const error = (await client
      .submit({ sessionId: 'x'.repeat(501), input: 'x', maxIterations: 'abc' as unknown as number })
      .catch((e: unknown) => e)) as ClientError;
    expect(error.code).toBe(RpcErrorCode.InvalidParams);
    expect((error.data as { issues: unknown[] }).issues).toEqual([
      { path: 'sessionId', message: 'expected at most 500 characters, got a string of 501 characters' },
      { path: 'maxIterations', message: 'expected a number, got "abc"' },
    ]);
  });

  it("another method's params: the issue names the value", async () => {
    const ws = await (await harness()).raw();
    const answer = await request(ws, 'run.wait', { runId: 7 });
    expect(answer['error']).toMatchObject({
      code: RpcErrorCode.InvalidParams,
      data: { issues: [{ path: 'runId', message: 'expected a string, got 7' }] },
    });
  });
});
