export { scriptedModel, ScriptedModelError } from './scripted.js';
export type { Script, ScriptTurn, ScriptContext, ScriptedModelOptions } from './scripted.js';
export type {
  FinishReason,
  Message,
  MessageToolCall,
  ModelChunk,
  ModelProvider,
  ModelRequest,
  ModelRunContext,
  ModelToolCall,
  ProviderMetadata,
  ReasoningPart,
  TokenUsage,
  ToolSpec,
} from './types.js';
export { ModelError } from './model-error.js';
export type { ModelErrorCode } from './model-error.js';
export { openAICompatibleModel } from './openai.js';
export type { OpenAICompatibleModelOptions } from './openai.js';
export { anthropicModel } from './anthropic.js';
export type { AnthropicModelOptions } from './anthropic.js';
export { googleModel } from './google.js';
export type { GoogleModelOptions } from './google.js';
export type { ToolChoice } from './language-model-provider.js';
