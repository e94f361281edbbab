/*
 * Anthropic's native Messages API, on @ai-sdk/anthropic. Thinking blocks (signed, or redacted)
 * are kept on the assistant message and sent back, as Anthropic requires within a tool loop.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { languageModelProvider } from './language-model-provider.js';
import { retryOptionsOf, settingsOf, withoutTrailingSlash, type ProviderOptions } from './provider-options.js';
import type { ModelProvider } from './types.js';

export type AnthropicModelOptions = Omit<ProviderOptions, 'baseURL'> & {
  /** API root (default "https://api.anthropic.com/v1"); "/messages" is appended. */
  baseURL?: string;
};

export function anthropicModel(options: AnthropicModelOptions): ModelProvider {
  const baseURL = withoutTrailingSlash(options.baseURL ?? 'https://api.anthropic.com/v1');
  const { apiKey, headers, parallelToolCalls } = options;
  return languageModelProvider({
    where: baseURL,
    defaultModel: options.model,
    model: (modelId, fetch) =>
      createAnthropic({ baseURL, ...(apiKey ? { apiKey } : {}), ...(headers ? { headers } : {}), fetch })(modelId),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    dialect: 'json-schema',
    prompt: { replayReasoning: true },
    settings: {
      ...settingsOf(options),
      ...(parallelToolCalls !== undefined
        ? { providerOptions: { anthropic: { disableParallelToolUse: !parallelToolCalls } } }
        : {}),
    },
    retry: retryOptionsOf(options),
  });
}
