/*
 * Every write of the Redis store is one script call: a list of commands applied together,
 * atomically, and — when the write belongs to a session whose owner is fenced (docs/cluster.md)
 * — only if the fencing token it carries is still the session's. A stale token gets an error
 * reply `FENCED …` and changes nothing but the refusal counter.
 *
 * The script is kept small on purpose: it checks, then runs the commands as given. ARGV holds
 * the fence key ('' when unfenced), the token, the refusal counter's key, and then each command
 * as its argument count followed by its arguments. A run's save also places the run in the
 * runs index (redis-run-index.ts) between the two.
 */
import type { Redis } from 'ioredis';
import { PLACE_RUN_LUA } from './redis-run-index.js';
import { StoreError } from './store-error.js';

/** ARGV 1-3: the fence key ('' when unfenced), the token, the refusal counter. */
const FENCE_CHECK_LUA = `
if ARGV[1] ~= '' then
  local current = redis.call('GET', ARGV[1])
  if current ~= ARGV[2] then
    redis.call('INCR', ARGV[3])
    return redis.error_reply('FENCED the session is owned under token ' .. tostring(current) .. ', this write carries ' .. ARGV[2])
  end
end
local first = 4
`;

/** ARGV from `first`: each command as its argument count followed by its arguments. */
const COMMANDS_LUA = `
local i = first
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return 1
`;

export type RedisCommand = (string | number)[];

/** The fence a write must carry: the session's fence key and this owner's token. */
export interface WriteFence {
  key: string;
  token: string;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    switchyardFencedWrite(...args: (string | number)[]): import('ioredis').Result<number, Context>;
    switchyardSaveRun(...args: (string | number)[]): import('ioredis').Result<number, Context>;
  }
}

/** Defines the scripts on the client (once); ioredis sends them by their SHA and reloads them after a Redis restart. */
export function defineFencedWrite(client: Redis): void {
  if (typeof (client as Partial<Redis>).switchyardFencedWrite === 'function') return;
  client.defineCommand('switchyardFencedWrite', { numberOfKeys: 0, lua: FENCE_CHECK_LUA + COMMANDS_LUA });
  client.defineCommand('switchyardSaveRun', { numberOfKeys: 0, lua: FENCE_CHECK_LUA + PLACE_RUN_LUA + COMMANDS_LUA });
}

/**
 * Applies `commands` atomically, refused when `fence` is stale. With `placement` (the runs
 * index's key prefix, run id, session id, state, outcome) the run is placed in the runs index first.
 */
export async function fencedWrite(
  client: Redis,
  fence: WriteFence | undefined,
  refusedKey: string,
  commands: RedisCommand[],
  placement?: string[],
): Promise<void> {
  const args: (string | number)[] = [fence?.key ?? '', fence?.token ?? '', refusedKey, ...(placement ?? [])];
  for (const command of commands) args.push(command.length, ...command);
  try {
    await (placement ? client.switchyardSaveRun(...args) : client.switchyardFencedWrite(...args));
  } catch (error) {
    throw storeErrorOf(error);
  }
}

export function storeErrorOf(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (message.startsWith('FENCED')) {
    return new StoreError(
      'fenced',
      `a write was refused: ${message.slice('FENCED '.length)}; another process owns the session now`,
      { cause: error },
    );
  }
  return new StoreError('write_failed', `a Redis write failed: ${message}`, { cause: error });
}
