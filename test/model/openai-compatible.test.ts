/*
 * The OpenAI-compatible provider against a server on 127.0.0.1 that streams chunks the way
 * Chat Completions servers do: text deltas, tool calls in fragments (interleaved, without
 * index), arguments that are not JSON, streams that end early or never, and in the engine.
 * (Recorded streams of real servers are in recordings.test.ts; retries in retries.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openAICompatibleModel } from '../../src/model/openai.js';
import { defineTool } from '../../src/tools/index.js';
import { engineFixture, expectWellFormedHistory } from '../engine/fixtures.js';
import { collect, collectUntilError, modelRequest, replay, replayServer, type Reply } from './replay-server.js';

/** A chat.completion.chunk as OpenAI streams it. */
function chunk(delta: Record<string, unknown>, finishReason: string | null = null) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'm',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

const toolFragment = (index: number | undefined, fields: { id?: string; name?: string; arguments: string }) => ({
  tool_calls: [
    {
      ...(index !== undefined ? { index } : {}),
      ...(fields.id ? { id: fields.id, type: 'function' } : {}),
      function: { ...(fields.name ? { name: fields.name } : {}), arguments: fields.arguments },
    },
  ],
});

/** The events as `data:` lines, one write each, then `data: [DONE]`. */
function streams(events: unknown[], opts: { done?: boolean } = {}): Reply {
  const lines = events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`);
  const body = lines.join('') + (opts.done === false ? '' : 'data: [DONE]\n\n');
  let offset = 0;
  return {
    headers: { 'content-type': 'text/event-stream' },
    body,
    cuts: lines.map((l) => (offset += Buffer.byteLength(l))),
  };
}

async function provider(...replies: Reply[]) {
  const server = await replayServer(...replies);
  return { ...server, model: openAICompatibleModel({ baseURL: `${server.origin}/v1`, model: 'm', maxRetries: 0 }) };
}

describe('streaming', () => {
  it('yields every content delta in order, then one message with the whole text', async () => {
    const { model } = await provider(
      streams([
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'The ' }),
        chunk({ content: 'answer ' }),
        chunk({ content: 'is 42.' }),
        chunk({}, 'stop'),
      ]),
    );
    expect(await collect(model)).toEqual([
      { type: 'delta', text: 'The ' },
      { type: 'delta', text: 'answer ' },
      { type: 'delta', text: 'is 42.' },
      { type: 'message', text: 'The answer is 42.', toolCalls: [], finishReason: 'stop' },
    ]);
  });

  it('reads events whose bytes arrive split mid-line, inside a character and between CR and LF, with keep-alive comments', async () => {
    const raw =
      `: keep-alive\r\n\r\ndata: ${JSON.stringify(chunk({ content: 'héllo ' }))}\r\n\r\ndata: ` +
      `${JSON.stringify(chunk({ content: 'wörld' }, 'stop'))}\r\n\r\ndata: [DONE]\r\n\r\n`;
    const bytes = Buffer.from(raw);
    const { model } = await provider({
      headers: { 'content-type': 'text/event-stream' },
      body: bytes,
      cuts: [bytes.indexOf('é') + 1, bytes.indexOf('ö') + 1, bytes.lastIndexOf('\r')],
    });
    expect(await collect(model)).toEqual([
      { type: 'delta', text: 'héllo ' },
      { type: 'delta', text: 'wörld' },
      { type: 'message', text: 'héllo wörld', toolCalls: [], finishReason: 'stop' },
    ]);
  });

  it('assembles two parallel tool calls whose argument fragments interleave by index', async () => {
    const { model } = await provider(
      streams([
        chunk({ role: 'assistant', content: null }),
        chunk(toolFragment(0, { id: 'call_a', name: 'file_read', arguments: '' })),
        chunk(toolFragment(1, { id: 'call_b', name: 'echo', arguments: '{"te' })),
        chunk(toolFragment(0, { arguments: '{"path": ' })),
        chunk(toolFragment(1, { arguments: 'xt": "hi' })),
        chunk(toolFragment(0, { arguments: '"src/a.ts"}' })),
        chunk(toolFragment(1, { arguments: ' there"}' })),
        chunk({}, 'tool_calls'),
      ]),
    );
    expect(await collect(model)).toEqual([
      {
        type: 'message',
        text: '',
        toolCalls: [
          { id: 'call_a', name: 'file_read', args: { path: 'src/a.ts' } },
          { id: 'call_b', name: 'echo', args: { text: 'hi there' } },
        ],
        finishReason: 'tool_calls',
      },
    ]);
  });

  it('marks arguments that are not a JSON object as malformed (args {}), unwraps twice-encoded ones, and reads empty ones as {}', async () => {
    const { model } = await provider(
      streams([
        chunk(toolFragment(0, { id: 'call_a', name: 'echo', arguments: '{"text": "unterminated' })),
        chunk(toolFragment(1, { id: 'call_b', name: 'now', arguments: '' })),
        chunk(toolFragment(2, { id: 'call_c', name: 'echo', arguments: '["not", "an", "object"]' })),
        chunk(toolFragment(3, { id: 'call_d', name: 'echo', arguments: JSON.stringify('{"text":"twice"}') })),
        chunk({}, 'tool_calls'),
      ]),
    );
    const [message] = await collect(model);
    expect(message).toMatchObject({
      toolCalls: [
        { id: 'call_a', name: 'echo', args: {}, malformedArguments: '{"text": "unterminated' },
        { id: 'call_b', name: 'now', args: {} },
        { id: 'call_c', name: 'echo', args: {}, malformedArguments: '["not", "an", "object"]' },
        { id: 'call_d', name: 'echo', args: { text: 'twice' } },
      ],
    });
    expect(message).not.toHaveProperty('toolCalls.1.malformedArguments');
  });

  it('keeps text and tool calls of one answer together', async () => {
    const { model } = await provider(
      streams([
        chunk({ content: 'Let me look.' }),
        chunk(toolFragment(0, { id: 'call_a', name: 'echo', arguments: '{"text":"x"}' })),
        chunk({}, 'tool_calls'),
      ]),
    );
    expect(await collect(model)).toEqual([
      { type: 'delta', text: 'Let me look.' },
      {
        type: 'message',
        text: 'Let me look.',
        toolCalls: [{ id: 'call_a', name: 'echo', args: { text: 'x' } }],
        finishReason: 'tool_calls',
      },
    ]);
  });

  it('assembles tool calls from servers that omit the fragment index', async () => {
    const { model } = await provider(
      streams([
        chunk(toolFragment(undefined, { id: 'call_a', name: 'echo', arguments: '{"text":' })),
        chunk(toolFragment(undefined, { arguments: '"a"}' })),
        chunk(toolFragment(undefined, { id: 'call_b', name: 'echo', arguments: '{"text":"b"}' })),
        chunk({}, 'tool_calls'),
      ]),
    );
    const [message] = await collect(model);
    expect(message).toMatchObject({
      toolCalls: [
        { id: 'call_a', name: 'echo', args: { text: 'a' } },
        { id: 'call_b', name: 'echo', args: { text: 'b' } },
      ],
    });
  });

  it('accepts a stream that ends without [DONE] once the model finished', async () => {
    const { model } = await provider(streams([chunk({ content: 'ok' }, 'stop')], { done: false }));
    expect((await collect(model)).at(-1)).toEqual({ type: 'message', text: 'ok', toolCalls: [], finishReason: 'stop' });
  });

  it('fails a stream that ends before the model finished (no finish reason, no [DONE]): a fragment is not an answer', async () => {
    const { model } = await provider(streams([chunk({ content: 'The answer is' })], { done: false }));
    const { chunks, error } = await collectUntilError(model);
    expect(chunks).toEqual([{ type: 'delta', text: 'The answer is' }]);
    expect(error.code).toBe('model_error');
    expect(error.message).toContain('before the model finished (no finish reason, no [DONE])');
  });

  it('accepts a stream without finish reason that the server ended with [DONE] (Snowflake Cortex)', async () => {
    const { model } = await provider(streams([chunk({ content: 'The answer is 42.' })]));
    expect(await collect(model)).toEqual([
      { type: 'delta', text: 'The answer is 42.' },
      { type: 'message', text: 'The answer is 42.', toolCalls: [], finishReason: 'stop' },
    ]);
  });

  it('reports tool_calls for a tool call the server ended with [DONE] and no finish reason', async () => {
    const { model } = await provider(
      streams([chunk(toolFragment(0, { id: 'call_a', name: 'echo', arguments: '{"text":"x"}' }))]),
    );
    expect((await collect(model)).at(-1)).toEqual({
      type: 'message',
      text: '',
      toolCalls: [{ id: 'call_a', name: 'echo', args: { text: 'x' } }],
      finishReason: 'tool_calls',
    });
  });

  it('fails an empty 200 (no event at all) instead of passing an empty reply', async () => {
    const { model } = await provider({ headers: { 'content-type': 'text/event-stream' }, body: '' });
    const { error } = await collectUntilError(model);
    expect(error.code).toBe('model_error');
    expect(error.message).toContain('the server closed the stream without sending any event');
  });

  it('fails with model_error when an event is not JSON, quoting it', async () => {
    const { model } = await provider(streams(['<html>oops</html>'], { done: false }));
    const { error } = await collectUntilError(model);
    expect(error.code).toBe('model_error');
    expect(error.message).toContain('<html>oops</html>');
  });
});

describe('abort', () => {
  it('stops reading mid-stream and rejects promptly with code aborted while the server keeps the connection open', async () => {
    const { model } = await provider({
      headers: { 'content-type': 'text/event-stream' },
      body: `data: ${JSON.stringify(chunk({ content: 'thinking' }))}\n\n`,
      hang: true,
    });
    const controller = new AbortController();
    const iterator = model.complete(modelRequest({ signal: controller.signal }))[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { type: 'delta', text: 'thinking' } });
    const pending = iterator.next();
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toMatchObject({ code: 'aborted' });
  });

  it('does not send a request when the signal is already aborted', async () => {
    const { model, requests } = await provider(streams([chunk({ content: 'unused' }, 'stop')]));
    const { error } = await collectUntilError(model, modelRequest({ signal: AbortSignal.abort() }));
    expect(error.code).toBe('aborted');
    expect(requests).toHaveLength(0);
  });
});

describe('in the engine', () => {
  const newEngine = engineFixture();

  it('runs a tool call and answers with the second turn, reporting the 429 it retried as run.retrying', async () => {
    const echo = defineTool({
      name: 'echo',
      description: 'Returns its text.',
      input: z.object({ text: z.string() }),
      readOnly: true,
      execute: async ({ text }) => text,
    });
    const { origin, requests } = await replayServer(
      {
        status: 429,
        headers: { 'content-type': 'application/json', 'retry-after': '0' },
        body: JSON.stringify({ error: { message: 'Rate limit reached' } }),
      },
      (received) => {
        const result = (received.body['messages'] as Record<string, unknown>[]).find((m) => m['role'] === 'tool');
        if (!result)
          return streams([
            chunk({ role: 'assistant', content: null }),
            chunk(toolFragment(0, { id: 'call_1', name: 'echo', arguments: '{"text":' })),
            chunk(toolFragment(0, { arguments: '"ping"}' })),
            chunk({}, 'tool_calls'),
          ]);
        return streams([
          chunk({ content: 'echo said ' }),
          chunk({ content: String(result['content']) }),
          chunk({}, 'stop'),
        ]);
      },
    );
    const engine = await newEngine({
      models: { openai: openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'm', retryBaseDelayMs: 60_000 }) },
      config: { execution: { default_model: 'openai' } },
      tools: [echo],
    });

    const run = await engine.submit({ sessionId: 's', input: 'echo ping' });
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'completed', output: 'echo said ping' });
    expect(requests).toHaveLength(3);
    expect(requests[2]!.body['messages']).toEqual(
      expect.arrayContaining([
        { role: 'user', content: 'echo ping' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'echo', arguments: '{"text":"ping"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'ping' },
      ]),
    );
    const history = await engine.history(run.runId);
    expectWellFormedHistory(history);
    expect(history.filter((e) => e.type === 'run.retrying')).toEqual([
      expect.objectContaining({ attempt: 1, reason: 'HTTP 429: Rate limit reached; retrying in 0 s' }),
    ]);
    expect(history.filter((e) => e.type === 'model.delta').map((e) => e.text)).toEqual(['echo said ', 'ping']);
    expect(history.filter((e) => e.type === 'model.message').map((e) => e.finishReason)).toEqual([
      'tool_calls',
      'stop',
    ]);
  });

  it("fails the run with content_filtered when Azure's asynchronous filter flags the answer after its finish", async () => {
    const { origin } = await replayServer(replay('azure-async-filter-after-stop.sse'));
    const engine = await newEngine({
      models: { azure: openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'm', maxRetries: 0 }) },
      config: { execution: { default_model: 'azure' } },
    });
    const run = await engine.submit({ sessionId: 's', input: 'how do I pick a lock?' });
    expect(await engine.wait(run.runId)).toMatchObject({
      state: 'failed',
      error: { code: 'content_filtered', message: expect.stringContaining('violence: filtered') },
    });
    const history = await engine.history(run.runId);
    expectWellFormedHistory(history);
    expect(history.filter((e) => e.type === 'model.message')).toEqual([]);
  });

  it('completes a run whose server never sends a finish reason but ends with [DONE] (Snowflake Cortex)', async () => {
    const { origin } = await replayServer(replay('snowflake-cortex-no-finish-reason.sse'));
    const engine = await newEngine({
      models: { cortex: openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'm', maxRetries: 0 }) },
      config: { execution: { default_model: 'cortex' } },
    });
    const run = await engine.submit({ sessionId: 's', input: 'how does Snowflake store data?' });
    expect(await engine.wait(run.runId)).toMatchObject({
      state: 'completed',
      output: 'Snowflake stores data in micro-partitions of 50–500 MB (uncompressed).',
    });
  });
});
