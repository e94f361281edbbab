/*
 * The Redis store's writes, gathered: every write asked for in one turn of the event loop goes
 * to Redis in one script call (docs/cluster.md, "Redis work per run"). Each write is a list of
 * commands applied together and — when it belongs to a session whose owner is fenced — only if
 * the fencing token it carries is still the session's. The script reads each session's fence
 * once per call, however many of that session's writes the call carries; a stale token refuses
 * that write alone (`FENCED …`, counted in the refusal counter) and the call goes on with the
 * next. A command that fails (a log refusing a second event with one number) ends its write
 * there, and only its write: the writes of a call are applied in the order they were asked for.
 *
 * The ordering rule. A write waits in the batch until the end of the turn, so anything else
 * this process sends to Redis meanwhile would overtake it: a permit given back, a lease
 * released, a request or reply to another process. Each of those may let another process act
 * on what it reads next, so each must find the writes asked for before it already in Redis.
 * `orderedClient` gives the rest of the process a client that sends the batch before any
 * command of its own (its commands and the batch then travel, in that order, on the one
 * connection): nothing the process sends can overtake a write it asked for earlier.
 */
import type { Redis } from 'ioredis';
import { PLACE_RUN_LUA, PLACEMENT_ARGS } from './redis-run-index.js';
import { StoreError } from './store-error.js';

/**
 * ARGV[1] the refusal counter; then each write as: fence key ('' when unfenced), token, placement
 * flag ('1': PLACEMENT_ARGS placement arguments follow, redis-run-index.ts), its command count, and each
 * command as its argument count followed by its arguments. Answers one entry per write: 1, or
 * the error that refused it.
 */
const WRITE_BATCH_LUA = `${PLACE_RUN_LUA}
local refused = ARGV[1]
local fences, results = {}, {}
local i = 2
while i <= #ARGV do
  local fenceKey, token, placed = ARGV[i], ARGV[i + 1], ARGV[i + 2] == '1'
  i = i + 3
  local placement = i
  if placed then i = i + ${PLACEMENT_ARGS} end
  local count = tonumber(ARGV[i])
  i = i + 1
  local result = 1
  if fenceKey ~= '' then
    local current = fences[fenceKey]
    if current == nil then
      current = redis.call('GET', fenceKey) or false
      fences[fenceKey] = current
    end
    if current ~= token then
      redis.call('INCR', refused)
      result = 'FENCED the session is owned under token ' .. tostring(current) .. ', this write carries ' .. token
    end
  end
  if result == 1 and placed then placeRun(placement) end
  for c = 1, count do
    local n = tonumber(ARGV[i])
    if result == 1 then
      local reply = redis.pcall(unpack(ARGV, i + 1, i + n))
      if type(reply) == 'table' and reply.err then result = 'FAILED ' .. reply.err end
    end
    i = i + n + 1
  end
  results[#results + 1] = result
end
return results
`;

export type RedisCommand = (string | number)[];

/** The fence a write must carry: the session's fence key and this owner's token. */
export interface WriteFence {
  key: string;
  token: string;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    switchyardWriteBatch(...args: (string | number)[]): import('ioredis').Result<(number | string)[], Context>;
  }
}

interface QueuedWrite {
  fence: WriteFence | undefined;
  /** Or a function giving them when the call is sent (a write that gathers until then). */
  commands: RedisCommand[] | (() => RedisCommand[]);
  placement: (string | number)[] | undefined;
  resolve: () => void;
  reject: (error: StoreError) => void;
}

/** A call is sent early once it holds this many arguments (Redis reads a call whole before running it). */
const MAX_ARGS = 20_000;

export class WriteBatch {
  private queued: QueuedWrite[] = [];
  private args = 0;
  private scheduled = false;
  /** Script calls sent so far (for tests and benchmarks). */
  calls = 0;

  constructor(
    private readonly client: Redis,
    private readonly refusedKey: string,
  ) {
    // ioredis sends the script by its SHA and loads it again after a Redis restart.
    if (typeof (client as Partial<Redis>).switchyardWriteBatch !== 'function')
      client.defineCommand('switchyardWriteBatch', { numberOfKeys: 0, lua: WRITE_BATCH_LUA });
  }

  /**
   * Adds a write to this turn's call: `commands` applied together, refused when `fence` is stale.
   * With `placement` (PLACE_RUN_LUA's arguments) the run is placed in the runs index first. Resolves once Redis applied it.
   */
  add(
    fence: WriteFence | undefined,
    commands: RedisCommand[] | (() => RedisCommand[]),
    placement?: (string | number)[],
  ): Promise<void> {
    if (placement && placement.length !== PLACEMENT_ARGS)
      throw new RangeError(`a placement has ${PLACEMENT_ARGS} arguments`);
    return new Promise<void>((resolve, reject) => {
      this.queued.push({ fence, commands, placement, resolve, reject });
      const size = typeof commands === 'function' ? 20 : commands.reduce((sum, c) => sum + 1 + c.length, 0);
      this.args += 4 + (placement?.length ?? 0) + size;
      if (this.args >= MAX_ARGS) this.send();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.send());
      }
    });
  }

  /** Sends what was gathered now (before a command that must not overtake it); a no-op when nothing is. */
  send(): void {
    this.scheduled = false;
    if (this.queued.length === 0) return;
    const writes = this.queued;
    this.queued = [];
    this.args = 0;
    const args: (string | number)[] = [this.refusedKey];
    for (const write of writes) {
      const { fence, placement } = write;
      const commands = typeof write.commands === 'function' ? write.commands() : write.commands;
      args.push(fence?.key ?? '', fence?.token ?? '', placement ? '1' : '0');
      if (placement) args.push(...placement);
      args.push(commands.length);
      for (const command of commands) args.push(command.length, ...command);
    }
    this.calls += 1;
    this.client.switchyardWriteBatch(...args).then(
      (results) =>
        writes.forEach((write, i) => {
          const result = results[i];
          if (result === 1) write.resolve();
          else write.reject(storeErrorOf(new Error(String(result))));
        }),
      (error: unknown) => {
        const failure = storeErrorOf(error);
        for (const write of writes) write.reject(failure);
      },
    );
  }
}

/**
 * A view of `client` that sends the batch's writes before each of its own commands (the
 * ordering rule, above). Every part of a process that talks to Redis beside the store uses it.
 */
export function orderedClient(client: Redis, batch: WriteBatch): Redis {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(client, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      let wrapper = wrapped.get(property);
      if (wrapper === undefined || (wrapper as { original?: unknown }).original !== value) {
        const fn = value as (...args: unknown[]) => unknown;
        wrapper = Object.assign(
          (...args: unknown[]) => {
            batch.send();
            return fn.apply(target, args);
          },
          { original: value },
        );
        wrapped.set(property, wrapper);
      }
      return wrapper;
    },
  });
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
  const failed = message.startsWith('FAILED ') ? message.slice('FAILED '.length) : message;
  return new StoreError('write_failed', `a Redis write failed: ${failed}`, { cause: error });
}
