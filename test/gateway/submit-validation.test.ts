/*
 * run.submit is validated once (issue 26.7): the gateway parses the params with RunRequestSchema
 * and the engine's admission takes that result as it is; a library call to engine.submit is
 * parsed by admission. Counted on RunRequestSchema.safeParse, which only admission calls.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunRequestSchema } from '../../src/core/index.js';
import { RpcErrorCode } from '../../src/gateway/index.js';
import type { ClientError } from '../../src/client/index.js';
import { gatewayFixture } from './fixtures.js';

const harness = gatewayFixture();

afterEach(() => {
  vi.restoreAllMocks();
});

describe('run.submit is validated once', () => {
  it('through the gateway the engine does not parse the request again', async () => {
    const h = await harness();
    const client = await h.client();
    const parses = vi.spyOn(RunRequestSchema, 'safeParse');
    const submitted = await client.submit({ sessionId: 'once', input: 'hello', timeoutMs: 60_000 });
    expect(submitted.outcome).toBe('started');
    expect(parses).not.toHaveBeenCalled();
    // The admitted run carries what the gateway parsed.
    expect(h.engine.status(submitted.runId)).toMatchObject({ sessionId: 'once' });
  });

  it('an invalid request is answered by the gateway, with the issues, and never reaches the engine', async () => {
    const h = await harness();
    const client = await h.client();
    const parses = vi.spyOn(RunRequestSchema, 'safeParse');
    const error = (await client.submit({ sessionId: 's', input: 'x', timeoutMs: -5 }).catch((e: unknown) => e)) as
      ClientError | undefined;
    expect(error).toMatchObject({ code: RpcErrorCode.InvalidParams, data: { code: 'invalid_request' } });
    expect((error!.data as { issues: { path: string }[] }).issues.map((i) => i.path)).toEqual(['timeoutMs']);
    expect(parses).not.toHaveBeenCalled();
    expect(h.engine.snapshot().sessions).toEqual([]);
  });

  it('a library call is parsed once, by admission', async () => {
    const h = await harness();
    const parses = vi.spyOn(RunRequestSchema, 'safeParse');
    await h.engine.submit({ sessionId: 'library', input: 'hello' });
    expect(parses).toHaveBeenCalledTimes(1);
  });
});
