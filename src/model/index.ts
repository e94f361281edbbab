export { scriptedModel, ScriptedModelError } from './scripted.js';
export type { Script, ScriptTurn, ScriptContext, ScriptedModelOptions } from './scripted.js';
export type { Message, ModelChunk, ModelProvider, ModelRequest, ModelRunContext, ToolSpec } from './types.js';
export { openAICompatibleModel, OpenAIModelError } from './openai.js';
export type { OpenAICompatibleModelOptions } from './openai.js';
