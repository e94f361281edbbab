/*
 * One way to connect to Redis, shared by the store, the cluster and anything else that keeps
 * state there (a claim registry, for instance): commands issued in the same tick go out as one
 * pipeline (group commit), and while the server is away commands wait for it instead of failing
 * (a Redis restart delays writes, it does not drop them).
 */
import { Redis } from 'ioredis';
import { StoreError } from './store-error.js';

export type { Redis } from 'ioredis';

export interface RedisClientOptions {
  /**
   * Shown by `CLIENT LIST`, so an operator can tell the connections of each process apart.
   * @default none: the connection has no name
   */
  name?: string;
  /**
   * How long `connectRedis` waits for the first answer before giving up.
   * @default 10000 (10 s)
   */
  connectTimeoutMs?: number;
  /**
   * Told when the connection is lost (once per outage; commands wait for the reconnect meanwhile).
   * @default none: nothing is said
   */
  onConnectionLost?: (error: Error) => void;
}

/** A client that reconnects forever and queues commands meanwhile. */
export function createRedisClient(url: string, options: RedisClientOptions = {}): Redis {
  const client = new Redis(url, {
    enableAutoPipelining: true,
    // Retry forever: a Redis restart must delay a write, not fail it.
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(50 * times, 1000),
    ...(options.name !== undefined ? { connectionName: options.name } : {}),
  });
  let connected = true;
  client.on('ready', () => (connected = true));
  client.on('error', (error: Error) => {
    if (!connected) return;
    connected = false;
    options.onConnectionLost?.(error);
  });
  return client;
}

/** A connected client: rejects with StoreError `unavailable` when Redis does not answer in time. */
export async function connectRedis(url: string, options: RedisClientOptions = {}): Promise<Redis> {
  const client = createRedisClient(url, options);
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new StoreError(
                'unavailable',
                `Redis at ${redactedUrl(url)} did not answer within ${timeoutMs} ms; start redis-server or fix [store] url`,
              ),
            ),
          timeoutMs,
        );
      }),
    ]);
  } catch (error) {
    client.disconnect();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return client;
}

/** The URL without its password, for messages. */
export function redactedUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
