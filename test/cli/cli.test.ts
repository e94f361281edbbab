/*
 * The `switchyard` command as a user runs it, in real child processes: `run` in-process and
 * against a `serve` child, `status`, graceful shutdown on SIGTERM (finishing or cancelling
 * runs, exit 0), and a restart after SIGKILL on the same data dir (the running run ends
 * failed/interrupted, the queued message still runs, no seq gap, the same token).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { tempDirs } from '../gateway/fixtures.js';
import { until } from '../support/eventually.js';

/** Each test spawns tsx processes; on a loaded machine one start alone can take seconds. */
const SPAWN_TIMEOUT = 180_000;
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tempDir = tempDirs();
const children = new Set<ChildProcess>();
const clients: SwitchyardClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});

interface Cli {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

function cli(args: string[]): Cli {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, SWITCHYARD_TOKEN: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  // 'close', not 'exit': a child can exit before its stdout and stderr are drained, and the
  // tests read the whole output once it has exited.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = cli(args);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

interface Server extends Cli {
  url: string;
  tokenFile: string;
  client(): Promise<SwitchyardClient>;
}

/** serve's log: one JSON object per line when stdout is not a terminal. */
interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/** The complete lines written so far (a line still being written is left for later). */
function logLines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .slice(0, -1)
    .map((line) => JSON.parse(line) as LogLine);
}

/** The last line of serve's start-up banner: once it is out, the whole banner is (url, inspector, metrics, token). */
const BANNER_END = /gateway token(?: is|; it is) in /;

async function serve(dataDir: string, extra: string[] = []): Promise<Server> {
  const server = cli(['serve', '--port', '0', '--data-dir', dataDir, ...extra]);
  let exited = false;
  void server.exited.then(() => (exited = true));
  await until(
    () => logLines(server.stdout()).some((line) => BANNER_END.test(line.msg)) || exited,
    'serve prints its banner',
    90_000,
  );
  const url = logLines(server.stdout()).find((line) => line.msg.startsWith('listening on'))?.url as string | undefined;
  if (!url) throw new Error(`serve did not start:\n${server.stdout()}\n${server.stderr()}`);
  const tokenFile = join(dataDir, 'token');
  return {
    ...server,
    url,
    tokenFile,
    client: async () => {
      const { readToken } = await import('../../src/gateway/index.js');
      const client = await connect(url, { token: (await readToken(tokenFile))! });
      clients.push(client);
      return client;
    },
  };
}

/** A config whose default model answers after `delayMs`. */
async function slowModelConfig(dir: string, delayMs: number): Promise<string> {
  const script = join(dir, 'slow-script.json');
  await writeFile(script, JSON.stringify([{ text: 'slow answer', delayMs }]));
  const config = join(dir, 'switchyard.toml');
  await writeFile(
    config,
    [
      '[execution]',
      'default_model = "slow"',
      '[models.slow]',
      'kind = "scripted"',
      `script = ${JSON.stringify(script)}`,
      '[sandbox]',
      // Outside the data directory: the sandbox refuses workspaces that could reach the store or the token.
      `workspace_root = ${JSON.stringify(await tempDir())}`,
    ].join('\n'),
  );
  return config;
}

describe('switchyard run, in-process', { timeout: SPAWN_TIMEOUT }, () => {
  it('prints the timeline and exits 0 when the run completed', async () => {
    const { code, stdout } = await runCli(['run', 'hello']);
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    expect(lines.some((l) => /cli\s+run#1\s+run\.started/.test(l))).toBe(true);
    expect(lines.some((l) => /run#1\s+run\.completed\s+"done"/.test(l))).toBe(true);
    expect(stdout).toContain('# completed: done');
  });

  it('exits 1 when the run did not complete', async () => {
    const dir = await tempDir();
    const script = join(dir, 'failing.json');
    await writeFile(script, JSON.stringify([{ error: 'the model is down' }]));
    const config = join(dir, 'switchyard.toml');
    await writeFile(
      config,
      `[execution]\ndefault_model = "down"\nmax_iterations = 1\n[models.down]\nkind = "scripted"\nscript = ${JSON.stringify(script)}\n`,
    );
    const { code, stdout } = await runCli(['run', 'hello', '--config', config]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/# failed: /);
  });

  it('bad usage exits 2 with the usage text', async () => {
    const noInput = await runCli(['run']);
    expect(noInput.code).toBe(2);
    expect(noInput.stderr).toContain('usage: switchyard run <input>');
    const badPolicy = await runCli(['run', 'x', '--policy', 'shove']);
    expect(badPolicy.code).toBe(2);
    expect(badPolicy.stderr).toContain('--policy must be one of steer, interrupt, queue');
  });
});

describe('switchyard serve', { timeout: SPAWN_TIMEOUT }, () => {
  it('listens on the real port, keeps the token in a 0600 file, serves run and status, and exits 0 on SIGTERM', async () => {
    const dataDir = await tempDir();
    const server = await serve(dataDir);
    expect(server.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.toMatch(/:0$/);
    expect((await stat(server.tokenFile)).mode & 0o777).toBe(0o600);
    const { readToken } = await import('../../src/gateway/index.js');
    const token = (await readToken(server.tokenFile))!;
    // A log (stdout is not a terminal here) names the token's file, never the token.
    expect(server.stdout()).not.toContain(token);
    expect(logLines(server.stdout())).toContainEqual(
      expect.objectContaining({ level: 'info', msg: `generated the gateway token; it is in ${server.tokenFile}` }),
    );

    const run = await runCli([
      'run',
      'hello',
      '--gateway',
      server.url,
      '--token-file',
      server.tokenFile,
      '--session',
      'from-cli',
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/from-cli\s+run#1\s+run\.completed\s+"done"/);
    expect(run.stdout).toContain('# completed: done');

    const status = await runCli(['status', '--gateway', server.url, '--data-dir', dataDir]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`engine at ${server.url}`);
    expect(status.stdout).toMatch(/runs\s+0\/8 permits in use/);

    const wrongToken = await runCli(['status', '--gateway', server.url, '--token', 'nope']);
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toContain('401');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.stdout()).toContain('SIGTERM: shutting down');
    expect(server.stdout()).toContain('stopped');
    // Every line is JSON; the run's lines carry its run and session ids, and no line the token.
    const lines = logLines(server.stdout());
    const runLines = lines.filter((line) => line.sessionId === 'from-cli');
    expect(runLines.map((line) => line.msg)).toEqual(['run started', 'run completed']);
    expect(new Set(runLines.map((line) => line.runId)).size).toBe(1);
    expect(server.stdout()).not.toContain(token);

    // Same data dir, same token, not shown again.
    const again = await serve(dataDir);
    expect(again.stdout()).not.toContain(token);
    expect(again.stdout()).toContain(`the gateway token is in ${again.tokenFile}`);
    expect(await readToken(again.tokenFile)).toBe(token);
    const client = await again.client();
    expect((await client.history((await client.submit({ sessionId: 's', input: 'x' })).runId)).length).toBeGreaterThan(
      0,
    );
    again.child.kill('SIGINT');
    expect(await again.exited).toBe(0);
  });

  it('on SIGTERM: refuses new submits, lets a running run finish within the grace period, then exits 0', async () => {
    const dataDir = await tempDir();
    const server = await serve(dataDir, ['--config', await slowModelConfig(dataDir, 1_500), '--grace-seconds', '20']);
    const client = await server.client();
    const { runId } = await client.submit({ sessionId: 's', input: 'take your time' });
    const result = client.wait(runId);
    server.child.kill('SIGTERM');
    await until(() => server.stdout().includes('shutting down'), 'shutdown starts');
    await expect(client.submit({ sessionId: 'late', input: 'too late' })).rejects.toMatchObject({
      code: -32000,
      data: { code: 'closed' },
    });
    expect(await result).toMatchObject({ runId, state: 'completed', output: 'slow answer' });
    expect(await server.exited).toBe(0);
    expect(server.stdout()).not.toContain('cancelling');
  });

  it('on SIGTERM: cancels what still runs when the grace period is over, then exits 0', async () => {
    const dataDir = await tempDir();
    const server = await serve(dataDir, ['--config', await slowModelConfig(dataDir, 60_000), '--grace-seconds', '0.3']);
    const client = await server.client();
    const { runId } = await client.submit({ sessionId: 's', input: 'forever' });
    const result = client.wait(runId);
    const closed = client.closed;
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.stdout()).toContain('cancelling 1 run(s) still running');
    // The waiting client hears the outcome before its connection closes.
    expect(await result).toMatchObject({ runId, state: 'cancelled' });
    expect((await closed).code).toBe(1001);

    const again = await serve(dataDir, ['--config', await slowModelConfig(dataDir, 60_000)]);
    const history = await (await again.client()).history(runId);
    expect(history.map((e) => e.seq)).toEqual(history.map((_, i) => i + 1));
    expect(history.at(-1)).toMatchObject({ type: 'run.cancelled' });
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });
});

describe('switchyard serve --stately-inspector', { timeout: SPAWN_TIMEOUT }, () => {
  it('sends the actors to an inspector server of @statelyai/inspect, which relays them to its browser side', async () => {
    const { createInspectorServer } = await import('@statelyai/inspect/server');
    const { createWebSocketReceiver } = await import('@statelyai/inspect');
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const inspector = createInspectorServer({ port, autoOpen: false });
    try {
      const names: string[] = [];
      createWebSocketReceiver({ server: `ws://127.0.0.1:${port}` }).subscribe((event) => {
        if (event.type === '@xstate.actor') names.push(event.sessionId);
      });
      const dataDir = await tempDir();
      const server = await serve(dataDir, [
        '--stately-inspector',
        `ws://127.0.0.1:${port}`,
        '--stately-session',
        'watched',
      ]);
      expect(logLines(server.stdout())).toContainEqual(
        expect.objectContaining({
          level: 'info',
          msg: `Stately inspector: sending session watched to ws://127.0.0.1:${port}`,
        }),
      );
      const client = await server.client();
      await client.wait((await client.submit({ sessionId: 'other', input: 'x' })).runId);
      const { runId } = await client.submit({ sessionId: 'watched', input: 'x' });
      await client.wait(runId);
      await until(() => names.includes(`run:${runId}`), 'the watched run reached the receiver', 10_000);
      expect(names).toContain('session:watched');
      expect(names.some((name) => name.includes('other'))).toBe(false);
      expect(names.filter((name) => name.startsWith('run:')).every((name) => name.startsWith(`run:${runId}`))).toBe(
        true,
      );
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      inspector.stop();
    }

    const usage = await runCli(['serve', '--stately-run', 'r1']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--stately-session and --stately-run need --stately-inspector');
  });
});

describe('a crash (SIGKILL) and a restart on the same data dir', { timeout: SPAWN_TIMEOUT }, () => {
  it('ends the running run failed/interrupted, runs the queued message, keeps seq gapless and the token', async () => {
    const dataDir = await tempDir();
    // The first run's model never answers before the kill, however slow the machine; the queued
    // message asks the built-in scripted model, which answers at once after the restart.
    const config = await slowModelConfig(dataDir, 600_000);
    const first = await serve(dataDir, ['--config', config]);
    const { readToken } = await import('../../src/gateway/index.js');
    const token = await readToken(first.tokenFile);
    const client = await first.client();
    const slow = await client.submit({ sessionId: 'chat', input: 'a slow question' });
    const queued = await client.submit({
      sessionId: 'chat',
      input: 'and then this',
      busyPolicy: 'queue',
      model: 'scripted',
    });
    expect(queued).toMatchObject({ outcome: 'queued', position: 1 });
    // history() answers once the store has every event so far: both runs are on disk.
    expect((await client.history(slow.runId)).map((e) => e.type)).toEqual(['run.started', 'turn.started']);
    expect((await client.history(queued.runId)).map((e) => e.type)).toEqual(['run.queued']);

    first.child.kill('SIGKILL');
    await first.exited;

    const second = await serve(dataDir, ['--config', config]);
    expect(await readToken(second.tokenFile)).toBe(token);
    expect(second.stdout()).not.toContain(token!);
    const after = await second.client();
    expect(await after.wait(slow.runId)).toMatchObject({ state: 'failed', error: { code: 'interrupted' } });
    const slowHistory = await after.history(slow.runId);
    expect(slowHistory.map((e) => e.seq)).toEqual(slowHistory.map((_, i) => i + 1));
    expect(slowHistory.at(-1)).toMatchObject({ type: 'run.failed', error: { code: 'interrupted' } });

    expect(await after.wait(queued.runId)).toMatchObject({ state: 'completed', output: 'done' });
    const queuedHistory = await after.history(queued.runId);
    expect(queuedHistory.map((e) => e.seq)).toEqual(queuedHistory.map((_, i) => i + 1));
    expect(queuedHistory.map((e) => e.type)).toContain('run.started');

    // The session's log across both runs and both processes: sessionSeq 1..n, no gap.
    const session = [...slowHistory, ...queuedHistory].map((e) => e.sessionSeq).sort((a, b) => a - b);
    expect(session).toEqual(session.map((_, i) => i + 1));
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
