/*
 * Model providers declared in [models.<id>]: "openai" (any Chat Completions server),
 * "anthropic" (the Messages API), "google" (the Gemini API) and "scripted" (a JSON script
 * file: an array of turns).
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { anthropicModel } from '../model/anthropic.js';
import { googleModel } from '../model/google.js';
import { openAICompatibleModel } from '../model/openai.js';
import type { ProviderOptions } from '../model/provider-options.js';
import { scriptedModel, type ScriptTurn } from '../model/scripted.js';
import type { ModelProvider } from '../model/types.js';
import { EngineError } from '../core/errors.js';

type ModelConfig = Config['models'][string];

const DEFAULT_KEY_ENV: Record<string, string | undefined> = {
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GEMINI_API_KEY',
};

export async function configuredModels(config: Config): Promise<Map<string, ModelProvider>> {
  const models = new Map<string, ModelProvider>();
  for (const [id, model] of Object.entries(config.models)) {
    switch (model.kind) {
      case 'scripted':
        models.set(id, scriptedModel(model.script ? await readScript(id, model.script) : []));
        break;
      case 'openai':
        if (!model.base_url)
          throw new EngineError(
            'invalid_config',
            `[models.${id}] kind "openai" needs base_url (e.g. "http://localhost:11434/v1")`,
          );
        models.set(id, openAICompatibleModel({ ...providerOptions(id, model), baseURL: model.base_url }));
        break;
      case 'anthropic':
        models.set(
          id,
          anthropicModel({ ...providerOptions(id, model), ...(model.base_url ? { baseURL: model.base_url } : {}) }),
        );
        break;
      case 'google': {
        const { parallelToolCalls: _unsupported, ...options } = providerOptions(id, model);
        models.set(id, googleModel({ ...options, ...(model.base_url ? { baseURL: model.base_url } : {}) }));
        break;
      }
    }
  }
  return models;
}

/** What every HTTP kind shares, checked here so a bad entry fails at start, not at the first run. */
function providerOptions(id: string, model: ModelConfig): Omit<ProviderOptions, 'baseURL'> {
  if (!model.model)
    throw new EngineError(
      'invalid_config',
      `[models.${id}] kind "${model.kind}" needs model (the model name the server knows)`,
    );
  const keyEnv = model.api_key_env ?? DEFAULT_KEY_ENV[model.kind];
  const apiKey = keyEnv ? process.env[keyEnv] : undefined;
  if (keyEnv && apiKey === undefined) {
    throw new EngineError(
      'invalid_config',
      `[models.${id}] needs an API key in the environment variable ${keyEnv}, which is not set; set it or name another with api_key_env`,
    );
  }
  return {
    model: model.model,
    ...(apiKey ? { apiKey } : {}),
    ...(model.headers ? { headers: model.headers } : {}),
    ...(model.max_tokens !== undefined ? { maxTokens: model.max_tokens } : {}),
    ...(model.temperature !== undefined ? { temperature: model.temperature } : {}),
    ...(model.tool_choice !== undefined ? { toolChoice: model.tool_choice } : {}),
    ...(model.parallel_tool_calls !== undefined ? { parallelToolCalls: model.parallel_tool_calls } : {}),
    maxRetryWaitMs: model.max_retry_wait_seconds * 1000,
  };
}

async function readScript(id: string, path: string): Promise<ScriptTurn[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(resolve(path), 'utf8'));
  } catch (error) {
    throw new EngineError(
      'invalid_config',
      `[models.${id}] script ${path}: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (!Array.isArray(parsed))
    throw new EngineError('invalid_config', `[models.${id}] script ${path} must hold a JSON array of turns`);
  return parsed as ScriptTurn[];
}
