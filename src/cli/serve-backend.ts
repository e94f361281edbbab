/*
 * What `switchyard serve` puts behind its gateway: an engine on the store of [store] kind —
 * or, with kind = "redis", a cluster node (src/cluster/): one of several processes sharing
 * one Redis, where the data directory holds only the token file.
 */
import type { Config } from '../config/index.js';
import { createEngine, type Engine, type EngineOptions } from '../engine/index.js';
import type { GatewayEngine } from '../gateway/method-handlers.js';
import type { NodeRegistry } from '../gateway/nodes/node-registry.js';
import { LowdbStore, MemoryStore, type Store } from '../store/index.js';
import { redactedUrl } from '../store/redis-client.js';

export interface ServeBackend {
  /** This process's engine (what it runs itself). */
  engine: Engine;
  /** What the gateway talks to: the engine, or the cluster node in front of it. */
  front: GatewayEngine;
  /** The engine's store, before instrumentation (for readiness and telemetry). */
  store: Store;
  /** A line saying where the state is kept. */
  describe: string;
  /** Tells the cluster where this process's gateway listens (nothing alone). */
  announce(url: string): Promise<void>;
  close(): Promise<void>;
}

export interface ServeBackendOptions {
  nodes: NodeRegistry;
  observer: NonNullable<EngineOptions['observer']>;
  /** Wraps the store the engine writes through (telemetry times it). */
  instrumentStore: (store: Store) => Store;
  onError: (error: unknown) => void;
  /** Lines an operator wants to see (a cluster's takeovers, for instance). */
  log: (line: string) => void;
  /** Lines an operator must see: damage the file store found and worked around (a quarantined file, a skipped journal line). */
  warn?: (line: string) => void;
}

export async function startServeBackend(
  config: Config,
  dataDir: string,
  options: ServeBackendOptions,
): Promise<ServeBackend> {
  const { nodes, observer, instrumentStore, onError, log, warn = log } = options;
  // The data directory the store and token really live in, so the sandbox keeps every workspace away from it.
  const placed: Config = { ...config, store: { ...config.store, dir: dataDir } };
  if (config.store.kind === 'redis') {
    // Loaded only here: a server on files never loads the Redis client.
    const { ClusterNode } = await import('../cluster/index.js');
    const node = await ClusterNode.start({ config: placed, nodes, log, observer, instrumentStore, onError });
    return {
      engine: node.engine,
      front: node,
      store: node.store,
      describe: `redis ${redactedUrl(config.store.url)} (keys ${config.store.key_prefix}*; node ${node.nodeId}; token in ${dataDir})`,
      announce: (url) => node.announce({ url }),
      close: () => node.close(),
    };
  }
  const store: Store =
    config.store.kind === 'memory'
      ? new MemoryStore()
      : await LowdbStore.open(dataDir, { fsync: config.store.fsync, onDamaged: (line) => warn(`store: ${line}`) });
  let engine: Engine;
  try {
    engine = await createEngine({ config: placed, store: instrumentStore(store), nodes, observer, onError });
  } catch (error) {
    await store.close();
    throw error;
  }
  return {
    engine,
    front: engine,
    store,
    describe: store.kind === 'memory' ? 'memory (nothing survives a restart)' : dataDir,
    announce: async () => {},
    close: () => engine.close(),
  };
}
