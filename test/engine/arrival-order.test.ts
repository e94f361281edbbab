/*
 * A session decides its messages in the order they arrived, whatever each submit awaits
 * first: a message with its own runId (whose duplicate check reads the store) is never
 * overtaken by one sent right after it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, holdTool } from './fixtures.js';
import { until } from '../support/eventually.js';
import { tempDirs } from '../support/temp-dirs.js';

const newEngine = engineFixture();
const tempDir = tempDirs('switchyard-order-', 'afterAll');

describe('arrival order', () => {
  it('pipelined submits to a busy session are queued in arrival order, with and without their own runId', async () => {
    const dir = await tempDir();
    const hold = holdTool();
    const engine = await newEngine({
      store: { dir },
      tools: [hold.tool],
      models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'done' }]) },
      config: { execution: { busy_policy: 'queue', wait_lane_capacity: 1000 } },
    });
    const first = await engine.submit({ sessionId: 's', input: 'holds the session' });
    await until(() => hold.isHolding(first.runId), 'the session is busy');
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.boolean(), { minLength: 2, maxLength: 6 }), async (withIds) => {
        const sent = withIds.map((withId) =>
          engine.submit({ sessionId: 's', input: `m${n}`, ...(withId ? { runId: `own-${n++}` } : {}) }),
        );
        const answers = await Promise.all(sent);
        const positions = answers.map((a) => a.position!);
        expect(answers.every((a) => a.outcome === 'queued')).toBe(true);
        expect(positions).toEqual([...positions].sort((a, b) => a - b));
        expect(new Set(positions).size).toBe(positions.length);
      }),
      { numRuns: 40 },
    );
    await engine.stopSession('s');
  });
});
