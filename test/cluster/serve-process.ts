/*
 * Real `switchyard serve` processes of one cluster: each on its own data directory holding
 * the cluster's shared token file, its gateway on a free port (--port 0), found through what
 * it announces in Redis — the test waits on that protocol answer, never on the child's output,
 * which is read only once the child has exited. One Node process per server (node --import
 * tsx), so a signal reaches the server itself: SIGKILL kills it, SIGSTOP pauses it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { eventually } from '../support/eventually.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface ClusterLayout {
  root: string;
  redisUrl: string;
  keyPrefix: string;
  token: string;
  leaseSeconds: number;
  /** TOML lines added to every process's config. */
  extraToml?: string;
}

export interface ServeProcess {
  nodeId: string;
  child: ChildProcess;
  url: string;
  client: SwitchyardClient;
  /** stdout and stderr so far; read it only after `exited`. */
  output(): string;
  exited: Promise<number | null>;
}

export async function writeClusterConfig(
  layout: ClusterLayout,
  nodeId: string,
): Promise<{ configPath: string; dataDir: string }> {
  const dataDir = join(layout.root, nodeId);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // The cluster's processes share one token by sharing the token file's contents.
  await writeFile(join(dataDir, 'token'), `${layout.token}\n`, { mode: 0o600 });
  const configPath = join(layout.root, `${nodeId}.toml`);
  await writeFile(
    configPath,
    [
      '[store]',
      'kind = "redis"',
      `url = "${layout.redisUrl}"`,
      `key_prefix = "${layout.keyPrefix}"`,
      '[cluster]',
      `lease_seconds = ${layout.leaseSeconds}`,
      `node_id = "${nodeId}"`,
      layout.extraToml ?? '',
    ].join('\n'),
  );
  return { configPath, dataDir };
}

/** Starts one process and resolves once it announced its gateway in Redis and a client is connected. */
export async function startServeProcess(layout: ClusterLayout, nodeId: string): Promise<ServeProcess> {
  const { configPath, dataDir } = await writeClusterConfig(layout, nodeId);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli.ts',
      'serve',
      '--config',
      configPath,
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--grace-seconds',
      '0',
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, SWITCHYARD_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const redis = new Redis(layout.redisUrl);
  redis.on('error', () => {});
  let url: string | undefined;
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null)
          throw new Error(`${nodeId} exited with ${child.exitCode}: ${await exited.then(() => output)}`);
        const info = await redis.hget(`${layout.keyPrefix}node-info`, nodeId);
        url = info ? (JSON.parse(info) as { url?: string }).url : undefined;
        return url !== undefined;
      },
      `${nodeId} announced its gateway`,
      { withinMs: 120_000 },
    );
  } finally {
    redis.disconnect();
  }
  const client = await connect(url!, { token: layout.token });
  return { nodeId, child, url: url!, client, output: () => output, exited };
}

/** Ends a process: SIGTERM (graceful) unless it is gone already; resolves once it exited. */
export async function stopServeProcess(process: ServeProcess): Promise<void> {
  await process.client.close().catch(() => {});
  if (process.child.exitCode === null && process.child.signalCode === null) {
    process.child.kill('SIGCONT');
    process.child.kill('SIGTERM');
  }
  await process.exited;
}
