/**
 * The cost of inspection: the same workload (runs with a tool batch each) with nobody
 * inspecting, and with one subscriber to the gateway's inspection fan-out, which turns every
 * XState inspection event into the JSON frame the inspector page gets (each actor's context
 * whole once, then what changed: src/gateway/inspection-frames.ts).
 */
import { z } from 'zod';
import { createEngine } from '../src/engine/index.js';
import { InspectFanout } from '../src/gateway/inspection/inspect-fanout.js';
import { scriptedModel } from '../src/model/index.js';
import { defineTool } from '../src/tools/index.js';
import type { BenchFigure, Benchmark } from './types.js';

const RUNS = 400;
const SESSIONS = 40;

const look = defineTool({
  name: 'look',
  description: 'A read-only no-op.',
  input: z.object({ n: z.number() }),
  readOnly: true,
  execute: async ({ n }) => n,
});

async function runsPerSecond(inspected: boolean): Promise<{ rate: number; events: number; chars: number }> {
  const engine = await createEngine({
    tools: [look],
    models: {
      scripted: scriptedModel([{ toolCalls: [0, 1, 2].map((n) => ({ name: 'look', args: { n } })) }, { text: 'ok' }]),
    },
    config: {
      execution: { busy_policy: 'queue', wait_lane_capacity: RUNS },
      sandbox: { workspace_root: '/tmp/switchyard-bench' },
    },
  });
  let events = 0;
  let chars = 0;
  const fanout = new InspectFanout(engine, (error) => {
    throw error;
  });
  const stop = inspected
    ? fanout.subscribe((frame) => {
        events += 1;
        chars += frame.length;
      })
    : () => {};
  const started = performance.now();
  const ids = [];
  for (let i = 0; i < RUNS; i++)
    ids.push((await engine.submit({ sessionId: `s${i % SESSIONS}`, input: `m${i}` })).runId);
  for (const id of ids) await engine.wait(id);
  const elapsed = performance.now() - started;
  stop();
  await engine.close();
  return { rate: (RUNS / elapsed) * 1000, events, chars };
}

const benchmark: Benchmark = async () => {
  await runsPerSecond(false);
  await runsPerSecond(true);
  let off = 0;
  let on = 0;
  let events = 0;
  let chars = 0;
  for (let round = 0; round < 3; round++) {
    off = Math.max(off, (await runsPerSecond(false)).rate);
    const inspected = await runsPerSecond(true);
    on = Math.max(on, inspected.rate);
    events = inspected.events;
    chars = inspected.chars;
  }
  const figures: BenchFigure[] = [
    {
      figure: 'inspect: runs/s with an inspector subscribed vs none (3 tool calls per run)',
      value: on,
      unit: 'runs/s',
      baseline: off,
      ratio: on / off,
      target: '>= 0.7',
      note:
        `${Math.round(events / RUNS)} inspection events per run serialized, ` +
        `${(chars / RUNS / 1024).toFixed(1)} KiB of frames; with no subscriber XState builds none`,
    },
  ];
  return figures;
};

export default benchmark;
