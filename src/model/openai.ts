/*
 * The OpenAI-compatible provider: Chat Completions with tools and streaming over HTTP, the
 * dialect OpenAI, vLLM, Ollama, llama.cpp server, LM Studio and OpenRouter all speak. A 429,
 * a 5xx or a connection failure before the first byte is retried with backoff on the engine
 * clock, and every retry is reported (`run.retrying`).
 */
import { z } from 'zod';
import { sleep, systemClock } from '../core/clock.js';
import { serverSentEventData } from './sse.js';
import type { Message, ModelChunk, ModelProvider, ModelRequest, ToolSpec } from './types.js';

export interface OpenAICompatibleModelOptions {
  /** API root, e.g. "https://api.openai.com/v1" or "http://localhost:11434/v1"; "/chat/completions" is appended. */
  baseURL: string;
  /** Model sent when the run names none ("openai:gpt-4o-mini" names "gpt-4o-mini"). */
  model: string;
  /** Sent as "Authorization: Bearer <apiKey>"; no Authorization header when unset. */
  apiKey?: string;
  /** Extra request headers, applied over the defaults. */
  headers?: Record<string, string>;
  /** Retries after a 429, a 5xx or a connection failure before the first byte (default 3). */
  maxRetries?: number;
  /** First backoff in ms, doubled on every retry; a Retry-After header wins (default 500). */
  retryBaseDelayMs?: number;
  /** The fetch to call (default: the global fetch). */
  fetch?: typeof fetch;
  /** Sampling temperature; the server's default when unset. */
  temperature?: number;
}

export class OpenAIModelError extends Error {
  override readonly name = 'OpenAIModelError';
  constructor(
    readonly code: 'model_error' | 'aborted',
    message: string,
    /** HTTP status of the failed response, when there was one. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export function openAICompatibleModel(opts: OpenAICompatibleModelOptions): ModelProvider {
  const url = `${opts.baseURL.replace(/\/+$/, '')}/chat/completions`;
  const maxRetries = opts.maxRetries ?? 3;
  const retryBaseDelayMs = opts.retryBaseDelayMs ?? 500;
  // Resolved per call, so a fetch installed after construction (a test's stub) is used.
  const doFetch = opts.fetch ?? ((input: string, init: RequestInit) => fetch(input, init));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
    ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
    ...opts.headers,
  };

  return {
    async *complete(request: ModelRequest): AsyncIterable<ModelChunk> {
      const { signal } = request;
      const body = JSON.stringify(chatCompletionBody(opts, request));
      for (let attempt = 0; ; attempt++) {
        let failure: Failure;
        try {
          const response = await doFetch(url, { method: 'POST', headers, body, signal });
          if (response.ok) {
            yield* streamReply(response, signal);
            return;
          }
          failure = await failureOf(response);
        } catch (error) {
          if (signal.aborted) throw abortedError();
          if (error instanceof OpenAIModelError) throw error;
          failure = { retryable: true, reason: `network error: ${describeError(error)}` };
        }
        if (signal.aborted) throw abortedError();
        if (!failure.retryable) {
          const hint = hintFor(failure.status);
          throw new OpenAIModelError('model_error', `model request to ${url} failed with ${failure.reason}${hint}`, failure.status);
        }
        if (attempt >= maxRetries) {
          throw new OpenAIModelError(
            'model_error',
            `model request to ${url} failed after ${attempt + 1} attempts; last: ${failure.reason}`,
            failure.status,
          );
        }
        request.onRetry?.(attempt + 1, failure.reason);
        try {
          await sleep(request.clock ?? systemClock, failure.retryAfterMs ?? retryBaseDelayMs * 2 ** attempt, signal);
        } catch {
          throw abortedError();
        }
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Request

type WireToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

type WireMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: WireToolCall[] }
  | { role: 'tool'; content: string; tool_call_id: string };

function chatCompletionBody(opts: OpenAICompatibleModelOptions, request: ModelRequest) {
  return {
    model: request.model ? request.model : opts.model,
    messages: request.messages.map(wireMessage),
    ...(request.tools.length > 0 ? { tools: request.tools.map(wireTool) } : {}),
    ...(opts.temperature !== undefined ? { temperature: opts.temperature } : {}),
    stream: true,
  };
}

function wireMessage(message: Message): WireMessage {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'tool':
      return { role: 'tool', content: message.content, tool_call_id: message.toolCallId ?? '' };
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        content: message.content === '' ? null : message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: argumentsText(call.args) },
        })),
      };
    }
  }
}

function wireTool(tool: ToolSpec) {
  return { type: 'function' as const, function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

/** Arguments that did not parse went on as `{ _raw }`; the model gets back exactly what it sent. */
function argumentsText(args: unknown): string {
  const raw = rawArguments.safeParse(args);
  return raw.success ? raw.data._raw : JSON.stringify(args ?? {});
}

const rawArguments = z.object({ _raw: z.string() }).strict();

// ---------------------------------------------------------------------------------------------
// Response

const toolCallFragment = z.object({
  index: z.number().int().nonnegative().optional(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});
type ToolCallFragment = z.infer<typeof toolCallFragment>;

const completionChunk = z.object({
  choices: z
    .array(
      z.object({
        delta: z.object({ content: z.string().nullish(), tool_calls: z.array(toolCallFragment).nullish() }).nullish(),
      }),
    )
    .nullish(),
  error: z.unknown().optional(),
});

async function* streamReply(response: Response, signal: AbortSignal): AsyncGenerator<ModelChunk> {
  if (!response.body) throw new OpenAIModelError('model_error', 'the model server answered 200 with no body');
  let text = '';
  let events = 0;
  const calls = new ToolCallAssembler();
  for await (const data of serverSentEventData(bodyBytes(response.body, signal))) {
    events++;
    if (data.trim() === '[DONE]') break;
    const chunk = parseChunk(data);
    if (chunk.error !== undefined) {
      throw new OpenAIModelError('model_error', `the model server reported an error mid-stream: ${errorMessageOf({ error: chunk.error }) ?? truncate(data)}`);
    }
    const delta = chunk.choices?.[0]?.delta;
    if (delta?.content) {
      text += delta.content;
      yield { type: 'delta', text: delta.content };
    }
    for (const fragment of delta?.tool_calls ?? []) calls.add(fragment);
  }
  if (events === 0) throw new OpenAIModelError('model_error', 'the model server closed the stream without sending any event');
  yield { type: 'message', text, toolCalls: calls.finish() };
}

function parseChunk(data: string): z.infer<typeof completionChunk> {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new OpenAIModelError('model_error', `the model server streamed an event that is not JSON: ${truncate(data)}`);
  }
  const chunk = completionChunk.safeParse(json);
  if (!chunk.success) {
    throw new OpenAIModelError('model_error', `the model server streamed an event that is not a chat completion chunk: ${truncate(data)}`);
  }
  return chunk.data;
}

/**
 * The body's bytes; an abort cancels the read in flight. A failure before the first byte is
 * rethrown as is (the caller may retry); after it, deltas were already yielded, so it ends the
 * turn as a model_error.
 */
async function* bodyBytes(body: ReadableStream<Uint8Array>, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', cancel, { once: true });
  let received = false;
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        if (signal.aborted) throw abortedError();
        if (!received) throw error;
        throw new OpenAIModelError('model_error', `the model server's stream broke off: ${describeError(error)}`);
      }
      if (signal.aborted) throw abortedError();
      if (next.done) return;
      received = true;
      yield next.value;
    }
  } finally {
    signal.removeEventListener('abort', cancel);
    cancel();
  }
}

/** Streamed tool calls arrive as fragments keyed by `index`: id and name first, then pieces of the arguments. */
class ToolCallAssembler {
  private readonly calls = new Map<number, { id?: string; name: string; args: string }>();
  private lastIndex = -1;

  add(fragment: ToolCallFragment): void {
    const index = fragment.index ?? this.indexWithoutKey(fragment);
    const call = this.calls.get(index) ?? { name: '', args: '' };
    if (fragment.id && !call.id) call.id = fragment.id;
    if (fragment.function?.name && !call.name) call.name = fragment.function.name;
    call.args += fragment.function?.arguments ?? '';
    this.calls.set(index, call);
    this.lastIndex = index;
  }

  finish(): { id?: string; name: string; args: unknown }[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, call]) => ({ ...(call.id ? { id: call.id } : {}), name: call.name, args: parseArguments(call.args) }));
  }

  // Some servers omit `index`: a fragment with a new id starts a call, others continue the last.
  private indexWithoutKey(fragment: ToolCallFragment): number {
    const last = this.calls.get(this.lastIndex);
    const startsCall = !last || (!!fragment.id && !!last.id && fragment.id !== last.id);
    return startsCall ? Math.max(-1, ...this.calls.keys()) + 1 : this.lastIndex;
  }
}

/** Invalid JSON is handed on as `{ _raw }`, so the tool's input validation tells the model what went wrong. */
function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { _raw: text };
  }
}

// ---------------------------------------------------------------------------------------------
// Failures

interface Failure {
  retryable: boolean;
  /** For run.retrying and the final error: "HTTP 429: Rate limit reached", "network error: ...". */
  reason: string;
  status?: number;
  retryAfterMs?: number;
}

async function failureOf(response: Response): Promise<Failure> {
  const body = await response.text().catch(() => '');
  const detail = errorMessageOf(parseJson(body)) ?? truncate(body.trim());
  return {
    retryable: response.status === 429 || response.status >= 500,
    reason: `HTTP ${response.status}${detail ? `: ${detail}` : ''}`,
    status: response.status,
    retryAfterMs: retryAfterMsOf(response.headers),
  };
}

// OpenAI and most servers send {error: {message}}; some send {error: "..."} or {message}.
const errorShape = z.union([
  z.object({ error: z.object({ message: z.string() }) }).transform((e) => e.error.message),
  z.object({ error: z.string() }).transform((e) => e.error),
  z.object({ message: z.string() }).transform((e) => e.message),
]);

function errorMessageOf(value: unknown): string | undefined {
  const parsed = errorShape.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** Retry-After in seconds or as an HTTP date, or OpenAI's retry-after-ms. */
function retryAfterMsOf(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms)) return Math.max(0, ms);
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  // An HTTP date is wall-clock time, whatever clock the engine runs on.
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function hintFor(status: number | undefined): string {
  if (status === 401 || status === 403) return ' (check the API key)';
  if (status === 404) return ' (check baseURL, which usually ends in /v1, and the model name)';
  return '';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function abortedError(): OpenAIModelError {
  return new OpenAIModelError('aborted', 'the model request was aborted');
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // fetch reports "fetch failed" and puts the reason (ECONNREFUSED, ...) in the cause.
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}

function truncate(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}
