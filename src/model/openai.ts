/*
 * The OpenAI-compatible provider: Chat Completions with tools and streaming, the dialect
 * OpenAI, Azure, vLLM, Ollama, llama.cpp server, LM Studio, OpenRouter, Groq, Mistral,
 * DeepSeek, xAI, Qwen and Gemini's OpenAI endpoint all speak. Built on
 * @ai-sdk/openai-compatible (@ai-sdk/openai for api.openai.com itself).
 */
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { SharedV3ProviderOptions } from '@ai-sdk/provider';
import { languageModelProvider } from './language-model-provider.js';
import { retryOptionsOf, settingsOf, withoutTrailingSlash, type ProviderOptions } from './provider-options.js';
import { quirksOf } from './server-quirks.js';
import type { ModelProvider, ProviderMetadata } from './types.js';

export type OpenAICompatibleModelOptions = ProviderOptions;

/** The key the compatible package files this provider's metadata under (and reads request options from). */
const NAME = 'switchyard';

export function openAICompatibleModel(options: OpenAICompatibleModelOptions): ModelProvider {
  const baseURL = withoutTrailingSlash(options.baseURL);
  const quirks = quirksOf(baseURL);
  const { apiKey, headers, parallelToolCalls } = options;
  const official = quirks.package === 'openai';
  return languageModelProvider({
    where: baseURL,
    defaultModel: options.model,
    model: official
      ? (modelId, fetch) =>
          createOpenAI({ baseURL, ...(apiKey ? { apiKey } : {}), ...(headers ? { headers } : {}), fetch }).chat(modelId)
      : (modelId, fetch) =>
          createOpenAICompatible({
            name: NAME,
            baseURL,
            ...(apiKey ? { apiKey } : {}),
            ...(headers ? { headers } : {}),
            fetch,
            includeUsage: quirks.includeUsage,
          }).chatModel(modelId),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    dialect: quirks.dialect,
    prompt: { replayReasoning: quirks.replayReasoning, replayOptions: replayThoughtSignature },
    settings: {
      ...settingsOf(options),
      ...(parallelToolCalls !== undefined
        ? {
            providerOptions: official
              ? { openai: { parallelToolCalls } }
              : { [NAME]: { parallel_tool_calls: parallelToolCalls } },
          }
        : {}),
    },
    retry: retryOptionsOf(options),
  });
}

/**
 * Gemini's OpenAI endpoint signs tool calls (`extra_content.google.thought_signature`); the
 * compatible package reports the signature under its own name but reads it back from `google`.
 */
function replayThoughtSignature(metadata: ProviderMetadata): SharedV3ProviderOptions {
  const signature = Object.values(metadata).find((values) => typeof values['thoughtSignature'] === 'string')?.[
    'thoughtSignature'
  ];
  return signature === undefined
    ? metadata
    : { ...metadata, google: { ...metadata['google'], thoughtSignature: signature } };
}
