/*
 * The options every HTTP provider takes (OpenAI-compatible, Anthropic, Google), with their
 * defaults, and the retry policy they imply.
 */
import type { ToolChoice } from './language-model-provider.js';
import type { RetryOptions } from './retry-policy.js';

export interface ProviderOptions {
  /** API root, e.g. "https://api.openai.com/v1" or "http://localhost:11434/v1". */
  baseURL: string;
  /** Model sent when the run names none ("openai:gpt-4o-mini" names "gpt-4o-mini"). */
  model: string;
  /** The API key; no key header is sent when unset. */
  apiKey?: string;
  /** Extra request headers, applied over the defaults. */
  headers?: Record<string, string>;
  /** Retries after a 408, 409, 429, 5xx or a failed connection (default 3). */
  maxRetries?: number;
  /** First backoff in ms, doubled on every retry and jittered; a server's own wait wins (default 500). */
  retryBaseDelayMs?: number;
  /** The longest wait a server may ask for; a longer one fails the turn with `rate_limited` (default 60000). */
  maxRetryWaitMs?: number;
  /** The jitter source: a number in [0, 1) (default Math.random; tests pass a seeded one). */
  random?: () => number;
  /** The fetch to call (default: the global fetch). */
  fetch?: typeof fetch;
  /** Sampling temperature; the server's default when unset. */
  temperature?: number;
  /** Cap on the reply's tokens; the server's default when unset. */
  maxTokens?: number;
  /** Whether and which tool the model must call (default: the server's, "auto"). */
  toolChoice?: ToolChoice;
  /** false asks for at most one tool call per turn; the server's default when unset. */
  parallelToolCalls?: boolean;
}

export function retryOptionsOf(
  options: Pick<ProviderOptions, 'maxRetries' | 'retryBaseDelayMs' | 'maxRetryWaitMs' | 'random'>,
): RetryOptions {
  return {
    maxRetries: options.maxRetries ?? 3,
    baseDelayMs: options.retryBaseDelayMs ?? 500,
    maxWaitMs: options.maxRetryWaitMs ?? 60_000,
    random: options.random ?? Math.random,
  };
}

export function settingsOf(options: Pick<ProviderOptions, 'maxTokens' | 'temperature' | 'toolChoice'>) {
  return {
    ...(options.maxTokens !== undefined ? { maxOutputTokens: options.maxTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.toolChoice !== undefined ? { toolChoice: options.toolChoice } : {}),
  };
}

export function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
