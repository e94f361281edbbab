/** Why the model stopped: `length` (cut by max_tokens) and `content_filter` mean the reply is incomplete. */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other';

/** Tokens a provider reported for a turn, or summed over a run's turns. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  /** Input tokens read from the provider's prompt cache (part of inputTokens). */
  cachedTokens?: number;
}
