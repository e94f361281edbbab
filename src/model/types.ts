/*
 * The model seam: a provider turns a conversation into a stream of text deltas and one final
 * message with zero or more tool calls, how it finished and what it cost.
 */
import type { ToolCallRequest } from '../../machines/run.machine.js';
import type { Clock } from '../core/clock.js';
import type { FinishReason, TokenUsage } from '../core/model-usage.js';

/**
 * Data a provider attached to a reply that must travel back with it on the next turn, keyed
 * by provider (`google.thoughtSignature`, `anthropic.signature`, `anthropic.redactedData`).
 */
export type ProviderMetadata = Record<string, Record<string, JsonValue>>;

export type JsonValue = null | string | number | boolean | JsonValue[] | { [key: string]: JsonValue | undefined };

/** A tool call as the conversation keeps it: always replayable (arguments are a JSON object). */
export type MessageToolCall = ToolCallRequest & { providerMetadata?: ProviderMetadata };

/** Reasoning the provider requires back (Anthropic thinking blocks, Gemini thoughts), in reply order. */
export interface ReasoningPart {
  text: string;
  providerMetadata?: ProviderMetadata;
}

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: MessageToolCall[];
  toolCallId?: string;
  /** Assistant only: reasoning that came before the text and tool calls. */
  reasoning?: ReasoningPart[];
  /** Assistant only: metadata of the reply's text (Gemini signs text parts too). */
  providerMetadata?: ProviderMetadata;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input. */
  parameters: unknown;
}

export type { FinishReason, TokenUsage } from '../core/model-usage.js';

export interface ModelToolCall {
  id?: string;
  name: string;
  /** The parsed arguments; `{}` when the model's text was not a JSON object. */
  args: unknown;
  /**
   * The model's argument text when it was not a JSON object: the call fails with
   * `invalid_arguments` quoting it, and it is never sent back as arguments.
   */
  malformedArguments?: string;
  providerMetadata?: ProviderMetadata;
}

export type ModelChunk =
  | { type: 'delta'; text: string }
  | {
      type: 'message';
      text: string;
      toolCalls: ModelToolCall[];
      finishReason?: FinishReason;
      usage?: TokenUsage;
      reasoning?: ReasoningPart[];
      providerMetadata?: ProviderMetadata;
    };

export interface ModelRunContext {
  runId: string;
  sessionId: string;
  /** Model turn within the run, from 0. */
  turn: number;
  /** The run's input message. */
  input: string;
  /** Engine-clock time of the run's deadline: a retry that would wait past it is not attempted. */
  deadline?: number;
}

export interface ModelRequest {
  messages: Message[];
  tools: ToolSpec[];
  signal: AbortSignal;
  /** The engine's clock: latency a provider simulates and retry waits run on it. */
  clock?: Clock;
  context?: ModelRunContext;
  /** The model name after "provider:" in RunRequest.model, if one was given. */
  model?: string;
  /** Lets a provider report retries (`run.retrying`). */
  onRetry?(attempt: number, reason: string): void;
}

export interface ModelProvider {
  complete(request: ModelRequest): AsyncIterable<ModelChunk>;
}
