/*
 * The OpenAI-compatible provider (README, "Models") against a real HTTP server on 127.0.0.1 that
 * answers the way Chat Completions servers do: SSE chunks with text deltas and tool calls in
 * fragments, rate limits, server errors, client errors, and streams that never end.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { openAICompatibleModel } from '../../src/model/openai.js';
import type { OpenAICompatibleModelOptions } from '../../src/model/openai.js';
import { serverSentEventData } from '../../src/model/sse.js';
import type { ModelChunk, ModelRequest } from '../../src/model/types.js';
import { defineTool } from '../../src/tools/index.js';
import { engineFixture, expectWellFormedHistory } from '../engine/fixtures.js';

// ---------------------------------------------------------------------------------------------
// A Chat Completions server

interface Received {
  headers: IncomingHttpHeaders;
  // The request body as the provider sent it: JSON of any shape.
  body: { model: string; messages: Record<string, unknown>[]; tools?: unknown[]; stream: boolean; temperature?: number };
}

type Handler = (res: ServerResponse, received: Received, index: number) => void | Promise<void>;

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** Starts a server whose n-th request is answered by handlers[n] (the last one answers the rest). */
async function chatServer(...handlers: Handler[]) {
  const requests: Received[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (piece: string) => (text += piece));
    req.on('end', () => {
      expect(req.method).toBe('POST');
      expect(req.url).toBe('/v1/chat/completions');
      const received: Received = { headers: req.headers, body: JSON.parse(text) as Received['body'] };
      const index = requests.push(received) - 1;
      void handlers[Math.min(index, handlers.length - 1)]!(res, received, index);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseURL: `http://127.0.0.1:${port}/v1`, requests };
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 5));
/** How long a local HTTP round trip may take on a loaded machine before a wait gives up (vi.waitFor's default is 1 s). */
const PATIENCE = { timeout: 15_000 };

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

const toolFragment = (index: number, fields: { id?: string; name?: string; arguments: string }) => ({
  tool_calls: [
    {
      index,
      ...(fields.id ? { id: fields.id, type: 'function' } : {}),
      function: { ...(fields.name ? { name: fields.name } : {}), arguments: fields.arguments },
    },
  ],
});

/** Streams the events one write at a time (a tick apart), then `data: [DONE]`. */
function streams(events: unknown[], opts: { done?: boolean } = {}): Handler {
  return async (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of events) {
      res.write(`data: ${JSON.stringify(event)}\n\n`);
      await tick();
    }
    if (opts.done ?? true) res.write('data: [DONE]\n\n');
    res.end();
  };
}

function answers(status: number, body: unknown, headers: Record<string, string> = {}): Handler {
  return (res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

const textReply = (text: string) => streams([chunk({ role: 'assistant', content: '' }), chunk({ content: text }), chunk({}, 'stop')]);

// ---------------------------------------------------------------------------------------------
// Calling the provider

function modelRequest(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ role: 'user', content: 'hi' }], tools: [], signal: new AbortController().signal, ...overrides };
}

async function collect(opts: OpenAICompatibleModelOptions, request: ModelRequest = modelRequest()): Promise<ModelChunk[]> {
  const chunks: ModelChunk[] = [];
  for await (const piece of openAICompatibleModel(opts).complete(request)) chunks.push(piece);
  return chunks;
}

async function failure(promise: Promise<unknown>): Promise<Error & { code?: unknown; status?: unknown }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: unknown };
  }
  throw new Error('expected a rejection');
}

// ---------------------------------------------------------------------------------------------

describe('streaming', () => {
  it('yields every content delta in order, then one message with the whole text', async () => {
    const { baseURL } = await chatServer(
      streams([
        chunk({ role: 'assistant', content: '' }),
        chunk({ content: 'The ' }),
        chunk({ content: 'answer ' }),
        chunk({ content: 'is 42.' }),
        chunk({}, 'stop'),
      ]),
    );
    expect(await collect({ baseURL, model: 'm' })).toEqual([
      { type: 'delta', text: 'The ' },
      { type: 'delta', text: 'answer ' },
      { type: 'delta', text: 'is 42.' },
      { type: 'message', text: 'The answer is 42.', toolCalls: [] },
    ]);
  });

  it('reads events whose bytes arrive split mid-line, with CRLF line ends and keep-alive comments', async () => {
    const raw = `: keep-alive\r\n\r\ndata: ${JSON.stringify(chunk({ content: 'héllo ' }))}\r\n\r\ndata: ${JSON.stringify(chunk({ content: 'wörld' }))}\r\n\r\ndata: [DONE]\r\n\r\n`;
    const bytes = Buffer.from(raw);
    const { baseURL } = await chatServer(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // Cut inside "é" and "ö" (two bytes each) and between "\r" and "\n".
      let from = 0;
      for (const cut of [bytes.indexOf('é') + 1, bytes.indexOf('ö') + 1, bytes.lastIndexOf('\r')]) {
        res.write(bytes.subarray(from, cut));
        from = cut;
        await tick();
      }
      res.end(bytes.subarray(from));
    });
    expect(await collect({ baseURL, model: 'm' })).toEqual([
      { type: 'delta', text: 'héllo ' },
      { type: 'delta', text: 'wörld' },
      { type: 'message', text: 'héllo wörld', toolCalls: [] },
    ]);
  });

  it('assembles two parallel tool calls whose argument fragments interleave by index', async () => {
    const { baseURL } = await chatServer(
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
    expect(await collect({ baseURL, model: 'm' })).toEqual([
      {
        type: 'message',
        text: '',
        toolCalls: [
          { id: 'call_a', name: 'file_read', args: { path: 'src/a.ts' } },
          { id: 'call_b', name: 'echo', args: { text: 'hi there' } },
        ],
      },
    ]);
  });

  it('passes arguments that are not JSON on as { _raw } instead of failing, and empty ones as {}', async () => {
    const { baseURL } = await chatServer(
      streams([
        chunk(toolFragment(0, { id: 'call_a', name: 'echo', arguments: '{"text": "unterminated' })),
        chunk(toolFragment(1, { id: 'call_b', name: 'now', arguments: '' })),
      ]),
    );
    const [message] = await collect({ baseURL, model: 'm' });
    expect(message).toEqual({
      type: 'message',
      text: '',
      toolCalls: [
        { id: 'call_a', name: 'echo', args: { _raw: '{"text": "unterminated' } },
        { id: 'call_b', name: 'now', args: {} },
      ],
    });
  });

  it('keeps text and tool calls of one answer together', async () => {
    const { baseURL } = await chatServer(
      streams([
        chunk({ content: 'Let me look.' }),
        chunk(toolFragment(0, { id: 'call_a', name: 'echo', arguments: '{"text":"x"}' })),
      ]),
    );
    expect(await collect({ baseURL, model: 'm' })).toEqual([
      { type: 'delta', text: 'Let me look.' },
      { type: 'message', text: 'Let me look.', toolCalls: [{ id: 'call_a', name: 'echo', args: { text: 'x' } }] },
    ]);
  });

  it('assembles tool calls from servers that omit the fragment index', async () => {
    const fragment = (id: string | undefined, name: string | undefined, args: string) => ({
      tool_calls: [{ ...(id ? { id } : {}), function: { ...(name ? { name } : {}), arguments: args } }],
    });
    const { baseURL } = await chatServer(
      streams([
        chunk(fragment('call_a', 'echo', '{"text":')),
        chunk(fragment(undefined, undefined, '"a"}')),
        chunk(fragment('call_b', 'echo', '{"text":"b"}')),
      ]),
    );
    const [message] = await collect({ baseURL, model: 'm' });
    expect(message).toMatchObject({
      toolCalls: [
        { id: 'call_a', name: 'echo', args: { text: 'a' } },
        { id: 'call_b', name: 'echo', args: { text: 'b' } },
      ],
    });
  });

  it('accepts a stream that ends without [DONE]', async () => {
    const { baseURL } = await chatServer(streams([chunk({ content: 'ok' })], { done: false }));
    expect(await collect({ baseURL, model: 'm' })).toEqual([
      { type: 'delta', text: 'ok' },
      { type: 'message', text: 'ok', toolCalls: [] },
    ]);
  });

  it('fails with model_error when the server reports an error inside the stream', async () => {
    const { baseURL } = await chatServer(streams([chunk({ content: 'par' }), { error: { message: 'overloaded mid-answer' } }]));
    const error = await failure(collect({ baseURL, model: 'm' }));
    expect(error.code).toBe('model_error');
    expect(error.message).toContain('overloaded mid-answer');
  });

  it('fails with model_error when an event is not JSON', async () => {
    const { baseURL } = await chatServer(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: <html>oops</html>\n\n');
    });
    const error = await failure(collect({ baseURL, model: 'm' }));
    expect(error.code).toBe('model_error');
    expect(error.message).toContain('<html>oops</html>');
  });
});

describe('request', () => {
  it('sends the model, the mapped conversation, the tools, stream: true and the API key', async () => {
    const { baseURL, requests } = await chatServer(textReply('ok'));
    await collect(
      { baseURL: `${baseURL}/`, model: 'default-model', apiKey: 'sk-test', headers: { 'x-title': 'switchyard' }, temperature: 0.2 },
      modelRequest({
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'read a.ts and say hi' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [
              { id: 'call_1', name: 'file_read', args: { path: 'a.ts' } },
              { id: 'call_2', name: 'echo', args: { _raw: '{"text": "unterminated' } },
            ],
          },
          { role: 'tool', toolCallId: 'call_1', content: 'export const a = 1;' },
          { role: 'tool', toolCallId: 'call_2', content: '{"error":{"code":"invalid_input"}}' },
          { role: 'assistant', content: 'a.ts exports a.' },
          { role: 'user', content: 'thanks' },
        ],
        tools: [
          { name: 'file_read', description: 'Reads a file.', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
          { name: 'echo', description: 'Echoes.', parameters: { type: 'object' } },
        ],
      }),
    );
    const [{ headers, body }] = requests as [Received];
    expect(headers['authorization']).toBe('Bearer sk-test');
    expect(headers['content-type']).toBe('application/json');
    expect(headers['x-title']).toBe('switchyard');
    expect(body).toEqual({
      model: 'gpt-4o-mini',
      stream: true,
      temperature: 0.2,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'read a.ts and say hi' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'file_read', arguments: '{"path":"a.ts"}' } },
            // What the model sent, verbatim, even though it was not JSON.
            { id: 'call_2', type: 'function', function: { name: 'echo', arguments: '{"text": "unterminated' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'export const a = 1;' },
        { role: 'tool', tool_call_id: 'call_2', content: '{"error":{"code":"invalid_input"}}' },
        { role: 'assistant', content: 'a.ts exports a.' },
        { role: 'user', content: 'thanks' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'file_read', description: 'Reads a file.', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
        },
        { type: 'function', function: { name: 'echo', description: 'Echoes.', parameters: { type: 'object' } } },
      ],
    });
  });

  it('uses the configured model, and sends no tools, no temperature and no Authorization when none are set', async () => {
    const { baseURL, requests } = await chatServer(textReply('ok'));
    await collect({ baseURL, model: 'llama3.2' });
    const [{ headers, body }] = requests as [Received];
    expect(headers['authorization']).toBeUndefined();
    expect(body).toEqual({ model: 'llama3.2', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  });
});

describe('retries', () => {
  it('retries a 429 after its Retry-After, reporting attempt 1 with the reason', async () => {
    const { baseURL, requests } = await chatServer(
      answers(429, { error: { message: 'Rate limit reached for requests', type: 'requests' } }, { 'retry-after': '0' }),
      textReply('after the limit'),
    );
    const onRetry = vi.fn();
    // A base delay of a minute would time the test out: only Retry-After: 0 keeps it fast.
    const chunks = await collect({ baseURL, model: 'm', retryBaseDelayMs: 60_000 }, modelRequest({ onRetry }));
    expect(chunks.at(-1)).toEqual({ type: 'message', text: 'after the limit', toolCalls: [] });
    expect(requests).toHaveLength(2);
    expect(onRetry.mock.calls).toEqual([[1, 'HTTP 429: Rate limit reached for requests']]);
  });

  it('backs off exponentially on the engine clock when the server sends no Retry-After', async () => {
    const clock = new SimulatedClock();
    const { baseURL, requests } = await chatServer(answers(503, { error: { message: 'busy' } }), (res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html>502 Bad Gateway</html>');
      }, textReply('ok'));
    const onRetry = vi.fn();
    const done = collect({ baseURL, model: 'm', retryBaseDelayMs: 1000 }, modelRequest({ clock, onRetry }));

    await vi.waitFor(() => expect(onRetry).toHaveBeenCalledTimes(1), PATIENCE);
    clock.increment(999);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(requests).toHaveLength(1);
    clock.increment(1);
    await vi.waitFor(() => expect(onRetry).toHaveBeenCalledTimes(2), PATIENCE);
    expect(requests).toHaveLength(2);

    clock.increment(1999);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(requests).toHaveLength(2);
    clock.increment(1);
    expect((await done).at(-1)).toMatchObject({ type: 'message', text: 'ok' });
    expect(requests).toHaveLength(3);
    expect(onRetry.mock.calls).toEqual([
      [1, 'HTTP 503: busy'],
      [2, 'HTTP 502: <html>502 Bad Gateway</html>'],
    ]);
  });

  it('gives up with model_error after maxRetries + 1 answers of 500', async () => {
    const { baseURL, requests } = await chatServer(answers(500, { error: { message: 'The server had an error' } }));
    const onRetry = vi.fn();
    const error = await failure(collect({ baseURL, model: 'm', maxRetries: 2, retryBaseDelayMs: 1 }, modelRequest({ onRetry })));
    expect(requests).toHaveLength(3);
    expect(onRetry.mock.calls.map(([attempt]) => attempt)).toEqual([1, 2]);
    expect(error).toMatchObject({ code: 'model_error', status: 500 });
    expect(error.message).toContain('after 3 attempts');
    expect(error.message).toContain('HTTP 500: The server had an error');
  });

  it('does not retry a 400 and reports the server message', async () => {
    const { baseURL, requests } = await chatServer(
      answers(400, { error: { message: "The model 'gpt-9' does not exist", type: 'invalid_request_error', code: 'model_not_found' } }),
    );
    const onRetry = vi.fn();
    const error = await failure(collect({ baseURL, model: 'gpt-9', retryBaseDelayMs: 1 }, modelRequest({ onRetry })));
    expect(requests).toHaveLength(1);
    expect(onRetry).not.toHaveBeenCalled();
    expect(error).toMatchObject({ code: 'model_error', status: 400 });
    expect(error.message).toContain("HTTP 400: The model 'gpt-9' does not exist");
  });

  it.each([
    { status: 401, body: { error: { message: 'Incorrect API key provided' } }, says: 'HTTP 401: Incorrect API key provided (check the API key)' },
    { status: 404, body: { error: 'model "qwen3" not found, try pulling it first' }, says: 'HTTP 404: model "qwen3" not found, try pulling it first (check baseURL' },
    { status: 422, body: { object: 'error', message: 'tools[0] is invalid' }, says: 'HTTP 422: tools[0] is invalid' },
  ])('does not retry a $status and says $says', async ({ status, body, says }) => {
    const { baseURL, requests } = await chatServer(answers(status, body));
    const error = await failure(collect({ baseURL, model: 'm', retryBaseDelayMs: 1 }));
    expect(requests).toHaveLength(1);
    expect(error).toMatchObject({ code: 'model_error', status });
    expect(error.message).toContain(says);
  });

  it('retries a connection dropped before the first byte', async () => {
    const { baseURL, requests } = await chatServer((res) => void res.socket?.destroy(), textReply('reconnected'));
    const onRetry = vi.fn();
    const chunks = await collect({ baseURL, model: 'm', retryBaseDelayMs: 1 }, modelRequest({ onRetry }));
    expect(chunks.at(-1)).toMatchObject({ text: 'reconnected' });
    expect(requests).toHaveLength(2);
    expect(onRetry).toHaveBeenCalledWith(1, expect.stringMatching(/^network error: /));
  });

  it('fails with model_error when nothing listens, naming the cause', async () => {
    const { baseURL } = await chatServer(textReply('unused'));
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    const error = await failure(collect({ baseURL, model: 'm', maxRetries: 1, retryBaseDelayMs: 1 }));
    expect(error.code).toBe('model_error');
    expect(error.message).toMatch(/after 2 attempts; last: network error: .*ECONNREFUSED/);
  });
});

describe('abort', () => {
  it('stops reading mid-stream and rejects with code aborted while the server keeps the connection open', async () => {
    const { baseURL } = await chatServer((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(chunk({ content: 'thinking' }))}\n\n`);
    });
    const controller = new AbortController();
    const stream = openAICompatibleModel({ baseURL, model: 'm' }).complete(modelRequest({ signal: controller.signal }));
    const iterator = stream[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { type: 'delta', text: 'thinking' } });

    // The server never sends another byte nor closes: only the abort can end this read, so the
    // test needs no time bound (it would hang, and time out, if the abort were ignored).
    const pending = iterator.next();
    setTimeout(() => controller.abort(), 20);
    const error = await failure(pending);
    expect(error.code).toBe('aborted');
  });

  it('rejects with code aborted while waiting to retry', async () => {
    const { baseURL, requests } = await chatServer(answers(429, { error: { message: 'slow down' } }, { 'retry-after': '3600' }));
    const controller = new AbortController();
    const onRetry = vi.fn(() => setTimeout(() => controller.abort(), 10));
    const error = await failure(collect({ baseURL, model: 'm' }, modelRequest({ signal: controller.signal, onRetry })));
    expect(error.code).toBe('aborted');
    expect(requests).toHaveLength(1);
  });

  it('does not send a request when the signal is already aborted', async () => {
    const { baseURL, requests } = await chatServer(textReply('unused'));
    const error = await failure(collect({ baseURL, model: 'm' }, modelRequest({ signal: AbortSignal.abort() })));
    expect(error.code).toBe('aborted');
    expect(requests).toHaveLength(0);
  });
});

describe('server-sent events', () => {
  const stream = 'data: {"a":1}\n\n: comment\n\nevent: ping\ndata: two\ndata: lines\n\ndata:no-space\r\n\r\ndata: [DONE]\n\n';
  const expected = ['{"a":1}', 'two\nlines', 'no-space', '[DONE]'];

  async function* pieces(...parts: string[]): AsyncGenerator<Uint8Array> {
    for (const part of parts) yield new TextEncoder().encode(part);
  }

  async function dataOf(parts: string[]): Promise<string[]> {
    const out: string[] = [];
    for await (const data of serverSentEventData(pieces(...parts))) out.push(data);
    return out;
  }

  it('yields the same events wherever the bytes are split', async () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(await dataOf([stream.slice(0, cut), stream.slice(cut)])).toEqual(expected);
    }
  });

  it('yields an event left open at the end of the stream', async () => {
    expect(await dataOf(['data: last'])).toEqual(['last']);
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
    const { baseURL, requests } = await chatServer(
      answers(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '0' }),
      (res, received) => {
        const toolResult = received.body.messages.find((m) => m['role'] === 'tool');
        if (!toolResult) {
          return streams([
            chunk({ role: 'assistant', content: null }),
            chunk(toolFragment(0, { id: 'call_1', name: 'echo', arguments: '{"text":' })),
            chunk(toolFragment(0, { arguments: '"ping"}' })),
            chunk({}, 'tool_calls'),
          ])(res, received, 0);
        }
        return streams([chunk({ content: 'echo said ' }), chunk({ content: String(toolResult['content']) }), chunk({}, 'stop')])(res, received, 0);
      },
    );
    const engine = await newEngine({
      models: { openai: openAICompatibleModel({ baseURL, model: 'm', retryBaseDelayMs: 60_000 }) },
      config: { execution: { default_model: 'openai' } },
      tools: [echo],
    });

    const run = await engine.submit({ sessionId: 's', input: 'echo ping' });
    const result = await engine.wait(run.runId);
    expect(result).toMatchObject({ state: 'completed', output: 'echo said ping' });

    expect(requests).toHaveLength(3);
    const turn2 = requests[2]!.body;
    expect(turn2.tools).toContainEqual({ type: 'function', function: expect.objectContaining({ name: 'echo', description: 'Returns its text.' }) });
    expect(turn2.messages).toEqual(
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
      expect.objectContaining({ attempt: 1, reason: 'HTTP 429: Rate limit reached' }),
    ]);
    expect(history.filter((e) => e.type === 'model.delta').map((e) => e.text)).toEqual(['echo said ', 'ping']);
  });
});
