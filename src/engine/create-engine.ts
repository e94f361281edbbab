/*
 * createEngine(options): resolves the configuration, store, models and tools, and returns a
 * running Engine. Every option has a default, so createEngine() alone gives a working engine
 * on the scripted model.
 */
import type { InspectionEvent } from 'xstate';
import type { Config, PartialConfig } from '../config/index.js';
import { ConfigError, defaultConfig, loadConfig, mergeConfig } from '../config/index.js';
import { scriptedModel } from '../model/scripted.js';
import type { ModelProvider } from '../model/types.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store } from '../store/types.js';
import { builtinTools } from '../tools/builtins/builtin-tools.js';
import type { AnyTool } from '../tools/tool.js';
import type { ToolServiceOptions } from '../tools/tool-service.js';
import { systemClock, type Clock } from './clock.js';
import { Engine } from './engine.js';
import { EngineError } from './errors.js';

export interface EngineOptions {
  /** A config object in the TOML vocabulary, or the path of a TOML file. */
  config?: PartialConfig | string;
  store?: Store | 'memory';
  /** Model providers by id, merged over the built-in "scripted". */
  models?: Record<string, ModelProvider>;
  /** Tools added to the builtins. */
  tools?: AnyTool[];
  /** The clock for deadlines, lane expiry and model latency; e.g. new SimulatedClock(). */
  clock?: Clock;
  /** Receives XState inspection events of every actor (supervisor, sessions, runs). */
  inspect?: (event: InspectionEvent) => void;
  /** Where unexpected errors go (default: console.error). */
  onError?: (error: unknown) => void;
  /**
   * A hook that may rewrite a tool call's arguments after its claim was computed (return the
   * new arguments, or undefined to keep them). A group holding a rewritten call runs serially.
   */
  rewriteArguments?: ToolServiceOptions['rewriteArguments'];
}

export async function createEngine(options: EngineOptions = {}): Promise<Engine> {
  const config = await resolveConfig(options.config);
  const tools = new Map<string, AnyTool>(builtinTools.map((tool) => [tool.name, tool]));
  const own = new Set<string>();
  for (const tool of options.tools ?? []) {
    if (own.has(tool.name)) throw new EngineError('invalid_request', `two tools are named "${tool.name}"`);
    // A caller's tool replaces the builtin of the same name.
    own.add(tool.name);
    tools.set(tool.name, tool);
  }
  const models = new Map<string, ModelProvider>([['scripted', scriptedModel([])]]);
  for (const [id, provider] of Object.entries(options.models ?? {})) models.set(id, provider);
  const engine = new Engine({
    config,
    store: options.store === undefined || options.store === 'memory' ? new MemoryStore() : options.store,
    clock: options.clock ?? systemClock,
    models,
    tools,
    ...(options.rewriteArguments ? { rewriteArguments: options.rewriteArguments } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
  await engine.recover();
  return engine;
}

async function resolveConfig(config: PartialConfig | string | undefined): Promise<Config> {
  try {
    if (config === undefined) return defaultConfig();
    if (typeof config === 'string') return await loadConfig(config);
    return mergeConfig(defaultConfig(), config);
  } catch (error) {
    if (error instanceof ConfigError) throw new EngineError('invalid_config', error.message, { issues: error.issues });
    throw error;
  }
}
