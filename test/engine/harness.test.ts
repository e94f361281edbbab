/*
 * The agent loop as the engine runs it (docs/runs.md, "The states of a run"; README, "Builtin
 * tools"): the session's conversation carries over between runs, tool failures become error results
 * the model sees while the run goes on, and the loop ends at the iteration cap or on a model error.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ScriptContext, ScriptTurn } from '../../src/model/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { engineFixture, expectWellFormedHistory } from './fixtures.js';

const newEngine = engineFixture();

/** A function-form script that records what the model saw on every turn. */
function recordingScript(turns: (ctx: ScriptContext) => ScriptTurn) {
  const seen: ScriptContext[] = [];
  const model = scriptedModel((ctx) => {
    seen.push({ ...ctx, messages: ctx.messages.map((m) => ({ ...m })) });
    return turns(ctx);
  });
  return { model, seen };
}

describe('conversation', () => {
  it('persists across the runs of a session: the second run’s model sees the first run', async () => {
    const { model, seen } = recordingScript((ctx) => ({ text: `reply to ${ctx.input}` }));
    const engine = await newEngine({ models: { scripted: model } });
    const first = await engine.submit({ sessionId: 's', input: 'my name is Ada' });
    await engine.wait(first.runId);
    const second = await engine.submit({ sessionId: 's', input: 'what is my name?' });
    expect(await engine.wait(second.runId)).toMatchObject({ state: 'completed', output: 'reply to what is my name?' });
    const other = await engine.submit({ sessionId: 'other', input: 'hello' });
    await engine.wait(other.runId);

    expect(seen[1]!.messages.map((m) => [m.role, m.content])).toEqual([
      ['user', 'my name is Ada'],
      ['assistant', 'reply to my name is Ada'],
      ['user', 'what is my name?'],
    ]);
    expect(seen[2]!.messages.map((m) => m.content)).toEqual(['hello']);
  });

  it('keeps tool calls and their results in the conversation', async () => {
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes its text.',
      input: z.object({ text: z.string() }),
      readOnly: true,
      execute: async ({ text }) => ({ echoed: text }),
    });
    const { model, seen } = recordingScript((ctx) =>
      ctx.turn === 0 ? { toolCalls: [{ name: 'echo', args: { text: 'ping' }, id: 'c1' }] } : { text: 'pong' },
    );
    const engine = await newEngine({ tools: [echo], models: { scripted: model } });
    const run = await engine.submit({ sessionId: 's', input: 'echo ping' });
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'pong' });
    expect(seen[1]!.messages).toEqual([
      { role: 'user', content: 'echo ping' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'echo', args: { text: 'ping' } }] },
      { role: 'tool', toolCallId: 'c1', content: JSON.stringify({ echoed: 'ping' }) },
    ]);
    const history = await engine.history(run.runId);
    expect(history.at(-1)).toMatchObject({ type: 'run.completed', output: 'pong', usage: { turns: 2 }, toolCalls: 1 });
  });
});

describe('tool failures', () => {
  const failing = defineTool({
    name: 'flaky',
    description: 'Always fails.',
    input: z.object({ mode: z.enum(['plain', 'coded']) }),
    execute: async ({ mode }) => {
      throw mode === 'coded' ? Object.assign(new Error('disk is full'), { code: 'ENOSPC' }) : new Error('boom');
    },
  });

  const cases: [
    description: string,
    call: { name: string; args: unknown },
    error: { code: string; message: RegExp },
  ][] = [
    ['a thrown error', { name: 'flaky', args: { mode: 'plain' } }, { code: 'tool_error', message: /boom/ }],
    [
      'a thrown error with its own code',
      { name: 'flaky', args: { mode: 'coded' } },
      { code: 'ENOSPC', message: /disk is full/ },
    ],
    ['an unknown tool', { name: 'no_such_tool', args: {} }, { code: 'unknown_tool', message: /no_such_tool/ }],
    [
      'arguments that fail the tool’s schema',
      { name: 'flaky', args: { mode: 'loud' } },
      { code: 'invalid_arguments', message: /mode/ },
    ],
  ];

  it.each(cases)(
    '%s becomes an error result the model sees, and the run goes on',
    async (_description, call, error) => {
      const { model, seen } = recordingScript((ctx) =>
        ctx.turn === 0 ? { toolCalls: [{ ...call, id: 'c1' }] } : { text: 'recovered' },
      );
      const engine = await newEngine({ tools: [failing], models: { scripted: model } });
      const run = await engine.submit({ sessionId: 's', input: 'try it' });
      expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'recovered' });

      const history = await engine.history(run.runId);
      expectWellFormedHistory(history);
      const finished = history.find((e) => e.type === 'tool.finished');
      expect(finished).toMatchObject({ callId: 'c1', ok: false, error: { code: error.code } });
      expect(finished?.type === 'tool.finished' && finished.error?.message).toMatch(error.message);
      const toolMessage = seen[1]!.messages.find((m) => m.role === 'tool');
      expect(toolMessage?.toolCallId).toBe('c1');
      expect(JSON.parse(toolMessage!.content)).toMatchObject({ error: { code: error.code } });
    },
  );

  it('generates a call id when the model gives none', async () => {
    const { model } = recordingScript((ctx) =>
      ctx.turn === 0 ? { toolCalls: [{ name: 'no_such_tool', args: {} }] } : { text: 'ok' },
    );
    const engine = await newEngine({ models: { scripted: model } });
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    await engine.wait(run.runId);
    const history = await engine.history(run.runId);
    const started = history.find((e) => e.type === 'tool.started');
    const finished = history.find((e) => e.type === 'tool.finished');
    expect(started?.type === 'tool.started' && started.callId).toEqual(expect.any(String));
    expect(finished).toMatchObject({ callId: started?.type === 'tool.started' ? started.callId : 'missing' });
  });
});

describe('ending the loop', () => {
  it('fails with max_iterations when the model keeps calling tools', async () => {
    const { model, seen } = recordingScript(() => ({ toolCalls: [{ name: 'no_such_tool', args: {} }] }));
    const engine = await newEngine({ models: { scripted: model } });
    const run = await engine.submit({ sessionId: 's', input: 'loop', maxIterations: 3 });
    const result = await engine.wait(run.runId);
    expect(result).toMatchObject({ state: 'failed', error: { code: 'max_iterations' } });
    expect(seen.map((s) => s.turn)).toEqual([0, 1, 2]);
    const history = await engine.history(run.runId);
    expectWellFormedHistory(history);
    expect(history.filter((e) => e.type === 'turn.started').map((e) => e.type === 'turn.started' && e.turn)).toEqual([
      0, 1, 2,
    ]);
  });

  it('takes the cap from execution.max_iterations by default', async () => {
    const { model, seen } = recordingScript(() => ({ toolCalls: [{ name: 'no_such_tool', args: {} }] }));
    const engine = await newEngine({ models: { scripted: model }, config: { execution: { max_iterations: 2 } } });
    const run = await engine.submit({ sessionId: 's', input: 'loop' });
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'failed', error: { code: 'max_iterations' } });
    expect(seen).toHaveLength(2);
  });

  it('completes on the last allowed turn when the model answers without tool calls', async () => {
    const { model } = recordingScript((ctx) =>
      ctx.turn < 2 ? { toolCalls: [{ name: 'no_such_tool', args: {} }] } : { text: 'just in time' },
    );
    const engine = await newEngine({ models: { scripted: model } });
    const run = await engine.submit({ sessionId: 's', input: 'x', maxIterations: 3 });
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'just in time' });
  });

  it('fails with model_error when the model fails', async () => {
    const engine = await newEngine({ models: { scripted: scriptedModel([{ error: 'upstream exploded' }]) } });
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    expect(await engine.wait(run.runId)).toEqual({
      runId: run.runId,
      state: 'failed',
      error: { code: 'model_error', message: 'upstream exploded' },
    });
    expectWellFormedHistory(await engine.history(run.runId));
  });

  it('answers "done" past the end of an array script', async () => {
    const engine = await newEngine({ models: { scripted: scriptedModel([]) } });
    const run = await engine.submit({ sessionId: 's', input: 'x' });
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'done' });
  });
});
