/*
 * Engine bugs the simulator found, each pinned by its smallest direct reproduction (the
 * simulator's seed and shrunk trace in a comment), so they stay fixed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { Claims } from '../../src/concurrency/index.js';
import { createEngine } from '../../src/engine/index.js';
import type { Engine, EngineOptions, RunEvent } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import type { ScriptTurn } from '../../src/model/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { defineTool } from '../../src/tools/index.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-sim-regressions-', 'afterAll');
let workspaceRoot: string;
beforeAll(async () => {
  workspaceRoot = await tempDir();
});

async function engineOn(
  store: MemoryStore,
  clock: SimulatedClock,
  script: ScriptTurn[],
  extra: Partial<EngineOptions> = {},
): Promise<Engine> {
  return createEngine({
    store,
    clock,
    models: { scripted: scriptedModel(script) },
    config: { sandbox: { workspace_root: workspaceRoot }, execution: { busy_policy: 'steer' } },
    onError: () => {},
    ...extra,
  });
}

describe('engine bugs found by the simulator', () => {
  it('a repeated call of a batch reports tool.started in input order, and the next group waits for it (machines/act.machine.ts nextStep)', async () => {
    // Simulator: `switchyard simulate --seed 3 --runs 200 --faults none` — minimal trace, one message:
    //   submit m5: tools[global, read /sim/c, global (repeat), peek] -> … : tool-order / tool-overlap.
    const read = defineTool({
      name: 'read_a',
      description: 'reads /w/a',
      input: z.object({ n: z.number() }),
      concurrencyClaim: () => Claims.shared(['/w/a']),
      execute: async () => 'read',
    });
    const change = defineTool({
      name: 'change_all',
      description: 'changes anything (global)',
      input: z.object({ n: z.number() }),
      execute: async () => 'changed',
    });
    const engine = await engineOn(
      new MemoryStore(),
      new SimulatedClock(),
      [
        {
          toolCalls: [
            { name: 'read_a', args: { n: 1 } },
            { name: 'read_a', args: { n: 1 } },
            { name: 'change_all', args: { n: 2 } },
          ],
        },
        { text: 'done' },
      ],
      { tools: [read, change] },
    );
    try {
      await engine.submit({ runId: 'r1', sessionId: 's1', input: 'go' });
      await expect(engine.wait('r1')).resolves.toMatchObject({ state: 'completed' });
      const tools = (await engine.history('r1')).filter(
        (e): e is Extract<RunEvent, { type: 'tool.started' | 'tool.finished' }> =>
          e.type === 'tool.started' || e.type === 'tool.finished',
      );
      const log = tools.map((e) => `${e.type === 'tool.started' ? 'start' : 'finish'} ${e.callId}`);
      // Serial (the batch has a repeat): each call starts after the previous one finished, in input order.
      expect(log).toEqual([
        'start call_0_0',
        'finish call_0_0',
        'start call_0_1',
        'finish call_0_1',
        'start call_0_2',
        'finish call_0_2',
      ]);
    } finally {
      await engine.close();
    }
  });

  it("after a restart, a session's sessionSeq continues where it stopped, also for a session with no open run (src/engine recover)", async () => {
    // Simulator: every seed with crashes, e.g. seed 6 — minimal trace: runs finish on a session,
    // crash + restart, a new message on that session: "sessionSeq 1, expected N".
    const store = new MemoryStore();
    const first = await engineOn(store, new SimulatedClock(), [{ text: 'one' }]);
    await first.submit({ runId: 'r1', sessionId: 's1', input: 'first' });
    await first.wait('r1');
    // The engine stops without close(); a new one takes over the store.
    const second = await engineOn(store, new SimulatedClock(), [{ text: 'two' }]);
    try {
      await second.submit({ runId: 'r2', sessionId: 's1', input: 'second' });
      await second.wait('r2');
      const sessionSeqs = (await store.readSessionEvents('s1')).map((e) => e.sessionSeq);
      expect(sessionSeqs).toEqual(sessionSeqs.map((_, i) => i + 1));
    } finally {
      await second.close();
    }
  });

  it('a steer accepted into a run that was running when the engine stopped is not lost (src/engine steers are not persisted)', async () => {
    // Simulator: e.g. `simulate({ seed: 7, toolMix: { duplicate: 0 } })` — shrunk to 8 operations:
    //   … submit m23 s6 queue, submit m29 s6 steer (into m23, still running), crash + restart
    //   -> restart-lost: "accepted steer m29 (into run m23) has no outcome and the restarted engine does not know it".
    const store = new MemoryStore();
    const first = await engineOn(store, new SimulatedClock(), [{ text: 'slow', delayMs: 60_000 }]);
    await first.submit({ runId: 'r1', sessionId: 's1', input: 'long task' });
    const steer = await first.submit({ runId: 'x1', sessionId: 's1', input: 'and also this', busyPolicy: 'steer' });
    expect(steer).toMatchObject({ outcome: 'steered', intoRunId: 'r1' });
    await settle(20);
    const clock = new SimulatedClock();
    const second = await engineOn(store, clock, [{ text: 'handled' }]);
    try {
      await settle(20);
      expect(second.status('r1')?.state).toBe('failed');
      // docs/runs.md: the unconsumed steers of a run that ended failed are queued again as one run;
      // README, "Persistence and restart": after a restart no accepted message is lost.
      expect(second.status('x1'), 'the restarted engine does not know the accepted steer x1').toBeDefined();
      clock.increment(1_000);
      await settle(20);
      await expect(second.wait('x1')).resolves.toMatchObject({ state: 'completed' });
    } finally {
      await second.close();
    }
  });
});
