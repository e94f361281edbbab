/*
 * The node client in this process against a real gateway: it runs what it is sent in its own
 * workspace through the real command runner, kills a cancelled command's whole process group,
 * keeps its answers inside the gateway's frame limit, reconnects when the gateway comes back,
 * and stops for good on a refusal it cannot fix.
 */
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/gateway/index.js';
import { NodeClientError, runNodeClient, type NodeClientOptions } from '../../src/gateway/nodes/index.js';
import { ToolError } from '../../src/tools/index.js';
import { until } from '../support/eventually.js';
import { nodeGatewayFixture, type NodeHarness } from './fixtures.js';
import { tempDirs } from '../support/temp-dirs.js';

const start = nodeGatewayFixture();
const tempDir = tempDirs('switchyard-node-test-');
const stops: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

interface StartedNode {
  workspace: string;
  registrations: number;
  done: Promise<void>;
  stop(): Promise<void>;
}

async function startNode(
  harness: Pick<NodeHarness, 'gateway'>,
  name: string,
  extra: Partial<NodeClientOptions> = {},
): Promise<StartedNode> {
  const workspace = await realpath(await tempDir());
  const controller = new AbortController();
  const node: StartedNode = {
    workspace,
    registrations: 0,
    done: Promise.resolve(),
    stop: async () => {
      controller.abort();
      await node.done.catch(() => {});
    },
  };
  node.done = runNodeClient({
    url: harness.gateway.url,
    token: harness.gateway.token,
    name,
    executor: { workspace, backend: 'none' },
    signal: controller.signal,
    reconnectDelayMs: 20,
    onRegistered: () => (node.registrations += 1),
    ...extra,
  });
  node.done.catch(() => {});
  stops.push(node.stop);
  return node;
}

async function registered(harness: NodeHarness, ...names: string[]): Promise<void> {
  await until(
    () => names.every((name) => harness.nodes.list().some((n) => n.name === name)),
    `${names.join(', ')} registered`,
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('running commands', () => {
  it("runs a command in the node's workspace and answers with its exit code and output", async () => {
    const harness = await start();
    const node = await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    const result = await harness.nodes.invoke('worker-1', {
      command: 'pwd; echo "$HOME"; echo oops >&2; exit 3',
      timeoutMs: 10_000,
    });
    expect(result).toMatchObject({
      exitCode: 3,
      signal: null,
      output: `${node.workspace}\n${node.workspace}\noops\n`,
      truncated: false,
      timedOut: false,
      cancelled: false,
      sandbox: 'none',
    });
  });

  it.each([
    ['../..', 'outside_workspace'],
    ['missing/dir', 'invalid_cwd'],
  ])('cwd %s is refused with %s', async (cwd, code) => {
    const harness = await start();
    await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    const error = await harness.nodes
      .invoke('worker-1', { command: 'true', cwd, timeoutMs: 10_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe(code);
  });

  it('a command over its timeout is killed and answered timedOut', async () => {
    const harness = await start();
    await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    // Long enough for the shell to start and print before the timeout, also on a loaded machine.
    const result = await harness.nodes.invoke('worker-1', { command: 'echo started; sleep 30', timeoutMs: 2_000 });
    expect(result).toMatchObject({ timedOut: true, output: 'started\n' });
  });

  it("node.cancel kills the command's whole process group, background children included", async () => {
    const harness = await start();
    const node = await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    const controller = new AbortController();
    const pending = harness.nodes.invoke(
      'worker-1',
      { command: 'sleep 30 & echo $! > bg.pid; sleep 30', timeoutMs: 60_000 },
      controller.signal,
    );
    const pidFile = join(node.workspace, 'bg.pid');
    let pid = 0;
    await until(() => {
      void readFile(pidFile, 'utf8').then(
        (text) => (pid = Number(text.trim()) || 0),
        () => {},
      );
      return pid > 0;
    }, 'the background child started');
    expect(isAlive(pid)).toBe(true);
    controller.abort();
    expect(((await pending.catch((e: unknown) => e)) as ToolError).code).toBe('cancelled');
    await until(() => !isAlive(pid), 'the background child is killed', 10_000);
  });

  it("cuts an answer's output until the frame fits the gateway's maxPayload", async () => {
    const harness = await start({ gateway: { maxPayloadBytes: 64 * 1024 } });
    await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    const result = await harness.nodes.invoke('worker-1', {
      command: "head -c 300000 /dev/zero | tr '\\0' '\"'",
      timeoutMs: 10_000,
    });
    expect(result.truncated).toBe(true);
    expect(result.output).toMatch(/…\[output truncated to fit the gateway's frame limit: \d+ characters omitted\]$/);
    expect(harness.nodes.list().map((n) => n.name)).toEqual(['worker-1']);
  });
});

describe('connection', () => {
  it('reconnects and registers again when the gateway comes back on the same port', async () => {
    const harness = await start();
    const node = await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    const { port, dataDir } = { port: harness.gateway.port, dataDir: harness.dataDir };
    await harness.gateway.close();
    expect(harness.nodes.list()).toEqual([]);
    const again = await startGateway({
      engine: harness.engine,
      nodes: harness.nodes,
      port,
      dataDir,
      logger: { warn: () => {} },
    });
    try {
      await until(() => node.registrations === 2, 'registered again');
      expect((await harness.nodes.invoke('worker-1', { command: 'echo back', timeoutMs: 10_000 })).output).toBe(
        'back\n',
      );
    } finally {
      await again.close();
    }
  });

  it('a second node under a taken name stops with a refused error that says so', async () => {
    const harness = await start();
    await startNode(harness, 'worker-1');
    await registered(harness, 'worker-1');
    const second = await startNode(harness, 'worker-1');
    const error = await second.done.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeClientError);
    expect((error as NodeClientError).code).toBe('refused');
    expect((error as NodeClientError).message).toBe(
      'the gateway refused node "worker-1": a node named "worker-1" is already connected; pick another --name',
    );
  });

  it('a wrong token stops it with unauthorized', async () => {
    const harness = await start();
    const node = await startNode(harness, 'worker-1', { token: 'not-the-token-at-all' });
    const error = await node.done.catch((e: unknown) => e);
    expect((error as NodeClientError).code).toBe('unauthorized');
    expect((error as NodeClientError).message).toBe('the gateway refused the token: wrong token');
  });

  it('stopping it kills what runs, closes the connection and resolves', async () => {
    const harness = await start();
    const node = await startNode(harness, 'worker-1');
    // Both ends: in one process the gateway may register it before the node has seen its handshake.
    await until(() => node.registrations === 1, 'the node knows it is registered');
    const pending = harness.nodes.invoke('worker-1', { command: 'sleep 300', timeoutMs: 600_000 }).then(
      () => undefined,
      (e: unknown) => e as ToolError,
    );
    await until(() => harness.nodes.list()[0]?.inFlight === 1, 'the command was sent');
    const stopped = Date.now();
    await node.stop();
    // The command would run for 5 minutes: stop() killed it rather than waiting for it.
    expect(Date.now() - stopped).toBeLessThan(20_000);
    const error = await pending;
    expect(error?.code).toBe('node_unavailable');
    expect(error?.message).toMatch(/the connection closed \(1000 node shutting down\)/);
    await until(() => harness.nodes.list().length === 0, 'the node is gone');
  });

  it('keeps retrying while no gateway listens', async () => {
    const harness = await start();
    const { port, dataDir } = { port: harness.gateway.port, dataDir: harness.dataDir };
    await harness.gateway.close();
    const warnings: string[] = [];
    const node = await startNode(harness, 'worker-1', { logger: { warn: (m) => warnings.push(m) } });
    await until(() => warnings.length >= 2, 'two failed attempts');
    expect(warnings[0]).toMatch(/^could not connect: .*ECONNREFUSED.*; reconnecting in \d+ ms$/);
    const again = await startGateway({
      engine: harness.engine,
      nodes: harness.nodes,
      port,
      dataDir,
      logger: { warn: () => {} },
    });
    try {
      await until(() => node.registrations === 1, 'registered');
      await registered(harness, 'worker-1');
    } finally {
      await again.close();
    }
  });
});
