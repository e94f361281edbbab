/*
 * createEngine(options): resolves the configuration, store, models and tools, and returns a
 * running Engine. Every option has a default, so createEngine() alone gives a working engine
 * on the scripted model.
 */
import type { InspectionEvent } from 'xstate';
import type { ApprovalDecision, ApprovalRequest } from '../approval/index.js';
import type { ClaimRegistry } from '../concurrency/index.js';
import type { Config, PartialConfig } from '../config/index.js';
import { ConfigError, defaultConfig, loadConfig, mergeConfig } from '../config/index.js';
import { scriptedModel } from '../model/scripted.js';
import type { ModelProvider } from '../model/types.js';
import { LowdbStore } from '../store/lowdb-store.js';
import { MemoryStore } from '../store/memory-store.js';
import type { Store } from '../store/types.js';
import { builtinTools } from '../tools/builtins/builtin-tools.js';
import type { NodeInvoker } from '../tools/node-invoker.js';
import type { AnyTool } from '../tools/tool.js';
import type { ToolServiceOptions } from '../tools/tool-service.js';
import { systemClock, type Clock } from '../core/clock.js';
import { configuredModels } from './configured-models.js';
import type { EngineObserver } from './engine-observer.js';
import { Engine } from './engine.js';
import type { SessionOwnership } from './ownership.js';
import { connectMcpServer, type McpConnection } from '../tools/mcp/index.js';
import { EngineError } from '../core/errors.js';

export interface EngineOptions {
  /**
   * A config object in the TOML vocabulary, or the path of a TOML file.
   * @default the built-in defaults (defaultConfig(); README, "Configuration")
   */
  config?: PartialConfig | string;
  /**
   * Where runs, events, conversations, lanes and grants are kept: a Store, 'memory', or
   * `{ dir }` for the file store (lowdb) in that directory.
   * @default 'memory', unless the config object sets `store` (then its `kind` decides: `dir`
   * for lowdb, `url` and `key_prefix` for Redis)
   */
  store?: Store | 'memory' | { dir: string };
  /**
   * Model providers by id, merged over the built-in "scripted" and the config's [models.<id>].
   * @default {} (the built-in "scripted" and the configured ones)
   */
  models?: Record<string, ModelProvider>;
  /**
   * Tools added to the builtins; one of them replaces a builtin of the same name.
   * @default [] (the builtins, and the tools of the config's [mcp.<id>] servers)
   */
  tools?: AnyTool[];
  /**
   * Tools only the runs of one session see (an editor's own MCP servers, for instance), asked
   * for at each model turn and tool batch of that session's runs; one of them replaces a tool
   * of the same name for those runs. Must not throw.
   * @default none: every session sees the engine's tools
   */
  sessionTools?: (sessionId: string) => readonly AnyTool[];
  /**
   * The clock for deadlines, lane expiry and model latency; e.g. new SimulatedClock().
   * @default systemClock
   */
  clock?: Clock;
  /**
   * Answers approval requests programmatically (README, "Approval, command policy and the
   * sandbox"); it races with respondApproval().
   * @default none: a gated call waits for respondApproval() (e.g. from the gateway) until
   * [approval] timeout_seconds, then is denied
   */
  approver?: (request: ApprovalRequest) => Promise<ApprovalDecision>;
  /**
   * Receives XState inspection events of every actor (limiter, sessions, runs).
   * @default none (engine.inspect() subscribes later)
   */
  inspect?: (event: InspectionEvent) => void;
  /**
   * Where unexpected errors go.
   * @default console.error
   */
  onError?: (error: unknown) => void;
  /**
   * A hook that may rewrite a tool call's arguments after its claim was computed (return the
   * new arguments, or undefined to keep them). A group holding a rewritten call runs serially.
   * @default none: arguments run as the model gave them
   */
  rewriteArguments?: ToolServiceOptions['rewriteArguments'];
  /**
   * Where tool calls hold their claims against the calls of other runs (docs/claims.md, "Claims
   * across runs").
   * @default a registry in this process (InProcessClaimRegistry)
   */
  claims?: ClaimRegistry;
  /**
   * Connected node clients for the node_invoke tool: a NodeRegistry, also handed to
   * startGateway so nodes can register.
   * @default none: node_invoke fails with `unavailable`
   */
  nodes?: NodeInvoker;
  /**
   * Shares sessions and permits with other processes on one Redis (src/cluster/, docs/cluster.md).
   * Then nothing is recovered at start: each session is recovered by the process that takes it over.
   * @default none: the engine is alone, and recovers its store when it starts
   */
  ownership?: SessionOwnership;
  /**
   * What an observer learns beyond the event log: a run's start (its trace id goes into
   * `run.started`) and command-policy verdicts. src/telemetry provides one.
   * @default none
   */
  observer?: Partial<EngineObserver>;
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
  for (const [id, provider] of await configuredModels(config)) models.set(id, provider);
  for (const [id, provider] of Object.entries(options.models ?? {})) models.set(id, provider);
  const mcp = await connectConfiguredMcp(config);
  for (const tool of mcp.flatMap((c) => c.tools)) {
    if (!own.has(tool.name)) tools.set(tool.name, tool);
  }
  const engine = new Engine({
    config,
    store: await resolveStore(options, config),
    clock: options.clock ?? systemClock,
    models,
    tools,
    ...(options.rewriteArguments ? { rewriteArguments: options.rewriteArguments } : {}),
    ...(options.sessionTools ? { sessionTools: options.sessionTools } : {}),
    ...(options.nodes ? { nodes: options.nodes } : {}),
    ...(options.claims ? { claims: options.claims } : {}),
    ...(options.approver ? { approver: options.approver } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
    ...(options.ownership ? { ownership: options.ownership } : {}),
    ...(options.observer ? { observer: options.observer } : {}),
  });
  for (const connection of mcp) engine.onClose(() => connection.close());
  if (!options.ownership) await engine.recover();
  return engine;
}

/** Connects every [mcp.<id>] server; on a failure, closes the ones already connected. */
async function connectConfiguredMcp(config: Config): Promise<McpConnection[]> {
  const connections: McpConnection[] = [];
  try {
    for (const [id, server] of Object.entries(config.mcp)) {
      connections.push(
        await connectMcpServer(id, {
          ...(server.command !== undefined ? { command: server.command } : {}),
          args: server.args,
          ...(server.env !== undefined ? { env: server.env } : {}),
          ...(server.url !== undefined ? { url: server.url } : {}),
        }),
      );
    }
  } catch (error) {
    await Promise.all(connections.map((c) => c.close()));
    throw new EngineError('invalid_config', error instanceof Error ? error.message : String(error));
  }
  return connections;
}

async function resolveStore(options: EngineOptions, config: Config): Promise<Store> {
  const choice = options.store;
  if (choice === 'memory') return new MemoryStore();
  if (choice !== undefined && 'dir' in choice && !('appendEvent' in choice))
    return LowdbStore.open(choice.dir, { fsync: config.store.fsync });
  if (choice !== undefined) return choice as Store;
  const configured = typeof options.config === 'object' && options.config.store !== undefined;
  if (!configured || config.store.kind === 'memory') return new MemoryStore();
  if (config.store.kind === 'lowdb') return LowdbStore.open(config.store.dir, { fsync: config.store.fsync });
  // Loaded only when asked for: an engine on files never loads the Redis client.
  const { RedisStore } = await import('../store/redis-store.js');
  return RedisStore.open({ url: config.store.url, keyPrefix: config.store.key_prefix });
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
