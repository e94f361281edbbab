/*
 * The runs index of the Redis store (Store.queryRuns; run-index.ts), kept as sorted sets
 * scored by position, with positions from one counter every process of a cluster shares.
 * Placing a run is a few lines of Lua run inside the run's (fenced) save, so the record and its
 * place change together: a new position at a run's first save and at the save that ends it (or
 * changes how it ended), the old one otherwise — the same rule as placeRun. A run that moves is
 * re-scored in the lists it stays in; an entry left in an ended state's list by a run that ended
 * another way is skipped by current(), as the other stores skip theirs.
 */
import type { Redis } from 'ioredis';
import type { RunIndexEntry, RunIndexReader, RunList } from './run-index.js';
import type { RedisKeys } from './redis-keys.js';
import type { RunRecord } from './types.js';

/**
 * A Lua function `placeRun(at)`: ARGV from `at` holds the prefix of the list keys, run id, session
 * id, state, outcome ('' while not ended), then the open index's two keys (all, the session's) and
 * the run's creation score: a run not ended at its first save enters the open index there, so
 * later saves need not touch it. The write script calls it after the fence check, before the
 * save's own commands.
 */
/** How many arguments a placement takes. */
export const PLACEMENT_ARGS = 8;

export const PLACE_RUN_LUA = `
local function placeRun(at)
  local lists, runId, sessionId, state, outcome = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  local places = lists .. 'place'
  local ended = state == 'completed' or state == 'cancelled' or state == 'failed'
  local previous = redis.call('HGET', places, runId)
  local position, moves = nil, true
  if previous then
    local was, wasOutcome
    position, was, wasOutcome = string.match(previous, '^([^\\t]*)\\t([^\\t]*)\\t(.*)$')
    moves = ended and (was ~= state or wasOutcome ~= outcome)
  end
  if not previous and not ended then
    redis.call('ZADD', ARGV[at + 5], 'NX', ARGV[at + 7], runId)
    redis.call('ZADD', ARGV[at + 6], 'NX', ARGV[at + 7], runId)
  end
  if moves then
    position = redis.call('INCR', lists .. 'position')
    redis.call('ZADD', lists .. 'by:all', position, runId)
    redis.call('ZADD', lists .. 'by:session:' .. sessionId, position, runId)
    if ended then
      redis.call('ZADD', lists .. 'by:state:' .. state, position, runId)
      redis.call('ZADD', lists .. 'by:outcome:' .. state .. ':' .. outcome, position, runId)
    end
  end
  if ended then redis.call('ZREM', lists .. 'by:unended', runId)
  else redis.call('ZADD', lists .. 'by:unended', position, runId) end
  redis.call('HSET', places, runId, position .. '\\t' .. state .. '\\t' .. outcome)
end
`;

/** How many entries one read of a list fetches. */
const BATCH = 100;

export class RedisRunIndex implements RunIndexReader {
  constructor(
    private readonly client: Redis,
    private readonly keys: RedisKeys,
  ) {}

  backward(list: RunList, before: number): AsyncIterable<RunIndexEntry> {
    const state = list.kind === 'state' || list.kind === 'outcome' ? list.state : undefined;
    const outcome = list.kind === 'outcome' ? list.outcome : null;
    // Runs of the all and session lists may be in any state: current() reads it.
    return this.entries(this.keys.runList(list), before, (position, runId) => [
      position,
      runId,
      state ?? 'queued',
      outcome,
    ]);
  }

  unended(before: number): AsyncIterable<RunIndexEntry> {
    return this.entries(this.keys.unendedRuns(), before, (position, runId) => [position, runId, 'queued', null]);
  }

  async current([position, runId]: RunIndexEntry): Promise<RunRecord | undefined> {
    const [place, record] = await Promise.all([
      this.client.hget(this.keys.runPlaces(), runId),
      this.client.get(this.keys.run(runId)),
    ]);
    if (place === null || record === null || Number(place.split('\t')[0]) !== position) return undefined;
    return JSON.parse(record) as RunRecord;
  }

  private async *entries(
    key: string,
    before: number,
    entry: (position: number, runId: string) => RunIndexEntry,
  ): AsyncIterable<RunIndexEntry> {
    let below = before === Number.POSITIVE_INFINITY ? '+inf' : `(${before}`;
    for (;;) {
      const batch = await this.client.zrevrangebyscore(key, below, '-inf', 'WITHSCORES', 'LIMIT', 0, BATCH);
      for (let i = 0; i + 1 < batch.length; i += 2) yield entry(Number(batch[i + 1]), batch[i]!);
      if (batch.length < 2 * BATCH) return;
      below = `(${batch.at(-1)}`;
    }
  }
}
