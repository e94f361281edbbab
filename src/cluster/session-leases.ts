/*
 * Session ownership: a lease per session with a fencing token (docs/cluster.md, "Leases and
 * fencing"). Taking a lease raises the session's fence; renewing or releasing it works only
 * while the fence is still the one taken; the store refuses every write whose token is not
 * the fence. Lease times are Redis's clock (TIME), or the `now` a test passes, so the
 * protocol runs on a simulated clock too.
 *
 * Locally, a lease counts as valid until a little before it could have run out in Redis,
 * measured from when its last acquire or renew was sent: a process that stalled past that
 * point (a long GC pause, SIGSTOP) knows at once that it may no longer act for the session.
 */
import type { Redis } from 'ioredis';
import type { SessionFencing } from '../store/redis-store.js';
import type { ClusterKeys } from './cluster-keys.js';

const NOW = `local now = tonumber(ARGV[#ARGV])
if not now then local t = redis.call('TIME'); now = t[1] * 1000 + math.floor(t[2] / 1000) end`;

/** KEYS lease, fence; ARGV node, ttl, now. Takes a free or run-out lease under a new fence. */
const ACQUIRE_LUA = `${NOW}
local lease = redis.call('HMGET', KEYS[1], 'node', 'until')
if lease[1] and tonumber(lease[2]) > now then return {0, lease[1]} end
local fence = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'node', ARGV[1], 'fence', fence, 'until', now + tonumber(ARGV[2]))
return {1, tostring(fence)}`;

/** KEYS lease, fence; ARGV node, token, ttl, now. Extends it while the fence is still ours (also once run out). */
const RENEW_LUA = `${NOW}
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'node', ARGV[1], 'fence', ARGV[2], 'until', now + tonumber(ARGV[3]))
return 1`;

/** KEYS lease, fence; ARGV token. */
const RELEASE_LUA = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`;

/** KEYS lease; ARGV now. The owner while its lease runs: {node, fence}, or nil. */
const OWNER_LUA = `${NOW}
local lease = redis.call('HMGET', KEYS[1], 'node', 'until', 'fence')
if lease[1] and tonumber(lease[2]) > now then return {lease[1], lease[3]} end
return false`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    switchyardLeaseAcquire(
      lease: string,
      fence: string,
      node: string,
      ttl: number,
      now: string,
    ): import('ioredis').Result<[number, string], Context>;
    switchyardLeaseRenew(
      lease: string,
      fence: string,
      node: string,
      token: string,
      ttl: number,
      now: string,
    ): import('ioredis').Result<number, Context>;
    switchyardLeaseRelease(lease: string, fence: string, token: string): import('ioredis').Result<number, Context>;
    switchyardLeaseOwner(lease: string, now: string): import('ioredis').Result<[string, string] | null, Context>;
  }
}

export function defineLeaseScripts(client: Redis): void {
  if (typeof (client as Partial<Redis>).switchyardLeaseAcquire === 'function') return;
  client.defineCommand('switchyardLeaseAcquire', { numberOfKeys: 2, lua: ACQUIRE_LUA });
  client.defineCommand('switchyardLeaseRenew', { numberOfKeys: 2, lua: RENEW_LUA });
  client.defineCommand('switchyardLeaseRelease', { numberOfKeys: 2, lua: RELEASE_LUA });
  client.defineCommand('switchyardLeaseOwner', { numberOfKeys: 1, lua: OWNER_LUA });
}

export interface SessionLeasesOptions {
  client: Redis;
  keys: ClusterKeys;
  nodeId: string;
  leaseMs: number;
  /** The lease clock in ms; undefined (the default) means Redis's own TIME. */
  now?: () => number | undefined;
  /** A monotonic clock in ms for the local validity. Default: performance.now(). */
  monotonic?: () => number;
}

export type AcquireResult = { acquired: true; token: string } | { acquired: false; owner: string };

/** Of a lease, this much is counted as valid locally: the rest absorbs clock drift. */
const LOCAL_VALIDITY = 0.9;

export class SessionLeases implements SessionFencing {
  private readonly held = new Map<string, { token: string; validUntil: number }>();
  private readonly monotonic: () => number;

  constructor(private readonly options: SessionLeasesOptions) {
    defineLeaseScripts(options.client);
    this.monotonic = options.monotonic ?? (() => performance.now());
  }

  get nodeId(): string {
    return this.options.nodeId;
  }

  tokenOf(sessionId: string): string | undefined {
    return this.held.get(sessionId)?.token;
  }

  holds(sessionId: string): boolean {
    return this.held.has(sessionId);
  }

  /** Held, and not run out by the local clock. */
  mayAct(sessionId: string): boolean {
    const lease = this.held.get(sessionId);
    return lease !== undefined && this.monotonic() < lease.validUntil;
  }

  sessions(): string[] {
    return [...this.held.keys()];
  }

  async acquire(sessionId: string): Promise<AcquireResult> {
    const { client, keys, nodeId, leaseMs } = this.options;
    const sent = this.monotonic();
    const [ok, value] = await client.switchyardLeaseAcquire(
      keys.lease(sessionId),
      keys.fence(sessionId),
      nodeId,
      leaseMs,
      this.now(),
    );
    if (ok !== 1) return { acquired: false, owner: String(value) };
    const token = String(value);
    this.held.set(sessionId, { token, validUntil: sent + leaseMs * LOCAL_VALIDITY });
    return { acquired: true, token };
  }

  /** True when extended; false when the fence moved on (another process owns it now): it is forgotten here. */
  async renew(sessionId: string): Promise<boolean> {
    const lease = this.held.get(sessionId);
    if (!lease) return false;
    const { client, keys, nodeId, leaseMs } = this.options;
    const sent = this.monotonic();
    const ok = await client.switchyardLeaseRenew(
      keys.lease(sessionId),
      keys.fence(sessionId),
      nodeId,
      lease.token,
      leaseMs,
      this.now(),
    );
    if (this.held.get(sessionId) !== lease) return this.held.has(sessionId);
    if (ok !== 1) {
      this.held.delete(sessionId);
      return false;
    }
    lease.validUntil = sent + leaseMs * LOCAL_VALIDITY;
    return true;
  }

  /** Lets the session go: writes under its token are refused here at once, and another process may take it. */
  async release(sessionId: string): Promise<void> {
    const lease = this.held.get(sessionId);
    if (!lease) return;
    this.held.delete(sessionId);
    const { client, keys } = this.options;
    await client.switchyardLeaseRelease(keys.lease(sessionId), keys.fence(sessionId), lease.token);
  }

  /** Forgets a lease without telling Redis (it was lost). */
  forget(sessionId: string): void {
    this.held.delete(sessionId);
  }

  /** The process whose lease on the session runs now, if any. */
  async ownerOf(sessionId: string): Promise<string | undefined> {
    const owner = await this.options.client.switchyardLeaseOwner(this.options.keys.lease(sessionId), this.now());
    return owner ? owner[0] : undefined;
  }

  private now(): string {
    const now = this.options.now?.();
    return now === undefined ? '' : String(now);
  }
}
