/*
 * One redis-server for a test file: started before its tests, stopped after them, with a
 * client on it. Without a runnable redis-server the file says why and its suites skip
 * (`missing`); CI installs it, so there they always run.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { redisUnavailable, startRedisServer, type RedisServer } from './redis-server.js';

export interface RedisFixture {
  /** Why Redis tests cannot run here, or undefined. */
  missing: string | undefined;
  /** Set once the file's beforeAll ran. */
  server: RedisServer;
  client: Redis;
}

/** @example const redis = redisFixture('the limiter tests'); describe.skipIf(redis.missing !== undefined)(…) */
export function redisFixture(what: string): RedisFixture {
  const missing = redisUnavailable();
  if (missing) console.log(`skipping ${what}: ${missing}`);
  const fixture = { missing } as RedisFixture;
  beforeAll(async () => {
    if (missing) return;
    fixture.server = await startRedisServer();
    fixture.client = new Redis(fixture.server.url);
  }, 60_000);
  afterAll(async () => {
    fixture.client?.disconnect();
    await fixture.server?.close();
  });
  return fixture;
}
