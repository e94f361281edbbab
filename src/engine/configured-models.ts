/*
 * Model providers declared in [models.<id>]: "openai" (any Chat Completions server) and
 * "scripted" (a JSON script file: an array of turns).
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { openAICompatibleModel } from '../model/openai.js';
import { scriptedModel, type ScriptTurn } from '../model/scripted.js';
import type { ModelProvider } from '../model/types.js';
import { EngineError } from '../core/errors.js';

export async function configuredModels(config: Config): Promise<Map<string, ModelProvider>> {
  const models = new Map<string, ModelProvider>();
  for (const [id, model] of Object.entries(config.models)) {
    if (model.kind === 'openai') {
      if (!model.base_url || !model.model) {
        throw new EngineError('invalid_config', `[models.${id}] kind "openai" needs base_url and model`);
      }
      const apiKey = model.api_key_env ? process.env[model.api_key_env] : undefined;
      if (model.api_key_env && apiKey === undefined) {
        throw new EngineError('invalid_config', `[models.${id}] api_key_env names ${model.api_key_env}, which is not set in the environment`);
      }
      models.set(id, openAICompatibleModel({ baseURL: model.base_url, model: model.model, ...(apiKey ? { apiKey } : {}) }));
    } else {
      models.set(id, scriptedModel(model.script ? await readScript(id, model.script) : []));
    }
  }
  return models;
}

async function readScript(id: string, path: string): Promise<ScriptTurn[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(resolve(path), 'utf8'));
  } catch (error) {
    throw new EngineError('invalid_config', `[models.${id}] script ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!Array.isArray(parsed)) throw new EngineError('invalid_config', `[models.${id}] script ${path} must hold a JSON array of turns`);
  return parsed as ScriptTurn[];
}
