/*
 * `switchyard acp`: Switchyard as an Agent Client Protocol agent on stdin/stdout, for editors.
 * In process (the engine on the file store and the configured models, as `npm start` has
 * them) or in front of a running gateway (--gateway). stdout carries protocol frames only:
 * every log line, ours or a library's, goes to stderr. Runs until the editor closes stdin or
 * sends SIGINT/SIGTERM (exit 0), or until the gateway connection is lost (exit 1).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { ndJsonStream } from '@agentclientprotocol/sdk';
import { switchyardAgent } from '../acp/agent.js';
import type { AcpBackend } from '../acp/backend.js';
import { engineBackend } from '../acp/engine-backend.js';
import { gatewayBackend } from '../acp/gateway-backend.js';
import { connect } from '../client/client.js';
import { defaultConfig, loadConfig, type Config } from '../config/index.js';
import { LowdbStore, MemoryStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { parseCommandArgs, UsageError, type CliIo } from './cli-args.js';
import { gatewayTarget } from './gateway-target.js';

export const ACP_USAGE = `usage: switchyard acp [--config switchyard.toml] [--data-dir DIR]
       switchyard acp --gateway ws://HOST:PORT [--token-file FILE | --data-dir DIR]

  Speaks the Agent Client Protocol (v1) on stdin/stdout for an editor; logs go to stderr.
  Without --gateway the engine runs in this process with the models of --config, on the
  file store in --data-dir (default: the config's [store] dir when it sets one, else
  ~/.switchyard/acp/<a hash of the directory the editor starts it in>, outside the project).
  With --gateway it fronts a running gateway; the token comes from --token-file,
  $SWITCHYARD_TOKEN or <--data-dir>/token.
`;

const OPTIONS = {
  config: { type: 'string' },
  'data-dir': { type: 'string' },
  gateway: { type: 'string' },
  'token-file': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface AcpStreams {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
}

export async function acpCommand(
  argv: string[],
  io: CliIo,
  streams: AcpStreams = { stdin: process.stdin, stdout: process.stdout },
  signals: NodeJS.EventEmitter = process,
): Promise<number> {
  const { values } = parseCommandArgs(argv, OPTIONS);
  if (values.help) {
    io.out(ACP_USAGE);
    return 0;
  }
  if (values.gateway !== undefined && values.config !== undefined) {
    throw new UsageError('--config configures an in-process engine; a gateway runs with its own config');
  }
  routeConsoleToStderr();
  const warn = (message: string) => io.err(`switchyard acp: ${message}`);

  let backend: AcpBackend;
  let lost: Promise<string> = new Promise(() => {});
  if (values.gateway !== undefined) {
    const { url, token } = await gatewayTarget(values, values.gateway, warn);
    const client = await connect(url, { token });
    backend = gatewayBackend(client);
    lost = client.closed.then(
      ({ code, reason }) => `the gateway connection closed (${code}${reason ? `: ${reason}` : ''})`,
    );
  } else {
    const config: Config = values.config !== undefined ? await loadConfig(values.config) : defaultConfig();
    const store = await openStore(config, values['data-dir']);
    try {
      backend = await engineBackend({ ...(values.config !== undefined ? { config: values.config } : {}), store, warn });
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  const app = switchyardAgent({ backend, version: packageVersion(), warn, checkCwd: values.gateway === undefined });
  const connection = app.connect(
    ndJsonStream(
      Writable.toWeb(streams.stdout as Writable) as WritableStream<Uint8Array>,
      Readable.toWeb(streams.stdin as Readable) as ReadableStream<Uint8Array>,
    ),
  );
  let onSignal: (() => void) | undefined;
  const signalled = new Promise<string>((resolveSignal) => {
    onSignal = () => resolveSignal('signal');
    signals.once('SIGINT', onSignal);
    signals.once('SIGTERM', onSignal);
  });
  const why = await Promise.race([
    connection.closed.then(() => 'closed'),
    signalled,
    lost.then((reason) => `lost: ${reason}`),
  ]);
  signals.off('SIGINT', onSignal!);
  signals.off('SIGTERM', onSignal!);
  connection.close();
  // The engine cancels what still runs and flushes the store; queued messages stay queued.
  await backend.close();
  if (!why.startsWith('lost: ')) return 0;
  warn(why.slice('lost: '.length));
  return 1;
}

/**
 * The file store of the data dir. An editor starts the agent inside the project, so the default
 * lies outside it (the agent's tools and sandbox must not reach the store), one per project
 * (each editor window runs its own agent, and a store has one owner).
 */
async function openStore(config: Config, dataDirFlag: string | undefined): Promise<Store> {
  if (config.store.kind === 'memory') return new MemoryStore();
  const configured = config.store.dir !== defaultConfig().store.dir ? config.store.dir : undefined;
  const project = createHash('sha256').update(process.cwd()).digest('hex').slice(0, 16);
  return LowdbStore.open(resolve(dataDirFlag ?? configured ?? join(homedir(), '.switchyard', 'acp', project)));
}

/** Libraries may log with console.log; on this command stdout is the protocol's. */
function routeConsoleToStderr(): void {
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
}

function packageVersion(): string {
  const manifest = createRequire(import.meta.url)('switchyard/package.json') as { version?: unknown };
  return typeof manifest.version === 'string' ? manifest.version : '0.0.0';
}
