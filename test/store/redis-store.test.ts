/*
 * RedisStore on a real redis-server (one per file, a fresh key prefix per test): the Store
 * contract (read-your-writes, through a second connection, with every write fenced), then what
 * only the Redis store has — fenced writes refused once the session has a newer owner, logs
 * that refuse a second event with one number, one session's work read alone, and writes that
 * wait out a Redis restart instead of failing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis, Store } from '../../src/store/index.js';
import { connectRedis } from '../../src/store/redis-client.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { startRedisServer, type RedisServer } from '../cluster/redis-server.js';
import { hasRedis } from '../support/real-parts.js';
import { createEngine } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { describeStoreConformance, runEvent, runRecord } from './store-conformance.js';

const redisRuns = hasRedis('the Redis store tests');

let server: RedisServer;
const clients: Redis[] = [];

async function client(): Promise<Redis> {
  const c = await connectRedis(server.url);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  if (redisRuns) server = await startRedisServer({ appendonly: true });
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await server?.close();
});

function harness(options: { secondConnection: boolean; fenced: boolean }) {
  return {
    open: async (): Promise<Store> => {
      const keyPrefix = `t${randomUUID().slice(0, 8)}:`;
      const redis = await client();
      if (!options.fenced) return RedisStore.open({ client: redis, keyPrefix });
      // Every session of the contract's cases is owned under token 7.
      const store = await RedisStore.open({ client: redis, keyPrefix, fencing: { tokenOf: () => '7' } });
      for (const sessionId of ['s1', 's2', 's3', 's9']) await redis.set(store.keys.fence(sessionId), '7');
      return store;
    },
    reread: async (store: Store): Promise<Store> => {
      if (!options.secondConnection) return store;
      await store.durable();
      const prefix = (store as RedisStore).keys.prefix;
      return RedisStore.open({ client: await client(), keyPrefix: prefix });
    },
  };
}

describe.skipIf(!redisRuns)('RedisStore', () => {
  describeStoreConformance(
    'RedisStore, read on the same connection',
    harness({ secondConnection: false, fenced: false }),
  );
  describeStoreConformance(
    'RedisStore, read through another connection',
    harness({ secondConnection: true, fenced: false }),
  );
  describeStoreConformance(
    "RedisStore, every write fenced by its session's owner",
    harness({ secondConnection: true, fenced: true }),
  );

  describe('with fencing', () => {
    it('writes carrying the current token land; a stale token is refused and counted, changing nothing', async () => {
      const redis = await client();
      const keyPrefix = `f${randomUUID().slice(0, 8)}:`;
      let token = '1';
      const store = await RedisStore.open({ client: redis, keyPrefix, fencing: { tokenOf: () => token } });
      await redis.set(store.keys.fence('s1'), '1');
      await store.saveRun(runRecord('r1', 'running'));
      await store.appendEvent(runEvent('r1', 's1', 1, 1));
      // Another process took the session: the fence moved on.
      await redis.set(store.keys.fence('s1'), '2');
      await expect(store.appendEvent(runEvent('r1', 's1', 2, 2))).rejects.toMatchObject({ code: 'fenced' });
      await expect(store.saveRun(runRecord('r1', 'completed'))).rejects.toMatchObject({ code: 'fenced' });
      await expect(store.durable()).resolves.toBeUndefined();
      expect((await store.readEvents('r1')).map((e) => e.seq)).toEqual([1]);
      expect((await store.getRun('r1'))?.state).toBe('running');
      expect(await redis.get(store.keys.refusedWrites())).toBe('2');
      token = '2';
      await store.appendEvent(runEvent('r1', 's1', 2, 2));
      expect((await store.readEvents('r1')).map((e) => e.seq)).toEqual([1, 2]);
    });

    it('a session this process does not own is refused without asking Redis, and durable() reports it', async () => {
      const store = await RedisStore.open({
        client: await client(),
        keyPrefix: `n${randomUUID().slice(0, 8)}:`,
        fencing: { tokenOf: () => undefined },
      });
      const write = store.saveRun(runRecord('r1', 'queued'));
      const durable = store.durable();
      await expect(write).rejects.toMatchObject({ code: 'fenced' });
      await expect(durable).rejects.toMatchObject({ code: 'fenced' });
      expect(await store.getRun('r1')).toBeUndefined();
    });
  });

  it('a log refuses a second event with the same seq, and the other logs stay untouched', async () => {
    const store = await RedisStore.open({ client: await client(), keyPrefix: `d${randomUUID().slice(0, 8)}:` });
    await store.appendEvent(runEvent('r1', 's1', 1, 1));
    await expect(store.appendEvent(runEvent('r1', 's1', 1, 2))).rejects.toMatchObject({ code: 'write_failed' });
    expect((await store.readSessionEvents('s1')).map((e) => e.sessionSeq)).toEqual([1]);
    expect(await store.lastSessionSeq('s1')).toBe(1);
  });

  it('readSessionWork reads one session: its open runs, pending steers, lane and grants', async () => {
    const store = await RedisStore.open({ client: await client(), keyPrefix: `w${randomUUID().slice(0, 8)}:` });
    void store.saveRun(runRecord('a', 'running', 's1'));
    void store.saveRun(runRecord('b', 'queued', 's2'));
    void store.saveRun(runRecord('c', 'queued', 's1'));
    void store.saveLane('s1', [{ runId: 'c', viaInterrupt: true }]);
    void store.saveGrants('s1', ['fp']);
    void store.saveSteer({
      steerId: 'st',
      sessionId: 's1',
      into: 'a',
      state: 'pending',
      createdAt: '2026-01-01T00:00:00.000Z',
      request: runRecord('st', 'queued').request,
    });
    const work = await store.readSessionWork('s1');
    expect(work.open.map((r) => r.runId).sort()).toEqual(['a', 'c']);
    expect(work.pendingSteers.map((s) => s.steerId)).toEqual(['st']);
    expect(work.lane).toEqual([{ runId: 'c', viaInterrupt: true }]);
    expect(work.grants).toEqual(['fp']);
    expect(await store.readSessionWork('s3')).toEqual({ open: [], pendingSteers: [], lane: [], grants: [] });
  });

  it('writes issued while Redis restarts wait for it and land; with AOF nothing acknowledged is lost', async () => {
    const keyPrefix = `r${randomUUID().slice(0, 8)}:`;
    const store = await RedisStore.open({ url: server.url, keyPrefix });
    for (let seq = 1; seq <= 50; seq++) void store.appendEvent(runEvent('r1', 's1', seq, seq));
    await store.durable();
    await server.stop('graceful');
    const during = Array.from({ length: 50 }, (_, i) => store.appendEvent(runEvent('r1', 's1', 51 + i, 51 + i)));
    await server.start();
    await Promise.all(during);
    expect((await store.readEvents('r1')).map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    await store.close();
  }, 60_000);

  it('createEngine with [store] kind = "redis" keeps runs, logs and conversations there for the next engine', async () => {
    const config = { store: { kind: 'redis' as const, url: server.url, key_prefix: `e${randomUUID().slice(0, 8)}:` } };
    const first = await createEngine({
      config,
      models: { scripted: scriptedModel((ctx) => ({ text: `seen ${ctx.messages.length}` })) },
    });
    const { runId } = await first.submit({ sessionId: 'alice', input: 'hello' });
    expect(await first.wait(runId)).toMatchObject({ state: 'completed', output: 'seen 1' });
    await first.close();
    const second = await createEngine({
      config,
      models: { scripted: scriptedModel((ctx) => ({ text: `seen ${ctx.messages.length}` })) },
    });
    expect((await second.history(runId)).map((e) => e.type)).toEqual([
      'run.started',
      'turn.started',
      'model.delta',
      'model.message',
      'turn.finished',
      'run.completed',
    ]);
    const next = await second.submit({ sessionId: 'alice', input: 'again' });
    expect(await second.wait(next.runId)).toMatchObject({ state: 'completed', output: 'seen 3' });
    expect((await second.history(next.runId))[0]).toMatchObject({ type: 'run.started', sessionSeq: 7 });
    await second.close();
  });
});
