/*
 * Google's native Gemini API (generateContent over SSE), on @ai-sdk/google, which also writes
 * tool schemas in Gemini's dialect. Thought signatures on function calls, text and thoughts
 * are kept on the assistant message and sent back, as Gemini 3 requires.
 */
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { languageModelProvider } from './language-model-provider.js';
import { retryOptionsOf, settingsOf, withoutTrailingSlash, type ProviderOptions } from './provider-options.js';
import type { ModelProvider } from './types.js';

export type GoogleModelOptions = Omit<ProviderOptions, 'baseURL' | 'parallelToolCalls'> & {
  /** API root (default "https://generativelanguage.googleapis.com/v1beta"). */
  baseURL?: string;
};

export function googleModel(options: GoogleModelOptions): ModelProvider {
  const baseURL = withoutTrailingSlash(options.baseURL ?? 'https://generativelanguage.googleapis.com/v1beta');
  const { apiKey, headers } = options;
  return languageModelProvider({
    where: baseURL,
    defaultModel: options.model,
    model: (modelId, fetch) =>
      createGoogleGenerativeAI({ baseURL, ...(apiKey ? { apiKey } : {}), ...(headers ? { headers } : {}), fetch })(
        modelId,
      ),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    dialect: 'json-schema',
    prompt: { replayReasoning: true },
    settings: settingsOf(options),
    retry: retryOptionsOf(options),
  });
}
