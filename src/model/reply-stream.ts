/*
 * One turn's reply, read from a provider package's stream parts: text deltas as they come,
 * then the message with its tool calls, reasoning, metadata, finish reason and usage. A stream
 * that reports an error anywhere (in the parts, or in bytes only the witness read), or ends
 * before the model finished, fails the turn: an empty reply never passes for a complete one.
 * A server that says `[DONE]` has finished, finish reason or not. A verdict of the content
 * filter that flags the answer fails it, however late it came.
 */
import {
  InvalidResponseDataError,
  type LanguageModelV3FinishReason,
  type LanguageModelV3StreamPart,
  type LanguageModelV3Usage,
} from '@ai-sdk/provider';
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

/** What the server's bytes said beside the package's parts (`StreamWitness`), read once the stream ended. */
export interface ServerSaid {
  /** The server ended with `data: [DONE]`. */
  readonly saidDone: boolean;
  /** A content filter annotated the completion (Azure): its verdict may come after the finish. */
  readonly filterAnnotates: boolean;
  /** The categories the content filter flagged in the completion. */
  readonly flagged: string[];
  /** An error the server wrote that the package did not report. */
  serverMessage(): { message: string; status?: number } | undefined;
}

export async function* readReply(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  said: ServerSaid,
): AsyncGenerator<ModelChunk> {
  const reader = stream.getReader();
  let text = '';
  let textMetadata: ProviderMetadata | undefined;
  const reasoning = new Map<string, ReasoningPart>();
  const toolCalls: ModelToolCall[] = [];
  let finish: Extract<LanguageModelV3StreamPart, { type: 'finish' }> | undefined;
  let noFinishReason = false;
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
          // The package's own complaint; whether the stream was cut is decided below, by [DONE].
          if (isNoFinishReason(part.error)) noFinishReason = true;
          else throw new StreamErrorPart(part.error);
          break;
        default:
          break;
      }
    }
    done = true;
  } catch (error) {
    // A verdict that came before the stream broke is still the verdict.
    if (said.flagged.length > 0 && !(error instanceof StreamErrorPart)) throw flaggedError(said.flagged);
    throw error;
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  if (said.serverMessage()) throw new StreamErrorPart(new Error('the server wrote an error into the stream'));
  const reason =
    noFinishReason || !finish || (finish.finishReason.unified === 'other' && finish.finishReason.raw === undefined)
      ? undefined
      : finish.finishReason;
  // Azure's asynchronous filter: the verdict comes after the text, even after the finish.
  if (said.flagged.length > 0 && reason?.unified !== 'content-filter') throw flaggedError(said.flagged);
  if (!reason && !said.saidDone)
    throw new StreamErrorPart(new Error('the stream ended before the model finished (no finish reason, no [DONE])'));
  if (said.filterAnnotates && !said.saidDone)
    throw new StreamErrorPart(new Error("the stream ended before the content filter's verdict (no [DONE])"));
  if (reason?.unified === 'error')
    throw new ModelError('model_error', `the model's reply failed (finish reason ${reason.raw ?? 'error'})`);
  // Snowflake Cortex never sends a finish reason: its [DONE] is the finish.
  const finishReason = reason ? finishReasonOf(reason) : toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const usage = finish ? usageOf(finish.usage) : undefined;
  const thoughts = [...reasoning.values()];
  yield {
    type: 'message',
    text,
    toolCalls,
    finishReason,
    ...(usage ? { usage } : {}),
    ...(thoughts.length > 0 ? { reasoning: thoughts } : {}),
    ...(textMetadata ? { providerMetadata: textMetadata } : {}),
  };
}

function flaggedError(categories: string[]): ModelError {
  return new ModelError(
    'content_filtered',
    `the provider's content filter flagged the answer after it was streamed (${categories.join(', ')}: filtered); it is not kept in the conversation`,
  );
}

/** The compatible package's error part for a stream that ended without `finish_reason`. */
function isNoFinishReason(error: unknown): boolean {
  return (
    InvalidResponseDataError.isInstance(error) &&
    error.data === undefined &&
    /without a finish reason/.test(error.message)
  );
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
  return {
    inputTokens: input ?? 0,
    outputTokens: (output ?? 0) + uncountedReasoning(usage),
    ...(cached ? { cachedTokens: cached } : {}),
  };
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
    if (values && typeof values === 'object' && Object.keys(values).length > 0)
      out[provider] = { ...out[provider], ...values };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
