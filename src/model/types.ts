/*
 * The model seam: a provider turns a conversation into a stream of text deltas and one final
 * message with zero or more tool calls.
 */
import type { ToolCallRequest } from '../../machines/run.machine.js';
import type { Clock } from '../core/clock.js';

export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls?: ToolCallRequest[];
  toolCallId?: string;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input. */
  parameters: unknown;
}

export type ModelChunk =
  | { type: 'delta'; text: string }
  | { type: 'message'; text: string; toolCalls: { id?: string; name: string; args: unknown }[] };

export interface ModelRunContext {
  runId: string;
  sessionId: string;
  /** Model turn within the run, from 0. */
  turn: number;
  /** The run's input message. */
  input: string;
}

export interface ModelRequest {
  messages: Message[];
  tools: ToolSpec[];
  signal: AbortSignal;
  /** The engine's clock: latency a provider simulates runs on it. */
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
