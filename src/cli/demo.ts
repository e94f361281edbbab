/*
 * `switchyard demo`: a scripted scenario run in-process, printed as a timeline — two
 * sessions, a queued message, a steer, an interrupt and a deadline — so a newcomer can watch
 * the engine's policies at work without any setup.
 */
import { z } from 'zod';
import { sleep, systemClock } from '../core/clock.js';
import { createEngine } from '../engine/index.js';
import type { RunEvent } from '../core/run-events.js';
import { scriptedModel, type ScriptContext, type ScriptTurn } from '../model/scripted.js';
import { defineTool } from '../tools/tool.js';
import { Timeline } from './timeline.js';

const TURN_MS = 150;

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a word up (takes a moment).',
  input: z.object({ word: z.string() }),
  readOnly: true,
  async execute({ word }, ctx) {
    await sleep(systemClock, 200, ctx.signal);
    return { word, meaning: `the meaning of ${word}` };
  },
});

/** The model: answers, looks things up, and mentions the steers it was given. */
function demoScript(ctx: ScriptContext): ScriptTurn {
  if (ctx.input.includes('slow')) return { text: 'this takes far too long', delayMs: 5_000 };
  const steers = ctx.messages.filter((m) => m.role === 'user').length;
  if (ctx.turn === 0)
    return { toolCalls: [{ name: 'lookup', args: { word: ctx.input.split(' ')[0] } }], delayMs: TURN_MS };
  const last = ctx.messages.at(-1);
  if (last?.role === 'user' && ctx.turn > 0) return { text: `noted: "${last.content}"`, delayMs: TURN_MS };
  return { text: `answered "${ctx.input}" (${steers} user message(s) so far)`, delayMs: TURN_MS };
}

export async function runDemo(out: (line: string) => void = console.log, color = process.stdout.isTTY): Promise<void> {
  const engine = await createEngine({
    models: { scripted: scriptedModel(demoScript) },
    tools: [lookup],
    config: { execution: { max_runs_global: 2 } },
  });
  const timeline = new Timeline({ color });
  const stream = engine.events({});
  const printing = (async () => {
    for await (const event of stream) {
      const line = timeline.format(event);
      if (line) out(line);
    }
  })();
  const say = (text: string) => out(`\n# ${text}`);

  say('alice asks; bob asks on another session: both run at once');
  const a1 = await engine.submit({ sessionId: 'alice', input: 'harbor please' });
  const b1 = await engine.submit({ sessionId: 'bob', input: 'lighthouse please' });
  timeline.label(a1.runId);
  timeline.label(b1.runId);
  await sleep(systemClock, 60);

  say('alice adds a note while her run works: it is steered into the running run');
  await engine.submit({ sessionId: 'alice', input: 'also mention tides', busyPolicy: 'steer' });
  say('alice queues a second question: it waits in her wait lane');
  const a2 = await engine.submit({ sessionId: 'alice', input: 'anchor next', busyPolicy: 'queue' });
  await engine.wait(a2.runId);

  say('bob changes his mind: an interrupt cancels his run and starts the new message');
  const b2 = await engine.submit({ sessionId: 'bob', input: 'slow question' });
  await sleep(systemClock, 100);
  const b3 = await engine.submit({ sessionId: 'bob', input: 'compass instead', busyPolicy: 'interrupt' });
  await engine.wait(b2.runId);
  await engine.wait(b3.runId);

  say('a run with a 300 ms deadline meets a slow model: it fails with timeout');
  const c1 = await engine.submit({ sessionId: 'carol', input: 'slow and steady', timeoutMs: 300 });
  const result = await engine.wait(c1.runId);

  await engine.wait(b1.runId);
  const history: RunEvent[] = await engine.history(a1.runId);
  stream.close();
  await printing;
  await engine.close();
  out(
    `\n# done: carol's run ended ${result.state}${result.error ? ` (${result.error.code})` : ''}; ` +
      `alice's first run logged ${history.length} events, seq 1..${history.at(-1)?.seq}`,
  );
}
