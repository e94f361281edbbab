/*
 * The cluster's limiter: `max_runs_global` and `max_runs_per_agent` held in Redis for every
 * process at once (docs/cluster.md, "Permits"). It keeps the limiter chart's rules — waiters are
 * granted in arrival order (arrival at Redis, by Redis's clock), skipping a waiter whose agent
 * is at its cap; lowering a limit preempts nothing — and adds one: a permit (or a place in the
 * queue) belongs to its run's session under the session's fencing token, so permits expire
 * with their holder's lease. A place in the queue under a stale token is dropped at once; a
 * permit under one is given back by the process that took the session over, once it has
 * appended the terminal events of the runs it found running — so in the logs a run's end
 * always comes before the start its permit allowed. One small script does all of it
 * atomically: record the request, drop what is stale, grant what fits.
 *
 * redis-semaphore's semaphores were read and not used: they grant to whichever waiter polls
 * first (not in arrival order), count one limit rather than two, and expire permits by a
 * client-side timestamp rather than with the session's owner.
 */
import type { Redis } from 'ioredis';
import type { Limiter, LimiterFigures, LimiterHandlers } from '../engine/index.js';
import type { ClusterKeys } from './cluster-keys.js';

/**
 * KEYS held, waiting, waiters, limits; ARGV fence key prefix, op, then for `acquire` the run id
 * and its info, `release` the run id and this process, `limits` the two limits, `session` the session and its new
 * fence; then the run ids whose grant this process may have missed.
 *
 * The counts live beside the limits (`limits`: inUse, queued, and `a:<agent>` per agent holding
 * permits), so the common calls — a grant with nobody waiting, a release with nobody waiting —
 * read neither the queue nor every permit held: a handful of commands whatever the load. Only a
 * queue that is not empty is walked, and only a takeover (`session`) reads the permits held. A
 * store written before the counts existed is counted once from the permits held.
 */
const LIMITER_LUA = `
local held, waiting, waiters, limits = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local fencePrefix, op, runId = ARGV[1], ARGV[2], ARGV[3]
local function stale(f) return redis.call('GET', fencePrefix .. f.session) ~= f.fence end
-- The asking run's agent's count comes with the limits and counts, in one HMGET.
local asked = op == 'acquire' and cjson.decode(ARGV[4]).agent or nil
local got = redis.call('HMGET', limits, 'global', 'perAgent', 'inUse', 'queued', 'a:' .. (asked or ''))
local maxGlobal, maxAgent = tonumber(got[1]) or 1, tonumber(got[2]) or 1
local inUse, queued = tonumber(got[3]), tonumber(got[4]) or 0
local perAgent, touched = {}, {}
if asked and inUse then perAgent[asked] = tonumber(got[5]) or 0 end
if not inUse then
  inUse = 0
  local h = redis.call('HGETALL', held)
  for i = 1, #h, 2 do
    local a = cjson.decode(h[i + 1]).agent
    inUse = inUse + 1
    perAgent[a] = (perAgent[a] or 0) + 1
    touched[a] = true
  end
  queued = redis.call('ZCARD', waiting)
end
local function agentCount(a)
  if perAgent[a] == nil then perAgent[a] = tonumber(redis.call('HGET', limits, 'a:' .. a)) or 0 end
  return perAgent[a]
end
local function count(a, by)
  perAgent[a] = agentCount(a) + by
  inUse = inUse + by
  touched[a] = true
end
local function dequeue(id)
  redis.call('ZREM', waiting, id)
  redis.call('HDEL', waiters, id)
  queued = queued - 1
end
local answer, granted = 'gone', {}
-- Whether the queue walk below answers for this call's run (not when its request was refused).
local asking = op == 'acquire'
if op == 'acquire' then
  -- A process that lost the session may not queue for it (nor overwrite its new owner's place).
  local f = cjson.decode(ARGV[4])
  if stale(f) then answer, asking = 'fenced', false
  elseif queued == 0 and inUse < maxGlobal and agentCount(f.agent) < maxAgent then
    redis.call('HSET', held, runId, ARGV[4])
    count(f.agent, 1)
    answer = 'granted'
    granted[1] = {runId, f.node}
  else
    local t = redis.call('TIME')
    if redis.call('ZADD', waiting, 'NX', t[1] * 1000000 + t[2], runId) == 1 then queued = queued + 1 end
    redis.call('HSET', waiters, runId, ARGV[4])
  end
elseif op == 'release' then
  -- Only the process that holds the permit (or the place) gives it back: after a takeover the run may be another's.
  -- Nor under a stale token: the new owner gives it back once its recovery has ended the run in
  -- the logs (op session), so the end is stored before the start the permit then allows.
  local raw = redis.call('HGET', held, runId)
  local f = raw and cjson.decode(raw)
  if f and f.node == ARGV[4] and not stale(f) then
    redis.call('HDEL', held, runId)
    count(f.agent, -1)
  end
  if queued > 0 then
    raw = redis.call('HGET', waiters, runId)
    if raw and cjson.decode(raw).node == ARGV[4] then dequeue(runId) end
  end
elseif op == 'limits' then
  maxGlobal, maxAgent = tonumber(ARGV[3]), tonumber(ARGV[4])
  redis.call('HSET', limits, 'global', ARGV[3], 'perAgent', ARGV[4])
elseif op == 'session' then
  local h = redis.call('HGETALL', held)
  for i = 1, #h, 2 do
    local f = cjson.decode(h[i + 1])
    if f.session == ARGV[3] and f.fence ~= ARGV[4] then
      redis.call('HDEL', held, h[i])
      count(f.agent, -1)
    end
  end
end
local position, waitingNow = 0, 0
if queued > 0 then
  for _, id in ipairs(redis.call('ZRANGE', waiting, 0, -1)) do
    local raw = redis.call('HGET', waiters, id)
    local f = raw and cjson.decode(raw)
    if not f or stale(f) then
      dequeue(id)
      if id == runId and asking then answer = 'fenced' end
    elseif inUse < maxGlobal and agentCount(f.agent) < maxAgent then
      dequeue(id)
      redis.call('HSET', held, id, raw)
      count(f.agent, 1)
      granted[#granted + 1] = {id, f.node}
      if id == runId and asking then answer = 'granted' end
    else
      waitingNow = waitingNow + 1
      if id == runId and asking then answer, position = 'waiting', waitingNow end
    end
  end
  queued = waitingNow
end
local counts = {'inUse', inUse, 'queued', queued}
local agents = {}
for a in pairs(touched) do
  agents[a] = perAgent[a]
  if perAgent[a] > 0 then counts[#counts + 1] = 'a:' .. a; counts[#counts + 1] = perAgent[a]
  else redis.call('HDEL', limits, 'a:' .. a) end
end
redis.call('HSET', limits, unpack(counts))
local mine = {}
for i = 5, #ARGV do
  if redis.call('HEXISTS', held, ARGV[i]) == 1 then mine[#mine + 1] = ARGV[i] end
end
local all = false
if op == 'poll' then
  all = true
  local l = redis.call('HGETALL', limits)
  agents = {}
  for i = 1, #l, 2 do
    if string.sub(l[i], 1, 2) == 'a:' then agents[string.sub(l[i], 3)] = tonumber(l[i + 1]) end
  end
end
return cjson.encode({answer = answer, position = position, granted = granted, mine = mine, all = all,
  inUse = inUse, perAgent = agents, waiting = queued, maxGlobal = maxGlobal, maxAgent = maxAgent})
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    switchyardLimiter(
      held: string,
      waiting: string,
      waiters: string,
      limits: string,
      ...args: string[]
    ): import('ioredis').Result<string, Context>;
  }
}

interface LimiterAnswer {
  answer: 'granted' | 'waiting' | 'fenced' | 'gone';
  position: number;
  granted: [string, string][] | Record<string, never>;
  mine: string[] | Record<string, never>;
  /** perAgent holds every agent with permits (a poll), not only those the call touched. */
  all: boolean;
  inUse: number;
  perAgent: Record<string, number>;
  waiting: number;
  maxGlobal: number;
  maxAgent: number;
}

export interface RedisLimiterOptions {
  client: Redis;
  keys: ClusterKeys;
  nodeId: string;
  handlers: LimiterHandlers;
  limits: { maxGlobal: number; maxPerAgent: number };
  /** The session of a run the engine knows. */
  sessionOf: (runId: string) => string | undefined;
  /** The token this process owns the session under, if it does. */
  tokenOf: (sessionId: string) => string | undefined;
  /** Tells another process that a run of its was granted (it also finds out by polling). Must not throw. */
  tellGranted: (nodeId: string, runId: string) => void;
  /** The session has a newer owner: this process must let it go. Must not throw. */
  onFenced: (sessionId: string) => void;
  onError: (error: unknown) => void;
}

interface Waiter {
  sessionId: string;
  answered: () => void;
  answer: Promise<void>;
}

export class RedisLimiter implements Limiter {
  private readonly waiters = new Map<string, Waiter>();
  private last: LimiterFigures;

  constructor(private readonly options: RedisLimiterOptions) {
    if (typeof (options.client as Partial<Redis>).switchyardLimiter !== 'function') {
      options.client.defineCommand('switchyardLimiter', { numberOfKeys: 4, lua: LIMITER_LUA });
    }
    this.last = { global: { inUse: 0, max: options.limits.maxGlobal }, perAgent: {}, waiting: 0 };
    this.reconfigure(options.limits.maxGlobal, options.limits.maxPerAgent);
  }

  acquire(runId: string, agentId: string): void {
    const sessionId = this.options.sessionOf(runId);
    if (sessionId === undefined) return;
    let answered!: () => void;
    const answer = new Promise<void>((resolve) => (answered = resolve));
    this.waiters.set(runId, { sessionId, answered, answer });
    const fence = this.options.tokenOf(sessionId);
    if (fence === undefined) {
      // Not from inside the engine's own call: letting the session go stops its actors.
      queueMicrotask(() => this.fenced(runId));
      return;
    }
    const info = JSON.stringify({ agent: agentId, session: sessionId, fence, node: this.options.nodeId });
    this.call('acquire', runId, info);
  }

  release(runId: string): void {
    const waiter = this.waiters.get(runId);
    this.waiters.delete(runId);
    waiter?.answered();
    this.call('release', runId, this.options.nodeId);
    this.options.handlers.released(runId);
  }

  reconfigure(maxGlobal: number, maxPerAgent: number): void {
    this.call('limits', String(maxGlobal), String(maxPerAgent));
  }

  figures(): LimiterFigures {
    return this.last;
  }

  answered(runId: string): Promise<void> | undefined {
    return this.waiters.get(runId)?.answer;
  }

  /**
   * This process took the session over (under `fence`) and ended the runs it found running:
   * the permits its last owner held for it are free.
   */
  releaseSession(sessionId: string, fence: string): Promise<void> {
    return this.call('session', sessionId, fence);
  }

  /** Drops what is stale, grants what fits, and picks up grants this process was not told about. */
  poll(): Promise<LimiterFigures> {
    return this.call('poll', '', '', [...this.waiters.keys()]).then(() => this.last);
  }

  /** Another process granted a run of this one. */
  onGranted(runId: string): void {
    this.grant(runId);
  }

  stop(): void {
    for (const waiter of this.waiters.values()) waiter.answered();
    this.waiters.clear();
  }

  private async call(op: string, a: string, b: string, check: string[] = []): Promise<void> {
    const { client, keys } = this.options;
    let answer: LimiterAnswer;
    try {
      const json = await client.switchyardLimiter(
        keys.permitsHeld(),
        keys.permitsWaiting(),
        keys.permitsWaiters(),
        keys.permitLimits(),
        keys.fence(''),
        op,
        a,
        b,
        ...check,
      );
      answer = JSON.parse(json) as LimiterAnswer;
    } catch (error) {
      this.options.onError(error);
      return;
    }
    // A call answers the counts of the agents it touched; a poll answers every agent's.
    const counts = new Map(answer.all ? [] : Object.entries(this.last.perAgent).map(([a, f]) => [a, f.inUse]));
    for (const [agent, inUse] of Object.entries(answer.perAgent)) counts.set(agent, inUse);
    const perAgent: LimiterFigures['perAgent'] = {};
    for (const [agent, inUse] of counts) if (inUse > 0) perAgent[agent] = { inUse, max: answer.maxAgent };
    this.last = { global: { inUse: answer.inUse, max: answer.maxGlobal }, perAgent, waiting: answer.waiting };
    for (const [runId, nodeId] of Array.isArray(answer.granted) ? answer.granted : []) {
      if (nodeId === this.options.nodeId) this.grant(runId);
      else this.options.tellGranted(nodeId, runId);
    }
    for (const runId of Array.isArray(answer.mine) ? answer.mine : []) this.grant(runId);
    if (op !== 'acquire') return;
    const waiter = this.waiters.get(a);
    if (!waiter) return;
    if (answer.answer === 'fenced') return this.fenced(a);
    if (answer.answer === 'waiting') this.options.handlers.waiting(a, answer.position);
    waiter.answered();
  }

  /** The run's session has a newer owner: no permit for it here, and the session is let go. */
  private fenced(runId: string): void {
    const waiter = this.waiters.get(runId);
    if (!waiter) return;
    this.waiters.delete(runId);
    this.options.onFenced(waiter.sessionId);
    waiter.answered();
  }

  private grant(runId: string): void {
    const waiter = this.waiters.get(runId);
    if (!waiter) return;
    this.waiters.delete(runId);
    this.options.handlers.granted(runId);
    waiter.answered();
  }
}
