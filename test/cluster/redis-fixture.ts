/*
 * One redis-server for a test file: started before its tests, stopped after them, with a
 * client on it. Without a runnable redis-server the file says why and its suites skip
 * (`available` is false), or fail where real parts are required (test/support/real-parts.ts).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startRedisServer, type RedisServer } from './redis-server.js';
import { hasRedis } from '../support/real-parts.js';

export interface RedisFixture {
  /** Whether redis-server runs here (hasRedis). */
  available: boolean;
  /** Set once the file's beforeAll ran. */
  server: RedisServer;
  client: Redis;
}

/** @example const redis = redisFixture('the limiter tests'); describe.skipIf(!redis.available)(…) */
export function redisFixture(what: string): RedisFixture {
  const fixture = { available: hasRedis(what) } as RedisFixture;
  beforeAll(async () => {
    if (!fixture.available) return;
    fixture.server = await startRedisServer();
    fixture.client = new Redis(fixture.server.url);
  }, 60_000);
  afterAll(async () => {
    fixture.client?.disconnect();
    await fixture.server?.close();
  });
  return fixture;
}
