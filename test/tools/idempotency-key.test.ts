/*
 * The idempotency key (docs/durable-runs.md): a pure function of the run, the turn and the
 * call's position, handed to the tool as ctx.idempotencyKey; the model's call id plays no part.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { planBatch } from '../../src/harness/batch-plan.js';
import { idempotencyKeyOf } from '../../src/tools/idempotency-key.js';
import { defineTool, type ToolContext } from '../../src/tools/tool.js';
import { ToolService } from '../../src/tools/tool-service.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-key-');

describe('idempotencyKeyOf', () => {
  it('is stable, shaped sy-<32 hex>, and differs when any part differs', () => {
    const key = idempotencyKeyOf('run-1', 2, 0);
    expect(key).toMatch(/^sy-[0-9a-f]{32}$/);
    expect(idempotencyKeyOf('run-1', 2, 0)).toBe(key);
    const others = [
      idempotencyKeyOf('run-2', 2, 0),
      idempotencyKeyOf('run-1', 3, 0),
      idempotencyKeyOf('run-1', 2, 1),
      idempotencyKeyOf('run-1', 0, 2),
    ];
    expect(new Set([key, ...others]).size).toBe(5);
  });

  it('keeps its parts apart whatever the run id holds', () => {
    expect(idempotencyKeyOf('a', 12, 3)).not.toBe(idempotencyKeyOf('a', 1, 23));
    expect(idempotencyKeyOf('a,1', 2, 3)).not.toBe(idempotencyKeyOf('a', 12, 3));
  });

  it('refuses a turn or index that is not a whole number >= 0', () => {
    expect(() => idempotencyKeyOf('r', -1, 0)).toThrow(RangeError);
    expect(() => idempotencyKeyOf('r', 0, 1.5)).toThrow(RangeError);
    expect(() => idempotencyKeyOf('r', Number.NaN, 0)).toThrow(RangeError);
  });
});

describe('ctx.idempotencyKey', () => {
  it('each call of a batch gets the key of its position; new model call ids do not change it', async () => {
    const seen: ToolContext[] = [];
    const echo = defineTool({
      name: 'echo',
      description: 'echo',
      input: z.object({ n: z.number() }),
      readOnly: true,
      execute: async (_input, ctx) => {
        seen.push(ctx);
        return 'ok';
      },
    });
    const workspace = await tempDir();
    const service = new ToolService({
      tools: new Map([['echo', echo]]),
      runId: 'run-7',
      sessionId: 's',
      workspace,
      sandbox: { backend: 'none', network: false, maxOutputBytes: 1000, commandTimeoutMs: 1000 },
      unattended: true,
      warn: () => {},
    });
    const plan = (ids: string[]) =>
      planBatch({
        runId: 'run-7',
        turn: 4,
        toolCalls: ids.map((id, n) => ({ id, name: 'echo', args: { n } })),
        service,
        concurrency: 4,
        scheduling: 'groups',
        steerPending: false,
        callTimeoutMs: 1000,
      });
    for (const ids of [
      ['call_a', 'call_b', 'call_c'],
      ['retry_x', 'retry_y', 'retry_z'],
    ]) {
      const batch = plan(ids);
      for (const call of batch.calls) await service.execute(call, new AbortController().signal, 1000);
    }
    const keys = seen.map((ctx) => ctx.idempotencyKey);
    const expected = [0, 1, 2].map((index) => idempotencyKeyOf('run-7', 4, index));
    expect(keys).toEqual([...expected, ...expected]);
    expect(seen.map((ctx) => ctx.callId)).toEqual(['call_a', 'call_b', 'call_c', 'retry_x', 'retry_y', 'retry_z']);
  });
});
