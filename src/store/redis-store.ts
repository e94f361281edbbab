/*
 * The Redis store: the Store contract on one Redis server that several gateway processes can
 * share (README, "Several gateway processes"; docs/cluster.md lists the keys). Run records,
 * lanes and steers are JSON strings; each run's log and each session's log are Redis Streams
 * whose entry ids are the event's `seq` / `sessionSeq` (`<n>-0`), so a log cannot hold two
 * events with one number and a replay is one XRANGE; every event also goes to a capped feed
 * stream that live subscribers to all runs follow.
 *
 * The writes asked for in one turn of the event loop go to Redis as one script call
 * (fenced-write.ts), each write applied whole; with `fencing`, each carries the session's
 * fencing token and Redis refuses it once another process owns the session. `client` is the
 * ordered view of the connection: a read, or any command another part of the process sends
 * through it, first sends the writes asked for before it, so reads see them and no command can
 * overtake them. `durable()` resolves once Redis acknowledged every write asked for before it.
 * How much of that survives a crash of Redis itself is Redis's `appendonly` / `appendfsync`
 * setting (README).
 */
import type { Redis } from 'ioredis';
import type { RunEvent } from '../core/run-events.js';
import { isTerminalEvent } from '../core/run-events.js';
import { isTerminalState } from '../core/run-status.js';
import type { Message } from '../model/types.js';
import { orderedClient, storeErrorOf, WriteBatch, type RedisCommand, type WriteFence } from './fenced-write.js';
import { LruMap } from './lru-map.js';
import { PendingWrites } from './pending-writes.js';
import { connectRedis } from './redis-client.js';
import { RedisKeys } from './redis-keys.js';
import { StoreError } from './store-error.js';
import { queryPage } from './run-index.js';
import { runOutcomeOf } from './run-summary.js';
import { RedisRunIndex } from './redis-run-index.js';
import { entryFields, eventsOfEntries, lastEventOf } from './redis-log-entry.js';
import type {
  RunPage,
  RunQuery,
  RunRecord,
  RunState,
  SessionWork,
  SteerRecord,
  Store,
  StoredLaneEntry,
} from './types.js';

/** Which token a process writes a session under (the cluster's leases answer it). */
export interface SessionFencing {
  /** The token of this process for the session, or undefined when it does not own it: the write is refused. */
  tokenOf(sessionId: string): string | undefined;
}

export interface RedisStoreOptions {
  /**
   * A connected client (the store does not close it); or `url` to connect one. One of the two
   * must be given.
   * @default none: the store connects to `url`
   */
  client?: Redis;
  /**
   * The Redis URL the store connects to (and closes at close()) when no `client` is given.
   * @default none: `client` is used
   */
  url?: string;
  /**
   * Prepended to every key.
   * @default "switchyard:"
   */
  keyPrefix?: string;
  /**
   * Fence every session's writes with its owner's token (the cluster does).
   * @default none: writes are not fenced
   */
  fencing?: SessionFencing;
  /**
   * Entries the all-runs feed keeps (approximately).
   * @default 10000
   */
  feedLength?: number;
}

const DEFAULT_FEED_LENGTH = 10_000;
const EMPTY_LANES_KEPT = 10_000;

export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly keys: RedisKeys;
  /** The connection, ordered behind the store's writes (fenced-write.ts): use it for every other command. */
  readonly client: Redis;
  readonly batch: WriteBatch;
  private readonly pending = new PendingWrites();
  private readonly runIndex: RedisRunIndex;
  /** The sessions whose lane this process last wrote empty, under which token (saveLane). */
  private readonly emptyLanes = new LruMap<string, { token: string; written: Promise<void> }>(EMPTY_LANES_KEPT);
  /** Each session's events of this turn, gathered into one write until the call is sent (appendEvent). */
  private readonly steps = new Map<string, { events: { event: RunEvent; json: string }[]; written: Promise<void> }>();
  private readonly feedLength: number;
  private closed = false;

  private constructor(
    private readonly raw: Redis,
    private readonly ownsClient: boolean,
    private readonly options: RedisStoreOptions,
  ) {
    this.keys = new RedisKeys(options.keyPrefix ?? 'switchyard:');
    this.feedLength = options.feedLength ?? DEFAULT_FEED_LENGTH;
    this.batch = new WriteBatch(raw, this.keys.refusedWrites());
    this.client = orderedClient(raw, this.batch);
    this.runIndex = new RedisRunIndex(this.client, this.keys);
  }

  /** Opens the store on a client, or connects to `url` (rejects with StoreError `unavailable`). */
  static async open(options: RedisStoreOptions): Promise<RedisStore> {
    if (options.client) return new RedisStore(options.client, false, options);
    if (options.url === undefined) throw new TypeError('RedisStore.open needs a client or a url');
    return new RedisStore(await connectRedis(options.url, { name: 'switchyard-store' }), true, options);
  }

  saveRun(record: RunRecord): Promise<void> {
    const id = record.runId;
    const score = scoreOf(record.createdAt);
    // The placement also enters the run in the open index, at its first save only (when it is not
    // ended then); it leaves that index when openRuns() finds both its record and its log ended.
    return this.write(
      record.sessionId,
      [['SET', this.keys.run(id), JSON.stringify(record)]],
      [
        this.keys.runIndex(),
        id,
        record.sessionId,
        record.state,
        runOutcomeOf(record) ?? '',
        this.keys.open(),
        this.keys.open(record.sessionId),
        score,
      ],
    );
  }

  queryRuns(query: RunQuery): Promise<RunPage> {
    return queryPage(query, this.runIndex);
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    return parsed<RunRecord>(await this.read(() => this.client.get(this.keys.run(runId))), this.keys.run(runId));
  }

  /**
   * The events a session appends in one turn are one write: one entry in each run's log, one in
   * the session's log, one in the feed (redis-log-entry.ts). The write takes its place in the
   * call at the session's first event of the turn; later ones join it until the call is sent.
   */
  appendEvent(event: RunEvent): Promise<void> {
    const json = JSON.stringify(event);
    const fence = this.fenceOf(event.sessionId);
    if (fence instanceof StoreError) return this.pending.track(Promise.reject(fence));
    const key = `${event.sessionId}\n${fence?.token ?? ''}`;
    let step = this.steps.get(key);
    if (!step) {
      const events: { event: RunEvent; json: string }[] = [];
      const written = this.send(fence, () => {
        this.steps.delete(key);
        return this.eventCommands(events);
      });
      step = { events, written };
      this.steps.set(key, step);
    }
    step.events.push({ event, json });
    return step.written;
  }

  async readEvents(runId: string, afterSeq = 0): Promise<RunEvent[]> {
    const entries = await this.read(() => this.client.xrange(this.keys.runEvents(runId), `${afterSeq + 1}-0`, '+'));
    return eventsOfEntries(entries).filter((event) => event.seq > afterSeq);
  }

  async readSessionEvents(sessionId: string, afterSessionSeq = 0): Promise<RunEvent[]> {
    const entries = await this.read(() =>
      this.client.xrange(this.keys.sessionEvents(sessionId), `${afterSessionSeq + 1}-0`, '+'),
    );
    return eventsOfEntries(entries).filter((event) => event.sessionSeq > afterSessionSeq);
  }

  async lastSessionSeq(sessionId: string): Promise<number> {
    const [last] = await this.read(() =>
      this.client.xrevrange(this.keys.sessionEvents(sessionId), '+', '-', 'COUNT', 1),
    );
    return last ? Number(last[0].split('-')[0]) : 0;
  }

  appendMessages(sessionId: string, messages: Message[]): Promise<void> {
    if (messages.length === 0) return this.write(sessionId, []);
    return this.write(sessionId, [
      ['RPUSH', this.keys.conversation(sessionId), ...messages.map((m) => JSON.stringify(m))],
    ]);
  }

  async readConversation(sessionId: string): Promise<Message[]> {
    const items = await this.read(() => this.client.lrange(this.keys.conversation(sessionId), 0, -1));
    return items.map((item) => JSON.parse(item) as Message);
  }

  /**
   * An empty lane written again under the same fencing token is not sent: while this process
   * holds the token nobody else writes the session's lane, so it is still empty (every run
   * that leaves an empty lane would otherwise cost a DEL and an SREM).
   */
  saveLane(sessionId: string, entries: StoredLaneEntry[]): Promise<void> {
    const token = this.options.fencing?.tokenOf(sessionId);
    if (entries.length === 0) {
      const empty = this.emptyLanes.get(sessionId);
      if (token !== undefined && empty?.token === token) return empty.written;
      const written = this.write(sessionId, [
        ['DEL', this.keys.lane(sessionId)],
        ['SREM', this.keys.lanes(), sessionId],
      ]);
      if (token !== undefined) {
        const entry = { token, written };
        this.emptyLanes.set(sessionId, entry);
        written.catch(() => {
          if (this.emptyLanes.get(sessionId) === entry) this.emptyLanes.delete(sessionId);
        });
      }
      return written;
    }
    this.emptyLanes.delete(sessionId);
    const lane = entries.map((entry) => ({ ...entry }));
    return this.write(sessionId, [
      ['SET', this.keys.lane(sessionId), JSON.stringify(lane)],
      ['SADD', this.keys.lanes(), sessionId],
    ]);
  }

  async readLanes(): Promise<Record<string, StoredLaneEntry[]>> {
    const sessionIds = (await this.read(() => this.client.smembers(this.keys.lanes()))).sort();
    const lanes: Record<string, StoredLaneEntry[]> = {};
    if (sessionIds.length === 0) return lanes;
    const values = await this.read(() => this.client.mget(sessionIds.map((id) => this.keys.lane(id))));
    sessionIds.forEach((sessionId, i) => {
      const lane = parsed<StoredLaneEntry[]>(values[i] ?? null, this.keys.lane(sessionId));
      if (lane && lane.length > 0) lanes[sessionId] = lane;
    });
    return lanes;
  }

  /** From the runs index: its unended list for queued and running runs, its state lists for ended ones. */
  async listRuns(states: readonly RunState[]): Promise<RunRecord[]> {
    if (states.length === 0) return [];
    const lists = new Set(
      states.map((state) =>
        isTerminalState(state) ? this.keys.runList({ kind: 'state', state }) : this.keys.unendedRuns(),
      ),
    );
    const ids = await this.read(() => Promise.all([...lists].map((list) => this.client.zrange(list, 0, -1))));
    const records = await this.records([...new Set(ids.flat())]);
    return records
      .filter((record) => states.includes(record.state))
      .sort((a, b) => scoreOf(a.createdAt) - scoreOf(b.createdAt));
  }

  async openRuns(): Promise<RunRecord[]> {
    return this.openRunsIn(this.keys.open());
  }

  saveSteer(record: SteerRecord): Promise<void> {
    const id = record.steerId;
    const pending = record.state === 'pending';
    const score = scoreOf(record.createdAt);
    return this.write(record.sessionId, [
      ['SET', this.keys.steer(id), JSON.stringify(record)],
      pending ? ['ZADD', this.keys.pendingSteers(), score, id] : ['ZREM', this.keys.pendingSteers(), id],
      pending
        ? ['ZADD', this.keys.pendingSteers(record.sessionId), score, id]
        : ['ZREM', this.keys.pendingSteers(record.sessionId), id],
    ]);
  }

  async getSteer(steerId: string): Promise<SteerRecord | undefined> {
    return parsed<SteerRecord>(
      await this.read(() => this.client.get(this.keys.steer(steerId))),
      this.keys.steer(steerId),
    );
  }

  async pendingSteers(): Promise<SteerRecord[]> {
    return this.pendingSteersIn(this.keys.pendingSteers());
  }

  saveGrants(sessionId: string, fingerprints: string[]): Promise<void> {
    return this.write(sessionId, [['HSET', this.keys.grants(), sessionId, JSON.stringify(fingerprints)]]);
  }

  async readGrants(): Promise<Record<string, string[]>> {
    const all = await this.read(() => this.client.hgetall(this.keys.grants()));
    return Object.fromEntries(
      Object.entries(all).map(([sessionId, json]) => [sessionId, JSON.parse(json) as string[]]),
    );
  }

  /** Everything recovery needs of one session, read by its keys alone (a takeover reads no other session). */
  async readSessionWork(sessionId: string): Promise<SessionWork> {
    const [open, pendingSteers, lane, grants] = await Promise.all([
      this.openRunsIn(this.keys.open(sessionId)),
      this.pendingSteersIn(this.keys.pendingSteers(sessionId)),
      this.read(() => this.client.get(this.keys.lane(sessionId))),
      this.read(() => this.client.hget(this.keys.grants(), sessionId)),
    ]);
    return {
      open,
      pendingSteers,
      lane: parsed<StoredLaneEntry[]>(lane, this.keys.lane(sessionId)) ?? [],
      grants: parsed<string[]>(grants, this.keys.grants()) ?? [],
    };
  }

  durable(): Promise<void> {
    this.batch.send();
    return this.pending.settled();
  }

  flush(): Promise<void> {
    return this.durable();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.batch.send();
    await this.pending.settled().catch(() => {});
    if (this.ownsClient) await this.raw.quit().catch(() => this.raw.disconnect());
  }

  /** Runs indexed as open under `key` whose record or log has not ended; the ended ones leave the index. */
  private async openRunsIn(key: string): Promise<RunRecord[]> {
    const ids = await this.read(() => this.client.zrange(key, 0, -1));
    if (ids.length === 0) return [];
    const [records, lastEvents] = await Promise.all([
      this.records(ids),
      this.read(() =>
        Promise.all(ids.map((id) => this.client.xrevrange(this.keys.runEvents(id), '+', '-', 'COUNT', 1))),
      ),
    ]);
    const open: RunRecord[] = [];
    const ended: RunRecord[] = [];
    records.forEach((record, i) => {
      const last = lastEvents[i]?.[0];
      const lastEvent = last === undefined ? undefined : lastEventOf(last);
      const logEnded = lastEvent !== undefined && isTerminalEvent(lastEvent);
      (isTerminalState(record.state) && logEnded ? ended : open).push(record);
    });
    if (ended.length > 0) {
      // Index upkeep only: a run whose record and log both ended never opens again, so this needs no fence.
      const pipeline = this.client.multi();
      for (const record of ended)
        pipeline.zrem(this.keys.open(), record.runId).zrem(this.keys.open(record.sessionId), record.runId);
      await this.read(() => pipeline.exec());
    }
    return open;
  }

  private async pendingSteersIn(key: string): Promise<SteerRecord[]> {
    const ids = await this.read(() => this.client.zrange(key, 0, -1));
    if (ids.length === 0) return [];
    const values = await this.read(() => this.client.mget(ids.map((id) => this.keys.steer(id))));
    const steers = values.flatMap((value, i) => parsed<SteerRecord>(value ?? null, this.keys.steer(ids[i]!)) ?? []);
    return steers
      .filter((s) => s.state === 'pending')
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /** The records of `ids` in that order; ids without a record are skipped. */
  private async records(ids: string[]): Promise<RunRecord[]> {
    if (ids.length === 0) return [];
    const values = await this.read(() => this.client.mget(ids.map((id) => this.keys.run(id))));
    return values.flatMap((value, i) => parsed<RunRecord>(value ?? null, this.keys.run(ids[i]!)) ?? []);
  }

  /** The commands of a session's events of one turn, in the order they were appended. */
  private eventCommands(events: { event: RunEvent; json: string }[]): RedisCommand[] {
    const byRun = new Map<string, { last: number; json: string[] }>();
    for (const { event, json } of events) {
      const run = byRun.get(event.runId) ?? { last: 0, json: [] };
      run.last = event.seq;
      run.json.push(json);
      byRun.set(event.runId, run);
    }
    const all = events.map((e) => e.json);
    const { sessionId, sessionSeq } = events.at(-1)!.event;
    return [
      // First: an event number already stored is refused before anything else is written.
      ...[...byRun].map(([runId, run]): RedisCommand => [
        'XADD',
        this.keys.runEvents(runId),
        `${run.last}-0`,
        ...entryFields(run.json),
      ]),
      ['XADD', this.keys.sessionEvents(sessionId), `${sessionSeq}-0`, ...entryFields(all)],
      ['XADD', this.keys.feed(), 'MAXLEN', '~', this.feedLength, '*', ...entryFields(all)],
    ];
  }

  /** The fence a write of the session carries; a StoreError when this process does not own the session. */
  private fenceOf(sessionId: string): WriteFence | undefined | StoreError {
    if (!this.options.fencing) return undefined;
    const token = this.options.fencing.tokenOf(sessionId);
    if (token === undefined)
      return new StoreError('fenced', `this process does not own session "${sessionId}"; its write was not sent`);
    return { key: this.keys.fence(sessionId), token };
  }

  private write(sessionId: string, commands: RedisCommand[], placement?: (string | number)[]): Promise<void> {
    const fence = this.fenceOf(sessionId);
    if (fence instanceof StoreError) return this.pending.track(Promise.reject(fence));
    return this.send(fence, commands, placement);
  }

  /** Adds a write to this turn's call (fenced-write.ts); `commands` may be taken only when the call is sent. */
  private send(
    fence: WriteFence | undefined,
    commands: RedisCommand[] | (() => RedisCommand[]),
    placement?: (string | number)[],
  ): Promise<void> {
    if (this.closed) return Promise.reject(new StoreError('store_closed', 'the Redis store is closed; open a new one'));
    if (Array.isArray(commands) && commands.length === 0 && fence === undefined) return Promise.resolve();
    return this.pending.track(this.batch.add(fence, commands, placement));
  }

  private async read<T>(command: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreError('store_closed', 'the Redis store is closed; open a new one');
    try {
      return await command();
    } catch (error) {
      const failure = storeErrorOf(error);
      throw new StoreError('unavailable', `a Redis read failed: ${failure.message}`, { cause: error });
    }
  }
}

/** Creation time as a sort score (ms); a time that does not parse sorts first. */
function scoreOf(iso: string): number {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : 0;
}

function parsed<T>(value: string | null, key: string): T | undefined {
  if (value === null) return undefined;
  try {
    return JSON.parse(value) as T;
  } catch {
    throw new StoreError(
      'corrupt_file',
      `key ${key} does not hold JSON; it was not written by this store: delete it or restore it`,
    );
  }
}
