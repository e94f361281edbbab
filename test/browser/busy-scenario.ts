/*
 * The scripted day the inspector's history views are tested (and pictured) on, on a real
 * engine: in session "alice" a run reads three files in parallel then publishes (a tool batch
 * of two groups), a message steers into it while it answers, and a message queued behind it
 * runs after it; in session "bob" a slow run is interrupted by a burst of three messages, of
 * which the first two are superseded and the last one runs. Each step waits for the event it
 * follows, never for a guessed time.
 */
import { z } from 'zod';
import { Claims } from '../../src/concurrency/index.js';
import { sleep, systemClock } from '../../src/core/clock.js';
import type { StreamEvent } from '../../src/core/run-events.js';
import type { Engine } from '../../src/engine/index.js';
import type { ScriptContext, ScriptTurn } from '../../src/model/scripted.js';
import { defineTool } from '../../src/tools/tool.js';

const readTool = (name: string, hold: () => Promise<void>) =>
  defineTool({
    name,
    description: `Reads ${name.slice(5)} (takes a moment).`,
    input: z.object({ path: z.string() }),
    readOnly: true,
    concurrencyClaim: ({ path }) => Claims.shared([path]),
    async execute({ path }, ctx) {
      await hold();
      await sleep(systemClock, 300, ctx.signal);
      return { path, text: `contents of ${path}` };
    },
  });

const publish = defineTool({
  name: 'publish',
  description: 'Publishes the summary somewhere unknown: a global claim.',
  input: z.object({ text: z.string() }),
  async execute({ text }, ctx) {
    await sleep(systemClock, 200, ctx.signal);
    return { published: text.length };
  },
});

/** The tools of the scenario; the reads wait for `hold()` first (a test holds a run in its batch with it). */
export function scenarioTools(hold: () => Promise<void> = () => Promise.resolve()) {
  return [readTool('read_notes', hold), readTool('read_plan', hold), readTool('read_todo', hold), publish];
}

export const TOOL_RUN_INPUT = 'summarize my notes';
export const STEER_TEXT = 'also mention the plan';

/** The model of the scenario, by message. */
export function scenarioScript(ctx: ScriptContext): ScriptTurn {
  if (ctx.input === 'slow question') return { delayMs: 20_000, text: 'too late' };
  if (ctx.input === TOOL_RUN_INPUT && ctx.turn === 0) {
    return {
      delayMs: 600,
      toolCalls: [
        { id: 'read-1', name: 'read_notes', args: { path: 'notes.md' } },
        { id: 'read-2', name: 'read_plan', args: { path: 'plan.md' } },
        { id: 'read-3', name: 'read_todo', args: { path: 'todo.md' } },
        { id: 'publish-1', name: 'publish', args: { text: 'summary' } },
      ],
    };
  }
  // Long enough for the steer to arrive while it thinks; it then answers the steer in a turn of its own.
  if (ctx.input === TOOL_RUN_INPUT && ctx.turn === 1)
    return { delayMs: 700, text: 'Read three files and published the summary.' };
  const last = ctx.messages.at(-1);
  if (last?.role === 'user' && ctx.turn > 0) return { delayMs: 150, text: `noted: ${last.content}` };
  return { delayMs: 200, text: `answered: ${ctx.input}` };
}

export interface ScenarioRuns {
  toolRun: string;
  steer: string;
  queued: string;
  slow: string;
  burst: [string, string, string];
}

/** Resolves with the first event of the engine's stream that matches. */
async function eventOf(
  engine: Engine,
  filter: { runId: string },
  match: (event: StreamEvent) => boolean,
): Promise<StreamEvent> {
  const stream = engine.events({ ...filter, fromSeq: 0 });
  try {
    for await (const event of stream) if (match(event)) return event;
    throw new Error('the stream ended first');
  } finally {
    stream.close();
  }
}

/** Plays the scenario to its end; `midRun` is called while alice's tool run is in its batch. */
export async function playBusyScenario(
  engine: Engine,
  midRun: (runs: { toolRun: string }) => Promise<void> = async () => {},
): Promise<ScenarioRuns> {
  const toolRun = (await engine.submit({ sessionId: 'alice', input: TOOL_RUN_INPUT })).runId;
  await eventOf(engine, { runId: toolRun }, (e) => e.type === 'tool.started');
  await midRun({ toolRun });
  await eventOf(engine, { runId: toolRun }, (e) => e.type === 'turn.started' && e.turn === 1);
  const steer = await engine.submit({ sessionId: 'alice', input: STEER_TEXT, busyPolicy: 'steer' });
  if (steer.outcome !== 'steered' || steer.intoRunId !== toolRun)
    throw new Error(`the steer was not steered into the tool run: ${JSON.stringify(steer)}`);
  const queued = (await engine.submit({ sessionId: 'alice', input: 'then draft a reply', busyPolicy: 'queue' })).runId;

  const slow = (await engine.submit({ sessionId: 'bob', input: 'slow question' })).runId;
  await eventOf(engine, { runId: slow }, (e) => e.type === 'turn.started');
  const burst = (
    await Promise.all(
      ['actually, the lighthouse', 'no, the harbor', 'the compass, please'].map((input) =>
        engine.submit({ sessionId: 'bob', input, busyPolicy: 'interrupt' }),
      ),
    )
  ).map((r) => r.runId) as [string, string, string];

  await Promise.all([toolRun, queued, slow, ...burst].map((runId) => engine.wait(runId)));
  return { toolRun, steer: steer.runId, queued, slow, burst };
}
