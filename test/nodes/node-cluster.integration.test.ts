/*
 * node_invoke end to end, all real: a gateway on 127.0.0.1 (port 0) in front of an engine
 * sharing its NodeRegistry, and two `switchyard node` child processes. One model turn calls
 * node_invoke four times — twice on each node. The two calls of a group meet at a barrier
 * (each marks that it started, then waits for its partner's mark), so they can only both
 * finish if they ran at the same time, however slow the machine; calls to the same node print
 * when they start and end, and never overlap; tool.scheduled shows the nodes claims that made
 * it so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { Claims } from '../../src/concurrency/index.js';
import { createEngine, type Engine, type RunEventOf } from '../../src/engine/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { NodeRegistry } from '../../src/gateway/nodes/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { until } from '../support/eventually.js';
import { tempDirs } from '../support/temp-dirs.js';

/** Each child is a tsx process; on a loaded machine one start alone can take seconds. */
const SPAWN_TIMEOUT = 180_000;
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

interface NodeProcess {
  name: string;
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

function nodeProcess(gateway: Gateway, name: string): NodeProcess {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli.ts',
      'node',
      '--gateway',
      gateway.url,
      '--name',
      name,
      '--token-file',
      gateway.tokenPath,
      '--sandbox',
      'none',
    ],
    { cwd: repoRoot, env: { ...process.env, SWITCHYARD_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  // 'close', not 'exit': the tests read the whole output once the process is gone.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { name, child, stdout: () => out, stderr: () => err, exited };
}

// Model order w1 w2 w1 w2: the claims make two groups of one call per node.
const CALLS = [
  { id: 'w1-a', node: 'worker-1', partner: 'w2-a' },
  { id: 'w2-a', node: 'worker-2', partner: 'w1-a' },
  { id: 'w1-b', node: 'worker-1', partner: 'w2-b' },
  { id: 'w2-b', node: 'worker-2', partner: 'w1-b' },
];

/** Long enough that only a serial run gives up waiting: then it prints "alone" and the test fails. */
const BARRIER_GIVE_UP_SECONDS = 20;

/**
 * Prints its tag and the wall clock (ms) when it starts, marks its start in the barrier
 * directory, waits for its partner's mark, prints "met" (or "alone" after giving up), and
 * prints the wall clock when it ends.
 */
function meet(barrier: string, tag: string, partner: string): string {
  const polls = BARRIER_GIVE_UP_SECONDS * 50;
  return [
    `echo ${tag}`,
    'date +%s%3N',
    `touch ${barrier}/${tag}`,
    `i=0; while [ ! -e ${barrier}/${partner} ] && [ $i -lt ${polls} ]; do sleep 0.02; i=$((i+1)); done`,
    `if [ -e ${barrier}/${partner} ]; then echo met; else echo alone; fi`,
    'date +%s%3N',
  ].join('; ');
}

let dataDir: string;
let nodes: NodeRegistry;
let engine: Engine;
let gateway: Gateway;
let client: SwitchyardClient;
const workers: NodeProcess[] = [];

const tempDir = tempDirs('switchyard-nodes-it-', 'afterAll');

beforeAll(async () => {
  dataDir = await tempDir();
  const barrier = join(dataDir, 'barrier');
  await mkdir(barrier);
  nodes = new NodeRegistry();
  engine = await createEngine({
    nodes,
    models: {
      scripted: scriptedModel([
        {
          toolCalls: CALLS.map(({ id, node, partner }) => ({
            id,
            name: 'node_invoke',
            args: { node, command: meet(barrier, id, partner) },
          })),
        },
        { text: 'all four ran' },
      ]),
    },
    config: { sandbox: { workspace_root: join(dataDir, 'workspaces') } },
  });
  gateway = await startGateway({ engine, nodes, port: 0, dataDir, logger: { warn: () => {} } });
  client = await connect(gateway.url, { token: gateway.token });
  workers.push(nodeProcess(gateway, 'worker-1'), nodeProcess(gateway, 'worker-2'));
  // Polled through the gateway's own method, as an operator would.
  let registered: string[] = [];
  const giveUpAt = Date.now() + 120_000;
  while (registered.length < 2 && !workers.some((w) => w.child.exitCode !== null) && Date.now() < giveUpAt) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    registered = (await client.call('nodes.list', {})).nodes.map((n) => n.name);
  }
  expect(registered, workers.map((w) => `${w.name}:\n${w.stdout()}\n${w.stderr()}`).join('\n')).toEqual([
    'worker-1',
    'worker-2',
  ]);
}, SPAWN_TIMEOUT);

afterAll(async () => {
  for (const worker of workers)
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  await client?.close();
  await gateway?.close();
  await engine?.close();
}, SPAWN_TIMEOUT);

describe('two node processes', () => {
  it('calls to different nodes overlap, calls to the same node do not', async () => {
    const { runId } = await client.submit({ sessionId: 'nodes', input: 'run them' });
    const result = await client.wait(runId);
    expect(result).toMatchObject({ state: 'completed', output: 'all four ran' });
    const history = await client.history(runId);

    const scheduled = history.find((e) => e.type === 'tool.scheduled') as RunEventOf<'tool.scheduled'>;
    expect(scheduled.groups).toEqual([
      [0, 2],
      [2, 4],
    ]);
    expect(scheduled.claims.map((c) => [c.callId, c.claim])).toEqual(
      CALLS.map(({ id, node }) => [id, Claims.nodes([node])]),
    );
    expect(scheduled.claims.map((c) => c.label)).toEqual([
      'nodes [worker-1]',
      'nodes [worker-2]',
      'nodes [worker-1]',
      'nodes [worker-2]',
    ]);

    const finished = history.filter((e) => e.type === 'tool.finished') as RunEventOf<'tool.finished'>[];
    expect(finished.map((e) => [e.callId, e.ok])).toEqual(expect.arrayContaining(CALLS.map(({ id }) => [id, true])));
    const span = new Map(
      finished.map((e) => {
        const [tag, start, met, end] = (e.output as { output: string }).output.trim().split('\n');
        expect(tag).toBe(e.callId);
        return [e.callId, { start: Number(start), met, end: Number(end) }] as const;
      }),
    );
    // Different nodes, same group: every call saw its partner's mark while it was still running,
    // so the two ran at the same time.
    expect(CALLS.map(({ id }) => [id, span.get(id)!.met])).toEqual(CALLS.map(({ id }) => [id, 'met']));
    const [w1a, w2a, w1b, w2b] = CALLS.map(({ id }) => span.get(id)!);
    // The same node: the second call started only after the first had ended.
    expect(w1b!.start).toBeGreaterThanOrEqual(w1a!.end);
    expect(w2b!.start).toBeGreaterThanOrEqual(w2a!.end);

    // The event log tells the same story: the second group starts after the first finished.
    const order = history
      .filter((e) => e.type === 'tool.started' || e.type === 'tool.finished')
      .map((e) => `${e.type === 'tool.started' ? '+' : '-'}${(e as { callId: string }).callId}`);
    expect(order.slice(0, 2)).toEqual(['+w1-a', '+w2-a']);
    expect(new Set(order.slice(2, 4))).toEqual(new Set(['-w1-a', '-w2-a']));
    expect(order.slice(4, 6)).toEqual(['+w1-b', '+w2-b']);
  }, 60_000);

  it(
    'a third node under a name already connected exits 1 and says why',
    async () => {
      const impostor = nodeProcess(gateway, 'worker-1');
      expect(await impostor.exited).toBe(1);
      expect(impostor.stderr()).toContain(
        'the gateway refused node "worker-1": a node named "worker-1" is already connected; pick another --name',
      );
      expect((await client.call('nodes.list', {})).nodes.map((n) => n.name)).toEqual(['worker-1', 'worker-2']);
    },
    SPAWN_TIMEOUT,
  );

  it('SIGTERM stops a node cleanly: exit 0, and the gateway forgets it', async () => {
    const worker = workers[1]!;
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.stdout()).toMatch(/SIGTERM: stopping[^\n]*\n(.*\n)*stopped\n$/);
    await until(() => nodes.list().length === 1, 'worker-2 is gone');
    const error = await nodes.invoke('worker-2', { command: 'true', timeoutMs: 1_000 }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toBe('no node named "worker-2" is connected; connected: worker-1');
  }, 30_000);
});
