/*
 * `switchyard node`: a node client for node_invoke (docs/protocol.md, "Node clients"). Connects to
 * a gateway with role node under --name, runs the commands it is sent in its workspace and sandbox,
 * reconnects with backoff when the gateway goes away, and exits 0 on SIGINT/SIGTERM (1 when the
 * gateway refuses it: the name is taken, the token is wrong).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NodeClientError, runNodeClient } from '../gateway/nodes/node-client.js';
import { NodeNameSchema } from '../gateway/nodes/node-protocol.js';
import type { SandboxBackend } from '../sandbox/run-command.js';
import { parseCommandArgs, UsageError, type CliIo } from './cli-args.js';
import { gatewayTarget } from './gateway-target.js';

export const NODE_USAGE = `usage: switchyard node --gateway ws://HOST:PORT --name NAME
                      [--token-file FILE | --data-dir DIR]
                      [--workspace DIR] [--sandbox auto|bwrap|none] [--network]

  Runs the node_invoke commands a gateway sends to NAME (unique among its nodes), until
  SIGINT/SIGTERM. The token comes from --token-file, $SWITCHYARD_TOKEN or <--data-dir,
  default .switchyard>/token (--token=T works too, with a warning: every user of the
  machine can read a command line).

  --workspace   where commands run (default: a fresh temporary directory, removed on exit)
  --sandbox     auto (bubblewrap when it works, else unsandboxed with a warning), bwrap
                (refuse to run without it) or none (default auto)
  --network     let sandboxed commands use the network (default: no network under bwrap)
`;

const OPTIONS = {
  gateway: { type: 'string' },
  name: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'data-dir': { type: 'string' },
  workspace: { type: 'string' },
  sandbox: { type: 'string' },
  network: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const BACKENDS: readonly SandboxBackend[] = ['auto', 'bwrap', 'none'];

export async function nodeCommand(argv: string[], io: CliIo, signals: NodeJS.EventEmitter = process): Promise<number> {
  const { values } = parseCommandArgs(argv, OPTIONS);
  if (values.help) {
    io.out(NODE_USAGE);
    return 0;
  }
  if (values.gateway === undefined) throw new UsageError('--gateway ws://HOST:PORT is required');
  if (values.name === undefined) throw new UsageError("--name is required (unique among the gateway's nodes)");
  const name = NodeNameSchema.safeParse(values.name);
  if (!name.success) throw new UsageError(`--name: ${name.error.issues[0]?.message ?? 'invalid'}`);
  const backend = (values.sandbox ?? 'auto') as SandboxBackend;
  if (!BACKENDS.includes(backend))
    throw new UsageError(`--sandbox must be one of ${BACKENDS.join(', ')}, not "${values.sandbox}"`);
  const { url, token } = await gatewayTarget(values, values.gateway, io.err);

  const ownWorkspace = values.workspace === undefined;
  const workspace = ownWorkspace
    ? await mkdtemp(join(tmpdir(), `switchyard-node-${name.data}-`))
    : resolve(values.workspace!);
  if (!ownWorkspace) await mkdir(workspace, { recursive: true });

  const stop = new AbortController();
  const onSignal = (signal: string) => {
    io.out(`${signal}: stopping; commands still running are killed`);
    stop.abort();
  };
  signals.once('SIGINT', onSignal);
  signals.once('SIGTERM', onSignal);
  io.out(`node "${name.data}": workspace ${workspace}, sandbox ${backend}; connecting to ${url}`);
  try {
    await runNodeClient({
      url,
      token,
      name: name.data,
      executor: {
        workspace,
        backend,
        network: values.network === true,
        onWarning: (message) => io.err(`warning: ${message}`),
      },
      signal: stop.signal,
      logger: { info: (message) => io.out(message), warn: (message) => io.err(message) },
    });
    io.out('stopped');
    return 0;
  } catch (error) {
    if (error instanceof NodeClientError) {
      io.err(`switchyard node: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    signals.off('SIGINT', onSignal);
    signals.off('SIGTERM', onSignal);
    if (ownWorkspace) await rm(workspace, { recursive: true, force: true });
  }
}
