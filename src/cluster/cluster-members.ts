/*
 * Which processes are in the cluster: each renews its own entry (until when it counts as
 * alive, by Redis's clock) with its leases, and says where its gateway listens. Requests that
 * go to every process (snapshot, approvals, config) go to the live ones.
 */
import type { Redis } from 'ioredis';
import type { ClusterKeys } from './cluster-keys.js';

const NOW = `local t = redis.call('TIME'); local now = t[1] * 1000 + math.floor(t[2] / 1000)`;

/** KEYS nodes, info; ARGV node, ttl, info ('' keeps it). Members gone for a day are forgotten. */
const HEARTBEAT_LUA = `${NOW}
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - 86400000)) do
  redis.call('ZREM', KEYS[1], gone)
  redis.call('HDEL', KEYS[2], gone)
end
return now`;

/** KEYS nodes. */
const LIVE_LUA = `${NOW}
return redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    switchyardHeartbeat(
      nodes: string,
      info: string,
      node: string,
      ttl: number,
      about: string,
    ): import('ioredis').Result<number, Context>;
    switchyardLiveNodes(nodes: string): import('ioredis').Result<string[], Context>;
  }
}

/** What a process says about itself. */
export interface MemberInfo {
  pid: number;
  startedAt: string;
  /** Its gateway, once it listens. */
  url?: string;
}

export class ClusterMembers {
  private about: MemberInfo;

  constructor(
    private readonly client: Redis,
    private readonly keys: ClusterKeys,
    readonly nodeId: string,
    private readonly ttlMs: number,
  ) {
    if (typeof (client as Partial<Redis>).switchyardHeartbeat !== 'function') {
      client.defineCommand('switchyardHeartbeat', { numberOfKeys: 2, lua: HEARTBEAT_LUA });
      client.defineCommand('switchyardLiveNodes', { numberOfKeys: 1, lua: LIVE_LUA });
    }
    this.about = { pid: process.pid, startedAt: new Date().toISOString() };
  }

  async heartbeat(): Promise<void> {
    await this.client.switchyardHeartbeat(
      this.keys.nodes(),
      this.keys.nodeInfo(),
      this.nodeId,
      this.ttlMs,
      JSON.stringify(this.about),
    );
  }

  /** Says where this process's gateway listens (at once, not at the next heartbeat). */
  async announce(info: Partial<MemberInfo>): Promise<void> {
    this.about = { ...this.about, ...info };
    await this.heartbeat();
  }

  async live(): Promise<string[]> {
    return this.client.switchyardLiveNodes(this.keys.nodes());
  }

  async leave(): Promise<void> {
    await this.client
      .multi()
      .zrem(this.keys.nodes(), this.nodeId)
      .hdel(this.keys.nodeInfo(), this.nodeId)
      .del(this.keys.inbox(this.nodeId))
      .exec();
  }
}
