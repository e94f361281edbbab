/*
 * A real redis-server for one test (or one benchmark): Debian's binary on a free loopback
 * port with its own temp directory, started, stopped (gracefully or killed) and restarted on
 * the same port and directory. Ready means it answered PING; stopped means its process exited.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export const REDIS_SERVER = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';

/** Why Redis tests cannot run here, or undefined when redis-server works. */
export function redisUnavailable(): string | undefined {
  const probe = spawnSync(REDIS_SERVER, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0)
    return `${REDIS_SERVER} is not runnable (${probe.error?.message ?? probe.stderr}); install redis-server (apt-get install redis-server)`;
  return undefined;
}

export interface RedisServerOptions {
  /** `appendonly yes`: writes survive a restart (with appendfsync `everysec` unless set). */
  appendonly?: boolean;
  appendfsync?: 'always' | 'everysec' | 'no';
}

export interface RedisServer {
  port: number;
  url: string;
  dir: string;
  /** Stops it: `SHUTDOWN` (graceful: the AOF is flushed) or SIGKILL. Resolves once the process exited. */
  stop(how?: 'graceful' | 'kill'): Promise<void>;
  /** Starts it again on the same port and directory; resolves once it answers PING. */
  start(): Promise<void>;
  /** Stops it for good and removes its directory. */
  close(): Promise<void>;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<void> => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--daemonize',
      'no',
      '--appendonly',
      options.appendonly ? 'yes' : 'no',
      '--appendfsync',
      options.appendfsync ?? 'everysec',
      '--logfile',
      join(dir, 'redis.log'),
    ];
    const proc = spawn(REDIS_SERVER, args, { stdio: 'ignore' });
    child = proc;
    let gone = false;
    exited = new Promise((resolve) => proc.once('exit', () => ((gone = true), resolve())));
    const client = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await client.connect();
          await client.ping();
          return;
        } catch (error) {
          client.disconnect();
          if (gone) throw new Error(`redis-server exited on port ${port} (see ${join(dir, 'redis.log')})`);
          if (Date.now() > deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }
    } finally {
      client.disconnect();
    }
  };

  // A port found free can be taken before redis-server binds it: then try another.
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }

  const stop = async (how: 'graceful' | 'kill' = 'graceful'): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill(how === 'kill' ? 'SIGKILL' : 'SIGTERM');
    await exited;
    child = undefined;
  };

  return {
    get port() {
      return port;
    },
    get url() {
      return `redis://127.0.0.1:${port}/0`;
    },
    dir,
    stop,
    start: launch,
    close: async () => {
      await stop('kill');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
