/*
 * Real streams, replayed byte for byte from a server on 127.0.0.1: each recording whole, cut
 * into one-byte pieces (so the parser meets every boundary: mid-line, mid-UTF-8 character,
 * between CR and LF), and written by the server in pieces cut at such boundaries. Every way
 * of cutting must give the same reply or the same failure.
 *
 * Sources. "recorded" files hold the data lines of the AI SDK's own fixtures (vercel/ai,
 * `packages/<provider>/src/**\/__fixtures__/*.chunks.txt`, recorded from the live APIs),
 * framed as the provider frames them (`data: …\n\n` and `data: [DONE]` for OpenAI-style
 * servers, `event:` lines for Anthropic, CRLF for Google). "reconstructed" files follow the
 * provider's published format or a bug report quoting the server's bytes; each names its source.
 */
import { describe, expect, it } from 'vitest';
import { anthropicModel } from '../../src/model/anthropic.js';
import { googleModel } from '../../src/model/google.js';
import { openAICompatibleModel } from '../../src/model/openai.js';
import type { ModelChunk, ModelProvider } from '../../src/model/types.js';
import {
  awkwardCuts,
  collectUntilError,
  collect,
  rechunkingFetch,
  recording,
  redirectingFetch,
  replay,
  replayServer,
} from './replay-server.js';

type Kind = 'openai' | 'anthropic' | 'google' | 'gemini-openai';

interface Row {
  file: string;
  kind: Kind;
  /** The reply's text deltas, joined. */
  text?: string;
  /** What the final message must contain. */
  message?: Record<string, unknown>;
  /** How the turn fails instead. */
  error?: { code: string; status?: number; says: string };
}

const MISTRAL_THINKING =
  'Okay, the user is asking for the product of 17 and 23. I need to calculate this multiplication. ' +
  'Let me break it down:\n\n' +
  'First, I recall that 17 multiplied by 20 is 340 (since 17 * 20 = 340).\n' +
  'Then, I need to add 17 multiplied by 3, which is 51 (since 17 * 3 = 51).\n' +
  'Now, add these two results together: 340 + 51 = 391.\n\n' +
  'So, 17 * 23 = 391.';

const rows: Row[] = [
  // --- OpenAI-compatible servers -------------------------------------------------------------
  // OpenAI gpt-4o: text, then a tool call; usage alone in a last chunk with `choices: []`.
  // Recorded: vercel/ai packages/openai-compatible/src/chat/__fixtures__/issue-15789-step-1.chunks.txt
  {
    file: 'openai-text-then-tool-call.sse',
    kind: 'openai',
    text: 'PRE_TOOL',
    message: {
      toolCalls: [{ id: 'call_NZa7xqfefoaMI2YYHowVXVlU', name: 'weather', args: {} }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 58, outputTokens: 12 },
    },
  },
  // Azure OpenAI: a first chunk with `choices: []` and prompt_filter_results, content_filter_results on every choice.
  // Recorded: vercel/ai packages/openai-compatible/src/chat/__fixtures__/azure-text.chunks.txt
  {
    file: 'azure-content-filter-results.sse',
    kind: 'openai',
    text: 'Hello World',
    message: { finishReason: 'stop', usage: { inputTokens: 15, outputTokens: 5 } },
  },
  // Azure OpenAI: the content filter stops the answer (`finish_reason: "content_filter"`).
  // Reconstructed from Azure's "content filtering" docs (streaming annotations, finish_reason content_filter).
  {
    file: 'azure-content-filter-finish.sse',
    kind: 'openai',
    text: 'The battle',
    message: { finishReason: 'content_filter' },
  },
  // DeepSeek: `reasoning_content` deltas, then a tool call in fragments; cached tokens in usage.
  // Recorded: vercel/ai packages/deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt
  {
    file: 'deepseek-reasoning-tool-call.sse',
    kind: 'openai',
    text: '',
    message: {
      reasoning: [{ text: 'The user asks about the weather in San Francisco. I should use the weather tool.' }],
      toolCalls: [{ id: 'call_00_IhCAliIHtM9gKpgfqbBV9873', name: 'weather', args: { location: 'San Francisco' } }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 374, outputTokens: 61, cachedTokens: 256 },
    },
  },
  // xAI grok-3-mini: reasoning without `finish_reason` keys; reasoning tokens counted outside completion_tokens.
  // Recorded: vercel/ai packages/openai-compatible/src/chat/__fixtures__/xai-text.chunks.txt (its first 3 and
  // last 8 events; the 400 reasoning deltas between them are left out).
  {
    file: 'xai-reasoning-excerpt.sse',
    kind: 'openai',
    text: 'Grok',
    message: {
      reasoning: [{ text: 'First, theResponse: Grok' }],
      finishReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 342, cachedTokens: 11 },
    },
  },
  // Groq: the whole tool call in one chunk; usage under `x_groq` and top level.
  // Recorded: vercel/ai packages/groq/src/__fixtures__/groq-tool-call.chunks.txt
  {
    file: 'groq-tool-call.sse',
    kind: 'openai',
    text: '',
    message: {
      toolCalls: [{ id: 'tk85n1k4m', name: 'weather', args: {} }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 210, outputTokens: 15 },
    },
  },
  // Mistral magistral-style thinking: `delta.content` as an array of typed parts ("thinking", "text").
  // Recorded: vercel/ai packages/openai-compatible/src/chat/__fixtures__/issue-13703-mistral-thinking.chunks.txt
  {
    file: 'mistral-thinking-content-parts.sse',
    kind: 'openai',
    text: '391',
    message: {
      reasoning: [{ text: MISTRAL_THINKING }],
      finishReason: 'stop',
      usage: { inputTokens: 28, outputTokens: 139 },
    },
  },
  // Qwen (DashScope): continuation fragments carry `"id": ""` and no function name.
  // Recorded: vercel/ai packages/alibaba/src/__fixtures__/alibaba-tool-call.chunks.txt
  {
    file: 'qwen-tool-call-blank-continuation-ids.sse',
    kind: 'openai',
    text: '',
    message: {
      toolCalls: [{ id: 'call_eee11723464a4b9eb8cee71d', name: 'weather', args: { location: 'San Francisco' } }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 295, outputTokens: 22 },
    },
  },
  // Ollama: parallel tool calls that all say `index: 0`, told apart only by their ids.
  // Reconstructed from ollama/ollama#15457 (the stream it quotes) and vercel/ai#14277.
  {
    file: 'ollama-parallel-tool-calls-one-index.sse',
    kind: 'openai',
    text: '',
    message: {
      toolCalls: [
        { id: 'call_4kq1vbd2', name: 'file_write', args: { content: 'print("hello")', filePath: 'hello.py' } },
        { id: 'call_9zt0s7mx', name: 'file_write', args: { content: 'print("wörld 🌍")', filePath: 'world.py' } },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 171, outputTokens: 58 },
    },
  },
  // llama.cpp (2025 builds): the error in a nonstandard SSE field `error:` on a 200, then [DONE].
  // Reconstructed from ggml-org/llama.cpp#16109 (the server code that wrote it) and coddy-project/coddy-agent#106.
  {
    file: 'llamacpp-error-field.sse',
    kind: 'openai',
    error: { code: 'model_error', status: 400, says: 'the request exceeds the available context size' },
  },
  // llama.cpp (after #16109): `data: {"error": …}` after some text, no [DONE].
  // Reconstructed from ggml-org/llama.cpp#16109 and #19774 (the error body it quotes).
  {
    file: 'llamacpp-data-error-after-text.sse',
    kind: 'openai',
    text: 'Résumé: ',
    error: { code: 'model_error', status: 500, says: 'Context size has been exceeded.' },
  },
  // OpenRouter: `: OPENROUTER PROCESSING` comments between chunks; usage with cost in a last chunk.
  // Reconstructed from OpenRouter's API docs ("Streaming": SSE comments; "Usage accounting").
  {
    file: 'openrouter-processing-comments.sse',
    kind: 'openai',
    text: '東京は晴れです ☀️',
    message: { finishReason: 'stop', usage: { inputTokens: 14, outputTokens: 9 } },
  },
  // OpenRouter: an error inside a chunk (`error` beside `choices`, `finish_reason: "error"`) after text.
  // Reconstructed from OpenRouter's API docs ("Errors during streaming").
  {
    file: 'openrouter-midstream-error.sse',
    kind: 'openai',
    text: 'Hel',
    error: { code: 'model_error', says: 'Provider disconnected unexpectedly' },
  },
  // Gemini's OpenAI endpoint: a tool call without `index`, signed in `extra_content.google.thought_signature`,
  // finishing in the same chunk. Reconstructed from Google's "OpenAI compatibility" docs (thought signatures).
  {
    file: 'gemini-openai-tool-call-signature.sse',
    kind: 'gemini-openai',
    text: '',
    message: {
      toolCalls: [
        {
          id: 'function-call-14913553093356466312',
          name: 'weather',
          args: { location: 'Zürich' },
          providerMetadata: {
            switchyard: { thoughtSignature: 'CiQB0e2Kb7fI2bM3SiYRrZyoPxMxC+Sk8mC5eXjbqNo4DsTqZvQ=' },
          },
        },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 58, outputTokens: 17 },
    },
  },
  // vLLM (older servers): an error chunk `{"object": "error", …}` inside the stream.
  // Reconstructed from vLLM's OpenAI server (ErrorResponse in vllm/entrypoints/openai/protocol.py).
  {
    file: 'vllm-stream-object-error.sse',
    kind: 'openai',
    error: { code: 'model_error', status: 400, says: "This model's maximum context length is 4096 tokens" },
  },
  // A gateway that answers a stream request with plain JSON on a 200 (no event stream at all).
  // Reconstructed: one-api/new-api style gateways; the shape named in the issue ("unframed JSON").
  {
    file: 'unframed-json-error.json',
    kind: 'openai',
    error: { code: 'rate_limited', status: 429, says: '当前分组上游负载已饱和，请稍后再试' },
  },
  // An `event: error` whose data is not the OpenAI error shape.
  // Reconstructed from the SSE spec's event field as proposed for llama.cpp in ggml-org/llama.cpp#16109.
  {
    file: 'sse-event-error.sse',
    kind: 'openai',
    error: { code: 'model_error', status: 503, says: 'upstream connect error or disconnect/reset before headers' },
  },
  // OpenAI: `data: {"error": …}` mid-stream (the shape openai-python's Stream raises on).
  // Reconstructed from openai/openai-python src/openai/_streaming.py and OpenAI's 500 message.
  {
    file: 'openai-data-error.sse',
    kind: 'openai',
    text: 'Sure — ',
    error: { code: 'model_error', says: 'The server had an error while processing your request' },
  },
  // OpenAI: max_tokens cuts the tool call's arguments mid-string (`finish_reason: "length"`).
  // Reconstructed from OpenAI's Chat Completions streaming format.
  {
    file: 'openai-length-cut-tool-arguments.sse',
    kind: 'openai',
    text: '',
    message: {
      toolCalls: [
        {
          id: 'call_Wq8nK2',
          name: 'file_write',
          args: {},
          malformedArguments: '{"path":"notes/café.md","content":"# Menu',
        },
      ],
      finishReason: 'length',
      usage: { inputTokens: 310, outputTokens: 16, cachedTokens: 256 },
    },
  },
  // Snowflake Cortex: no `finish_reason` on any chunk (every streamed turn), usage in a last chunk, then [DONE].
  // Reconstructed from the Cortex REST API's stream (`delta.content_list`) and truera/trulens#2240
  // ("finish_reason at the moment is not returned from Cortex REST API").
  {
    file: 'snowflake-cortex-no-finish-reason.sse',
    kind: 'openai',
    text: 'Snowflake stores data in micro-partitions of 50–500 MB (uncompressed).',
    message: { finishReason: 'stop', usage: { inputTokens: 18, outputTokens: 21 } },
  },
  // Azure OpenAI, asynchronous filter: deltas without verdicts, `finish_reason: "stop"`, then the
  // annotation chunk with the verdict (`violence.filtered: true`), usage, [DONE].
  // Reconstructed from Azure's "content streaming" docs (Asynchronous Filter: annotations after the content).
  {
    file: 'azure-async-filter-after-stop.sse',
    kind: 'openai',
    text: 'To pick the lock, first',
    error: { code: 'content_filtered', says: 'flagged the answer after it was streamed (violence: filtered)' },
  },
  // OpenAI: a refusal streams in `delta.refusal`, and finishes with "stop".
  // Reconstructed from OpenAI's structured outputs docs ("Refusals").
  {
    file: 'openai-refusal.sse',
    kind: 'openai',
    text: "I'm sorry, I can't help with that.",
    message: { finishReason: 'content_filter' },
  },

  // --- Anthropic Messages API ------------------------------------------------------------------
  // Recorded: vercel/ai packages/anthropic/src/__fixtures__/anthropic-text.chunks.txt (with its `ping`).
  {
    file: 'anthropic-text.sse',
    kind: 'anthropic',
    text: "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
    message: { finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 30 } },
  },
  // A signed thinking block, then a tool_use whose input arrives as input_json_delta.
  // Reconstructed from Anthropic's docs ("Extended thinking", streaming; "Tool use", streaming).
  {
    file: 'anthropic-thinking-tool-use.sse',
    kind: 'anthropic',
    text: '',
    message: {
      reasoning: [
        {
          text: 'The user wants the weather in Paris. I should call get_weather.',
          providerMetadata: {
            anthropic: {
              signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds8ZR+eS1mWvj8rZvLO5tHTkGHA==',
            },
          },
        },
      ],
      toolCalls: [{ id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', args: { location: 'Paris, France' } }],
      finishReason: 'tool_calls',
      usage: { inputTokens: 2520, outputTokens: 89, cachedTokens: 2048 },
    },
  },
  // A redacted_thinking block (data only), then text.
  // Reconstructed from Anthropic's docs ("Extended thinking": thinking redaction).
  {
    file: 'anthropic-redacted-thinking.sse',
    kind: 'anthropic',
    text: 'Bonjour à vous ! 👋',
    message: {
      reasoning: [{ text: '', providerMetadata: { anthropic: { redactedData: expect.stringMatching(/^EmwKAhgB/) } } }],
      finishReason: 'stop',
    },
  },
  // `event: error` (overloaded_error) after the answer began.
  // Reconstructed from Anthropic's docs ("Streaming Messages": error events).
  {
    file: 'anthropic-overloaded-midstream.sse',
    kind: 'anthropic',
    text: 'Let me think',
    error: { code: 'model_error', says: 'Overloaded' },
  },
  // stop_reason max_tokens. Reconstructed from Anthropic's docs ("Handling stop reasons").
  {
    file: 'anthropic-max-tokens.sse',
    kind: 'anthropic',
    text: 'Here is the first part of a very long',
    message: { finishReason: 'length' },
  },

  // --- Google Gemini API -----------------------------------------------------------------------
  // Text, then an empty text part carrying the thought signature. CRLF framing.
  // Recorded: vercel/ai packages/google/src/__fixtures__/google-text.chunks.txt
  {
    file: 'google-text-signed.sse',
    kind: 'google',
    text: 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y',
    message: {
      finishReason: 'stop',
      usage: { inputTokens: 9, outputTokens: 208 },
      providerMetadata: { google: { thoughtSignature: expect.stringMatching(/^EqsFCqgF/) } },
    },
  },
  // Gemini 3: a functionCall part signed with a thoughtSignature (no call id).
  // Recorded: vercel/ai packages/google/src/__fixtures__/google-tool-call-gemini3.chunks.txt
  {
    file: 'google-tool-call-thought-signature.sse',
    kind: 'google',
    text: '',
    message: {
      toolCalls: [
        {
          id: expect.any(String),
          name: 'weather',
          args: { location: 'San Francisco' },
          providerMetadata: { google: { thoughtSignature: expect.stringMatching(/^EpEgCo4gAb4/) } },
        },
      ],
      finishReason: 'tool_calls',
      usage: { inputTokens: 29, outputTokens: 819 },
    },
  },
  // The prompt is blocked: promptFeedback.blockReason and no candidate at all.
  // Recorded: vercel/ai packages/google/src/__fixtures__/issue-19758-prompt-block.chunks.txt
  { file: 'google-prompt-blocked.sse', kind: 'google', text: '', message: { finishReason: 'content_filter' } },
  // finishReason MAX_TOKENS. Reconstructed from the Gemini API reference (Candidate.finishReason).
  {
    file: 'google-max-tokens.sse',
    kind: 'google',
    text: 'Die Antwort lautet: Größe ist',
    message: { finishReason: 'length' },
  },
  // An error object in place of a chunk after the answer began (503 UNAVAILABLE).
  // Reconstructed from the Gemini API's error format (google.rpc.Status in an SSE data line).
  {
    file: 'google-midstream-error.sse',
    kind: 'google',
    text: 'Sure, here',
    error: { code: 'model_error', status: 503, says: 'The model is overloaded. Please try again later.' },
  },
  // A quota error written after two chunks as pretty-printed JSON, without `data:` framing, then the connection closed.
  // Reconstructed from maximhq/bifrost#5262 (Gemini and Vertex abort a stream with an unframed JSON error, 429
  // RESOURCE_EXHAUSTED among them) and the Gemini API's error format (google.rpc.Status).
  {
    file: 'google-unframed-error-after-chunks.sse',
    kind: 'google',
    text: 'Die drei größten Städte sind Berlin, Hamburg',
    error: { code: 'model_error', status: 429, says: 'Resource has been exhausted (e.g. check quota).' },
  },
];

function providerFor(kind: Kind, origin: string, fetchImpl: typeof fetch): ModelProvider {
  const common = { model: 'm', maxRetries: 0, fetch: fetchImpl };
  switch (kind) {
    case 'openai':
      return openAICompatibleModel({ ...common, baseURL: `${origin}/v1` });
    case 'gemini-openai': {
      const official = 'https://generativelanguage.googleapis.com/v1beta/openai';
      return openAICompatibleModel({
        ...common,
        baseURL: official,
        fetch: redirectingFetch(official, `${origin}/v1`, fetchImpl),
      });
    }
    case 'anthropic':
      return anthropicModel({ ...common, baseURL: `${origin}/v1`, apiKey: 'sk-ant-test' });
    case 'google':
      return googleModel({ ...common, baseURL: `${origin}/v1beta`, apiKey: 'g-test' });
  }
}

const ways = [
  { way: 'whole', fetch: () => fetch, cut: false },
  { way: 'in one-byte pieces', fetch: () => rechunkingFetch(1), cut: false },
  { way: 'written cut at awkward bytes', fetch: () => fetch, cut: true },
];

function textOf(chunks: ModelChunk[]): string {
  return chunks.flatMap((c) => (c.type === 'delta' ? [c.text] : [])).join('');
}

describe.each(rows)('$file', (row) => {
  it.each(ways)('$way', async ({ fetch: fetchOf, cut }) => {
    const body = recording(row.file);
    const { origin } = await replayServer(replay(row.file, cut ? { cuts: awkwardCuts(body) } : {}));
    const provider = providerFor(row.kind, origin, fetchOf());
    if (row.error) {
      const { chunks, error } = await collectUntilError(provider);
      expect(textOf(chunks)).toBe(row.text ?? '');
      expect(error.code).toBe(row.error.code);
      if (row.error.status !== undefined) expect(error.status).toBe(row.error.status);
      expect(error.message).toContain(row.error.says);
      return;
    }
    const chunks = await collect(provider);
    const message = chunks.at(-1);
    expect(message?.type).toBe('message');
    expect(textOf(chunks)).toBe(row.text);
    expect(message).toMatchObject({ type: 'message', text: row.text, toolCalls: [], ...row.message });
  });
});

it('covers at least 25 distinct shapes, every provider family among them', () => {
  expect(rows.length).toBeGreaterThanOrEqual(25);
  expect(new Set(rows.map((r) => r.file)).size).toBe(rows.length);
  for (const provider of [
    'openai',
    'azure',
    'deepseek',
    'xai',
    'groq',
    'mistral',
    'qwen',
    'ollama',
    'llamacpp',
    'openrouter',
    'gemini-openai',
    'snowflake',
    'anthropic',
    'google',
  ]) {
    expect(
      rows.some((r) => r.file.startsWith(provider)),
      provider,
    ).toBe(true);
  }
});

/**
 * The same servers' streams cut short — the response ended cleanly where a write stopped, or the
 * connection closed under it — and error shapes written after a finished stream. A stream
 * without its end (no finish reason and no [DONE], a content filter's verdict not yet sent)
 * never passes for a complete reply; an error anywhere fails the turn in the server's words.
 */
interface Variant {
  name: string;
  kind: Kind;
  body: () => Buffer;
  cutConnection?: boolean;
  text: string;
  error: { code: string; status?: number; says: string };
}

/** The recording up to (not including) the first occurrence of `marker`. */
function before(file: string, marker: string): Buffer {
  const body = recording(file);
  const at = body.indexOf(marker);
  if (at < 0) throw new Error(`${marker} is not in ${file}`);
  return body.subarray(0, at);
}

const UNFRAMED_GOOGLE_ERROR = recording('google-unframed-error-after-chunks.sse').subarray(
  recording('google-unframed-error-after-chunks.sse').indexOf('\r\n\r\n{') + 4,
);
const SNOWFLAKE_TEXT = 'Snowflake stores data in micro-partitions of 50–500 MB (uncompressed).';

const variants: Variant[] = [
  {
    name: 'Snowflake Cortex ended before [DONE]',
    kind: 'openai',
    body: () => before('snowflake-cortex-no-finish-reason.sse', 'data: [DONE]'),
    text: SNOWFLAKE_TEXT,
    error: { code: 'model_error', says: 'the stream ended before the model finished (no finish reason, no [DONE])' },
  },
  {
    name: 'Snowflake Cortex ended mid-event',
    kind: 'openai',
    body: () => before('snowflake-cortex-no-finish-reason.sse', ' of 50–500 MB","content_list"'),
    text: 'Snowflake stores data in micro-partitions',
    error: { code: 'model_error', says: 'no finish reason, no [DONE]' },
  },
  {
    name: 'Snowflake Cortex, the connection closed before [DONE]',
    kind: 'openai',
    body: () => before('snowflake-cortex-no-finish-reason.sse', 'data: [DONE]'),
    cutConnection: true,
    text: SNOWFLAKE_TEXT,
    error: { code: 'model_error', says: 'broke off' },
  },
  {
    name: "Azure's asynchronous filter, ended after the finish but before the verdict",
    kind: 'openai',
    body: () => before('azure-async-filter-after-stop.sse', 'data: {"choices":[{"content_filter_offsets"'),
    text: 'To pick the lock, first',
    error: { code: 'model_error', says: "the stream ended before the content filter's verdict (no [DONE])" },
  },
  {
    name: "Azure's asynchronous filter, the connection closed after the verdict",
    kind: 'openai',
    body: () => before('azure-async-filter-after-stop.sse', 'data: {"choices":[],"created":1751443200'),
    cutConnection: true,
    text: 'To pick the lock, first',
    error: { code: 'content_filtered', says: 'violence: filtered' },
  },
  {
    name: "Google's unframed error, cut inside the JSON",
    kind: 'google',
    body: () => before('google-unframed-error-after-chunks.sse', '    "message"'),
    text: 'Die drei größten Städte sind Berlin, Hamburg',
    error: { code: 'model_error', says: '"code": 429' },
  },
  {
    name: "Google's unframed error after a finished stream (finishReason MAX_TOKENS)",
    kind: 'google',
    body: () => Buffer.concat([recording('google-max-tokens.sse'), UNFRAMED_GOOGLE_ERROR]),
    text: 'Die Antwort lautet: Größe ist',
    error: { code: 'model_error', status: 429, says: 'Resource has been exhausted (e.g. check quota).' },
  },
  {
    name: "Google's error on one unframed line after a finished stream (finishReason STOP)",
    kind: 'google',
    body: () =>
      Buffer.concat([
        recording('google-text-signed.sse'),
        Buffer.from('{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}\n'),
      ]),
    text: 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y',
    error: { code: 'model_error', status: 500, says: 'An internal error has occurred.' },
  },
];

describe.each(variants)('$name', (variant) => {
  it.each(ways)('$way', async ({ fetch: fetchOf, cut }) => {
    const body = variant.body();
    const { origin } = await replayServer({
      headers: { 'content-type': 'text/event-stream' },
      body,
      ...(cut ? { cuts: awkwardCuts(body) } : {}),
      ...(variant.cutConnection ? { cutConnection: true } : {}),
    });
    const { chunks, error } = await collectUntilError(providerFor(variant.kind, origin, fetchOf()));
    expect(textOf(chunks)).toBe(variant.text);
    expect(error.code).toBe(variant.error.code);
    if (variant.error.status !== undefined) expect(error.status).toBe(variant.error.status);
    expect(error.message).toContain(variant.error.says);
  });
});
