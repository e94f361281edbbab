/*
 * One turn's reply, read from a provider package's stream parts: text deltas as they come,
 * then the message with its tool calls, reasoning, metadata, finish reason and usage. A stream
 * that reports an error, or ends before the model finished, fails the turn: an empty reply
 * never passes for a complete one.
 */
import type { LanguageModelV3FinishReason, LanguageModelV3StreamPart, LanguageModelV3Usage } from '@ai-sdk/provider';
import { ModelError } from './model-error.js';
import { parseToolArguments } from './tool-arguments.js';
import type { FinishReason, ModelChunk, ModelToolCall, ProviderMetadata, ReasoningPart, TokenUsage } from './types.js';

/** An error the provider package reported inside the stream (an `error` part). */
export class StreamErrorPart extends Error {
  override readonly name = 'StreamErrorPart';
  constructor(readonly error: unknown) {
    super('the model stream reported an error');
  }
}

export async function* readReply(stream: ReadableStream<LanguageModelV3StreamPart>): AsyncGenerator<ModelChunk> {
  const reader = stream.getReader();
  let text = '';
  let textMetadata: ProviderMetadata | undefined;
  const reasoning = new Map<string, ReasoningPart>();
  const toolCalls: ModelToolCall[] = [];
  let finish: Extract<LanguageModelV3StreamPart, { type: 'finish' }> | undefined;
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      const part = next.value;
      switch (part.type) {
        case 'text-start':
        case 'text-end':
          textMetadata = mergeMetadata(textMetadata, part.providerMetadata);
          break;
        case 'text-delta':
          textMetadata = mergeMetadata(textMetadata, part.providerMetadata);
          if (part.delta !== '') {
            text += part.delta;
            yield { type: 'delta', text: part.delta };
          }
          break;
        case 'reasoning-start':
        case 'reasoning-delta':
        case 'reasoning-end': {
          const block = reasoning.get(part.id) ?? { text: '' };
          if (part.type === 'reasoning-delta') block.text += part.delta;
          const metadata = mergeMetadata(block.providerMetadata, part.providerMetadata);
          reasoning.set(part.id, metadata ? { ...block, providerMetadata: metadata } : block);
          break;
        }
        case 'tool-call': {
          if (part.providerExecuted) break;
          const parsed = parseToolArguments(part.input);
          toolCalls.push({
            id: part.toolCallId,
            name: part.toolName,
            args: parsed.args,
            ...('malformed' in parsed ? { malformedArguments: parsed.malformed } : {}),
            ...(part.providerMetadata ? { providerMetadata: part.providerMetadata as ProviderMetadata } : {}),
          });
          break;
        }
        case 'finish':
          finish = part;
          break;
        case 'error':
          throw new StreamErrorPart(part.error);
        default:
          break;
      }
    }
    done = true;
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  if (!finish || (finish.finishReason.unified === 'other' && finish.finishReason.raw === undefined)) {
    throw new StreamErrorPart(new Error('the stream ended before the model finished (no finish reason)'));
  }
  if (finish.finishReason.unified === 'error') {
    throw new ModelError('model_error', `the model's reply failed (finish reason ${finish.finishReason.raw ?? 'error'})`);
  }
  const usage = usageOf(finish.usage);
  const thoughts = [...reasoning.values()];
  yield {
    type: 'message',
    text,
    toolCalls,
    finishReason: finishReasonOf(finish.finishReason),
    ...(usage ? { usage } : {}),
    ...(thoughts.length > 0 ? { reasoning: thoughts } : {}),
    ...(textMetadata ? { providerMetadata: textMetadata } : {}),
  };
}

function finishReasonOf(reason: LanguageModelV3FinishReason): FinishReason {
  switch (reason.unified) {
    case 'stop':
      return 'stop';
    case 'tool-calls':
      return 'tool_calls';
    case 'length':
      return 'length';
    case 'content-filter':
      return 'content_filter';
    default:
      return 'other';
  }
}

function usageOf(usage: LanguageModelV3Usage): TokenUsage | undefined {
  const input = usage.inputTokens.total;
  const output = usage.outputTokens.total;
  if (input === undefined && output === undefined) return undefined;
  const cached = usage.inputTokens.cacheRead;
  return { inputTokens: input ?? 0, outputTokens: (output ?? 0) + uncountedReasoning(usage), ...(cached ? { cachedTokens: cached } : {}) };
}

/**
 * xAI counts reasoning tokens outside `completion_tokens` (12 prompt + 2 completion + 340
 * reasoning = 354 total) where OpenAI counts them inside; they are output all the same.
 */
function uncountedReasoning(usage: LanguageModelV3Usage): number {
  const raw = usage.raw as { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown } | undefined;
  const reasoning = usage.outputTokens.reasoning ?? 0;
  if (!raw || reasoning === 0 || typeof raw.total_tokens !== 'number') return 0;
  return raw.total_tokens === Number(raw.prompt_tokens) + Number(raw.completion_tokens) + reasoning ? reasoning : 0;
}

function mergeMetadata(a: ProviderMetadata | undefined, b: unknown): ProviderMetadata | undefined {
  if (!b || typeof b !== 'object') return a;
  const out: ProviderMetadata = { ...a };
  for (const [provider, values] of Object.entries(b as ProviderMetadata)) {
    if (values && typeof values === 'object' && Object.keys(values).length > 0) out[provider] = { ...out[provider], ...values };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
