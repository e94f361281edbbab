/*
 * What goes out, checked against each provider's published request format: the settings, the
 * tool schemas in the provider's dialect, a conversation with tool history (never a
 * malformed argument text), and provider metadata from one turn sent back on the next.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { assistantMessageOf, runModelTurn } from '../../src/harness/model-turn.js';
import { anthropicModel } from '../../src/model/anthropic.js';
import { googleModel } from '../../src/model/google.js';
import { openAICompatibleModel } from '../../src/model/openai.js';
import type { Message, ModelProvider, ToolSpec } from '../../src/model/types.js';
import { collect, modelRequest, redirectingFetch, replay, replayServer } from './replay-server.js';
import {
  anthropicMessagesRequest,
  geminiGenerateContentRequest,
  geminiSchemaViolations,
  openAIChatRequest,
  refusal,
} from './request-formats.js';

/** A tool as the engine declares it: zod's JSON Schema, `$schema` and `additionalProperties` included. */
const fileRead: ToolSpec = {
  name: 'file_read',
  description: 'Reads a file.',
  parameters: z.toJSONSchema(
    z.object({
      path: z.string(),
      lines: z.number().int().optional(),
      mode: z.enum(['text', 'bytes']).nullable().optional(),
    }),
  ),
};

const history: Message[] = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'read a.ts and echo' },
  {
    role: 'assistant',
    content: '',
    reasoning: [{ text: 'I will read it.' }],
    toolCalls: [
      { id: 'call_1', name: 'file_read', args: { path: 'a.ts' } },
      // A call whose text did not parse: stored with {} (its result quotes the text).
      { id: 'call_2', name: 'file_read', args: {} },
    ],
  },
  { role: 'tool', toolCallId: 'call_1', content: 'export const a = 1;' },
  {
    role: 'tool',
    toolCallId: 'call_2',
    content:
      '{"error":{"code":"invalid_arguments","message":"the arguments of file_read are not a JSON object: \\"{\\\\\\"path\\\\\\": \\""}}',
  },
  // Empty assistant turns (a model that said nothing) are not sent: Anthropic refuses them.
  { role: 'assistant', content: '' },
  { role: 'assistant', content: 'a.ts exports a.' },
  { role: 'user', content: 'thanks' },
];

const textReply = replay('openai-text-then-tool-call.sse');

describe('OpenAI-compatible servers', () => {
  it('sends the settings, the tools without $schema, and the history with every argument a JSON object', async () => {
    const { origin, requests } = await replayServer(textReply);
    await collect(
      openAICompatibleModel({
        baseURL: `${origin}/v1/`,
        model: 'default-model',
        apiKey: 'sk-test',
        headers: { 'x-title': 'switchyard' },
        temperature: 0.2,
        maxTokens: 256,
        toolChoice: 'required',
        parallelToolCalls: false,
      }),
      modelRequest({ model: 'qwen3:8b', messages: history, tools: [fileRead] }),
    );
    const [{ headers, body, path }] = requests as [(typeof requests)[0]];
    expect(path).toBe('/v1/chat/completions');
    expect(headers['authorization']).toBe('Bearer sk-test');
    expect(headers['x-title']).toBe('switchyard');
    expect(refusal(openAIChatRequest.safeParse(body))).toBeUndefined();
    const { $schema: _meta, ...parameters } = fileRead.parameters as Record<string, unknown>;
    expect(body).toEqual({
      model: 'qwen3:8b',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      max_tokens: 256,
      tool_choice: 'required',
      parallel_tool_calls: false,
      tools: [{ type: 'function', function: { name: 'file_read', description: 'Reads a file.', parameters } }],
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'read a.ts and echo' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'file_read', arguments: '{"path":"a.ts"}' } },
            { id: 'call_2', type: 'function', function: { name: 'file_read', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'export const a = 1;' },
        { role: 'tool', tool_call_id: 'call_2', content: history[4]!.content },
        { role: 'assistant', content: 'a.ts exports a.' },
        { role: 'user', content: 'thanks' },
      ],
    });
  });

  it('sends no tools, settings or Authorization that were not set', async () => {
    const { origin, requests } = await replayServer(textReply);
    await collect(openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'llama3.2' }));
    const [{ headers, body }] = requests as [(typeof requests)[0]];
    expect(headers['authorization']).toBeUndefined();
    expect(body).toEqual({
      model: 'llama3.2',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
  });

  it('a format check that refuses what the old client sent: argument text that is not JSON', () => {
    const old = {
      model: 'm',
      stream: true,
      messages: [
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"path": ' } }],
        },
        { role: 'tool', tool_call_id: 'c', content: 'e' },
      ],
    };
    expect(refusal(openAIChatRequest.safeParse(old))).toMatch(/function.arguments must be a JSON object/);
  });

  it.each([
    { host: 'https://api.mistral.ai/v1', has: {}, lacks: ['stream_options', 'reasoning_content'] },
    { host: 'https://api.deepseek.com/v1', has: { reasoning_content: 'I will read it.' }, lacks: [] },
  ])('$host: gets what that server needs', async ({ host, has, lacks }) => {
    const { origin, requests } = await replayServer(textReply);
    await collect(
      openAICompatibleModel({ baseURL: host, model: 'm', fetch: redirectingFetch(host, `${origin}/v1`) }),
      modelRequest({ messages: history }),
    );
    const body = requests[0]!.body;
    expect(refusal(openAIChatRequest.safeParse(body))).toBeUndefined();
    const assistant = (body['messages'] as Record<string, unknown>[])[2]!;
    expect(assistant).toMatchObject(has);
    for (const key of lacks) expect(JSON.stringify(body)).not.toContain(`"${key}"`);
  });

  it("api.openai.com goes through OpenAI's own package: a reasoning model gets max_completion_tokens", async () => {
    const official = 'https://api.openai.com/v1';
    const { origin, requests } = await replayServer(textReply);
    await collect(
      openAICompatibleModel({
        baseURL: official,
        model: 'o4-mini',
        apiKey: 'sk-test',
        maxTokens: 100,
        parallelToolCalls: false,
        fetch: redirectingFetch(official, `${origin}/v1`),
      }),
      modelRequest({ messages: history, tools: [fileRead] }),
    );
    const body = requests[0]!.body;
    expect(refusal(openAIChatRequest.safeParse(body))).toBeUndefined();
    expect(body).toMatchObject({
      model: 'o4-mini',
      max_completion_tokens: 100,
      parallel_tool_calls: false,
      stream_options: { include_usage: true },
    });
    expect(body).not.toHaveProperty('max_tokens');
  });

  it("Gemini's OpenAI endpoint: tool schemas in Gemini's subset, and a call's thought signature sent back with it", async () => {
    const official = 'https://generativelanguage.googleapis.com/v1beta/openai';
    const { origin, requests } = await replayServer(replay('gemini-openai-tool-call-signature.sse'), textReply);
    const provider = openAICompatibleModel({
      baseURL: official,
      model: 'gemini-3-pro-preview',
      fetch: redirectingFetch(official, `${origin}/v1`),
    });
    const conversation = await twoTurns(
      provider,
      [fileRead],
      (call) => `sunny in ${String((call.args as { location: string }).location)}`,
    );

    const tools = requests[0]!.body['tools'] as { function: { parameters: unknown } }[];
    expect(geminiSchemaViolations(tools[0]!.function.parameters)).toEqual([]);
    expect(tools[0]!.function.parameters).toEqual({
      type: 'object',
      properties: {
        path: { type: 'string' },
        lines: { type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 },
        mode: { type: 'string', enum: ['text', 'bytes'], nullable: true },
      },
      required: ['path'],
    });
    const second = requests[1]!.body;
    expect(refusal(openAIChatRequest.safeParse(second))).toBeUndefined();
    expect((second['messages'] as unknown[])[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'function-call-14913553093356466312',
          type: 'function',
          function: { name: 'weather', arguments: '{"location":"Zürich"}' },
          extra_content: { google: { thought_signature: 'CiQB0e2Kb7fI2bM3SiYRrZyoPxMxC+Sk8mC5eXjbqNo4DsTqZvQ=' } },
        },
      ],
    });
    expect(conversation.at(-1)).toMatchObject({ role: 'tool', content: 'sunny in Zürich' });
  });

  it('a call cut by max_tokens goes back as {} beside its error, never as its text', async () => {
    const { origin, requests } = await replayServer(replay('openai-length-cut-tool-arguments.sse'), textReply);
    const provider = openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'm' });
    await twoTurns(provider, [fileRead], () => '{"error":{"code":"invalid_arguments"}}');
    const second = requests[1]!.body;
    expect(refusal(openAIChatRequest.safeParse(second))).toBeUndefined();
    expect(JSON.stringify(second)).not.toContain('notes/caf');
  });
});

describe('Anthropic', () => {
  it('sends the signed thinking block back before the tool_use, and the result right after', async () => {
    const { origin, requests } = await replayServer(
      replay('anthropic-thinking-tool-use.sse'),
      replay('anthropic-text.sse'),
    );
    const provider = anthropicModel({
      baseURL: `${origin}/v1`,
      apiKey: 'sk-ant-test',
      model: 'claude-sonnet-4-5',
      maxTokens: 1024,
      temperature: 0.5,
      parallelToolCalls: false,
    });
    await twoTurns(provider, [fileRead], () => '18 °C');

    const [first, second] = [requests[0]!, requests[1]!];
    expect(first.path).toBe('/v1/messages');
    expect(first.headers['x-api-key']).toBe('sk-ant-test');
    for (const { body } of [first, second]) expect(refusal(anthropicMessagesRequest.safeParse(body))).toBeUndefined();
    expect(first.body).toMatchObject({
      max_tokens: 1024,
      temperature: 0.5,
      tool_choice: { type: 'auto', disable_parallel_tool_use: true },
    });
    expect((first.body['tools'] as { input_schema: Record<string, unknown> }[])[0]!.input_schema).not.toHaveProperty(
      '$schema',
    );
    expect((second.body['messages'] as unknown[]).slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          {
            type: 'thinking',
            thinking: 'The user wants the weather in Paris. I should call get_weather.',
            signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds8ZR+eS1mWvj8rZvLO5tHTkGHA==',
          },
          {
            type: 'tool_use',
            id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6',
            name: 'get_weather',
            input: { location: 'Paris, France' },
          },
        ],
      },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', content: '18 °C' }],
      },
    ]);
  });

  it('sends a redacted thinking block back as it came', async () => {
    const { origin, requests } = await replayServer(
      replay('anthropic-redacted-thinking.sse'),
      replay('anthropic-text.sse'),
    );
    const provider = anthropicModel({ baseURL: `${origin}/v1`, apiKey: 'k', model: 'claude-sonnet-4-5' });
    const reply = await runModelTurn(turnArgs(provider, [{ role: 'user', content: 'salut' }], []));
    await collect(
      provider,
      modelRequest({
        messages: [
          { role: 'user', content: 'salut' },
          assistantMessageOf(reply),
          { role: 'user', content: 'et après ?' },
        ],
      }),
    );
    const second = requests[1]!.body;
    expect(refusal(anthropicMessagesRequest.safeParse(second))).toBeUndefined();
    expect((second['messages'] as { content: unknown[] }[])[1]!.content[0]).toEqual({
      type: 'redacted_thinking',
      data: expect.stringMatching(/^EmwKAhgB/),
    });
  });
});

describe('Google Gemini', () => {
  it('sends the function call back with its thought signature, then the function response', async () => {
    const { origin, requests } = await replayServer(
      replay('google-tool-call-thought-signature.sse'),
      replay('google-text-signed.sse'),
    );
    const provider = googleModel({
      baseURL: `${origin}/v1beta`,
      apiKey: 'g-key',
      model: 'gemini-3-pro-preview',
      maxTokens: 512,
      temperature: 0.1,
      toolChoice: { tool: 'weather' },
    });
    await twoTurns(
      provider,
      [
        fileRead,
        { name: 'weather', description: 'Weather.', parameters: z.toJSONSchema(z.object({ location: z.string() })) },
      ],
      () => 'foggy',
    );

    const [first, second] = [requests[0]!, requests[1]!];
    expect(first.path).toBe('/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse');
    expect(first.headers['x-goog-api-key']).toBe('g-key');
    for (const { body } of [first, second])
      expect(refusal(geminiGenerateContentRequest.safeParse(body))).toBeUndefined();
    expect(first.body).toMatchObject({ generationConfig: { maxOutputTokens: 512, temperature: 0.1 } });
    const contents = second.body['contents'] as { role: string; parts: Record<string, unknown>[] }[];
    expect(contents[1]).toEqual({
      role: 'model',
      // Gemini 3 takes the call's id back too (the package generates one; the API sent none).
      parts: [
        {
          functionCall: { id: expect.any(String), name: 'weather', args: { location: 'San Francisco' } },
          thoughtSignature: expect.stringMatching(/^EpEgCo4gAb4/),
        },
      ],
    });
    expect(contents[2]!.parts[0]).toMatchObject({ functionResponse: { name: 'weather' } });
  });

  it("sends a signed text part's signature back on the text", async () => {
    const { origin, requests } = await replayServer(replay('google-text-signed.sse'));
    const provider = googleModel({ baseURL: `${origin}/v1beta`, apiKey: 'k', model: 'gemini-3-pro-preview' });
    const reply = await runModelTurn(turnArgs(provider, [{ role: 'user', content: 'count' }], []));
    await collect(
      provider,
      modelRequest({
        messages: [{ role: 'user', content: 'count' }, assistantMessageOf(reply), { role: 'user', content: 'sure?' }],
      }),
    );
    const contents = requests[1]!.body['contents'] as { parts: Record<string, unknown>[] }[];
    expect(contents[1]!.parts).toEqual([{ text: reply.text, thoughtSignature: expect.stringMatching(/^EqsFCqgF/) }]);
  });
});

function turnArgs(provider: ModelProvider, messages: Message[], tools: ToolSpec[]) {
  return {
    provider,
    messages,
    tools,
    signal: new AbortController().signal,
    clock: new SimulatedClock(),
    context: { runId: 'r', sessionId: 's', turn: 0, input: '' },
    onDelta: () => {},
    onRetry: () => {},
  };
}

/** Turn 1, the tool results the engine would record, then turn 2 on the grown conversation. */
async function twoTurns(
  provider: ModelProvider,
  tools: ToolSpec[],
  result: (call: { args: unknown }) => string,
): Promise<Message[]> {
  const conversation: Message[] = [{ role: 'user', content: 'weather?' }];
  const reply = await runModelTurn(turnArgs(provider, conversation, tools));
  conversation.push(
    assistantMessageOf(reply),
    ...reply.toolCalls.map((call): Message => ({ role: 'tool', toolCallId: call.id, content: result(call) })),
  );
  await collect(provider, modelRequest({ messages: conversation, tools }));
  return conversation;
}
