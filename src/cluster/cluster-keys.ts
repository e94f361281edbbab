/*
 * The cluster's keys beside the store's, under the same prefix (docs/cluster.md has the table).
 * The fencing counter of a session is the store's (`fence:<session>`): the store checks it on
 * every write, the leases raise it on every new owner.
 */
import { RedisKeys } from '../store/redis-keys.js';

export class ClusterKeys extends RedisKeys {
  /** HASH {node, fence, until}: who owns the session, under which token, until when (ms, Redis time). */
  lease(sessionId: string): string {
    return `${this.prefix}lease:${sessionId}`;
  }

  /** ZSET node id -> until when (ms, Redis time) it counts as alive. */
  nodes(): string {
    return `${this.prefix}nodes`;
  }

  /** HASH node id -> what it announced (JSON: gateway URL, pid). */
  nodeInfo(): string {
    return `${this.prefix}node-info`;
  }

  /** STREAM of requests and replies addressed to a node. */
  inbox(nodeId: string): string {
    return `${this.prefix}inbox:${nodeId}`;
  }

  /** HASH run id -> "agent, session, fence, node" of each permit held. */
  permitsHeld(): string {
    return `${this.prefix}permits:held`;
  }

  /** ZSET run id -> arrival (µs, Redis time) of each run waiting for permits. */
  permitsWaiting(): string {
    return `${this.prefix}permits:waiting`;
  }

  /** HASH run id -> "agent, session, fence, node" of each waiting run. */
  permitsWaiters(): string {
    return `${this.prefix}permits:waiters`;
  }

  /** HASH {global, perAgent}: the limits in force. */
  permitLimits(): string {
    return `${this.prefix}permits:limits`;
  }

  /** STRING: the hot sections of the config as last changed by config.update (JSON). */
  config(): string {
    return `${this.prefix}config`;
  }
}
