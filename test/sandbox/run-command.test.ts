import { readFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runCommand, type RunCommandOptions } from '../../src/sandbox/run-command.js';
import { ToolError } from '../../src/tools/tool.js';
import { eventually } from '../support/eventually.js';
import { tempDirs } from '../support/temp-dirs.js';

let dir: string;
const tempDir = tempDirs('switchyard-run-', 'afterEach');

beforeEach(async () => {
  dir = await tempDir();
});

function run(command: string, overrides: Partial<RunCommandOptions> = {}) {
  return runCommand({
    command,
    cwd: dir,
    timeoutMs: 10_000,
    maxOutputBytes: 1 << 20,
    network: false,
    backend: 'none',
    ...overrides,
  });
}

/** A zombie counts as dead: it has exited and only waits for init (slow on some VMs) to reap it. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A process on a loaded machine takes a while to start or to go: poll gently, for long. */
const PROCESS_PATIENCE = { withinMs: 15_000, everyMs: 50 };

async function eventuallyGone(pid: number): Promise<void> {
  await eventually(() => !alive(pid), `process ${pid} is gone`, PROCESS_PATIENCE);
}

async function readPid(file: string): Promise<number> {
  return Number((await readFile(file, 'utf8')).trim());
}

describe('runCommand: results', () => {
  it('reports exit code, stdout, stderr and the interleaved output', async () => {
    const result = await run('echo out; sleep 0.05; echo err >&2; sleep 0.05; echo more; exit 7');
    expect(result).toMatchObject({
      exitCode: 7,
      signal: null,
      stdout: 'out\nmore\n',
      stderr: 'err\n',
      output: 'out\nerr\nmore\n',
      truncated: false,
      timedOut: false,
      cancelled: false,
      sandbox: 'none',
    });
    expect(result.durationMs).toBeGreaterThanOrEqual(100);
  });

  it('reports the signal that ended the command', async () => {
    const result = await run('kill -KILL $$');
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGKILL', timedOut: false });
  });

  it('runs in cwd with exactly the given environment', async () => {
    process.env.SWITCHYARD_TEST_SECRET = 'leak';
    try {
      const result = await run('pwd; echo "$FOO|${SWITCHYARD_TEST_SECRET:-unset}"', {
        env: { FOO: 'bar', PATH: process.env.PATH ?? '/usr/bin:/bin' },
      });
      expect(result.stdout).toBe(`${dir}\nbar|unset\n`);
    } finally {
      delete process.env.SWITCHYARD_TEST_SECRET;
    }
  });

  it('refuses a working directory that does not exist', async () => {
    await expect(run('true', { cwd: path.join(dir, 'missing') })).rejects.toMatchObject({ code: 'invalid_cwd' });
    await expect(run('true', { cwd: path.join(dir, 'missing') })).rejects.toBeInstanceOf(ToolError);
  });
});

describe('runCommand: timeout and cancellation kill the whole process group', () => {
  it('a timeout kills a backgrounded grandchild', async () => {
    const pidfile = path.join(dir, 'pid');
    // Long enough for the shell to start and print before the timeout, also on a loaded machine.
    const result = await run(`sleep 30 & echo $! > ${pidfile}; echo started; wait`, { timeoutMs: 2_000 });
    expect(result).toMatchObject({
      timedOut: true,
      cancelled: false,
      exitCode: null,
      signal: 'SIGTERM',
      output: 'started\n',
    });
    expect(result.durationMs).toBeLessThan(20_000);
    await eventuallyGone(await readPid(pidfile));
  });

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const pidfile = path.join(dir, 'pid');
    // An ignored signal stays ignored across fork and exec, so the sleep ignores it too.
    // The trap must be set before the timeout fires: give the shell time to start.
    const result = await run(`trap '' TERM; sleep 30 & echo $! > ${pidfile}; wait`, {
      timeoutMs: 2_000,
      killGraceMs: 300,
    });
    expect(result).toMatchObject({ timedOut: true, signal: 'SIGKILL' });
    await eventuallyGone(await readPid(pidfile));
  });

  it('an abort kills a backgrounded grandchild', async () => {
    const pidfile = path.join(dir, 'pid');
    const controller = new AbortController();
    const pending = run(`sleep 30 & echo $! > ${pidfile}; wait`, { signal: controller.signal });
    // Abort once the grandchild exists, not after a guessed delay.
    await eventually(() => existsSync(pidfile), `${pidfile} appears`, PROCESS_PATIENCE);
    controller.abort();
    const result = await pending;
    expect(result).toMatchObject({ cancelled: true, timedOut: false, exitCode: null, signal: 'SIGTERM' });
    await eventuallyGone(await readPid(pidfile));
  });

  it('an already aborted signal runs nothing', async () => {
    const marker = path.join(dir, 'ran');
    const result = await run(`touch ${marker}`, { signal: AbortSignal.abort() });
    expect(result).toMatchObject({ cancelled: true, exitCode: null, output: '' });
    expect(existsSync(marker)).toBe(false);
  });

  it('background leftovers of a finished command are killed and do not hold the call open', async () => {
    const pidfile = path.join(dir, 'pid');
    const result = await run(`sleep 30 & echo $! > ${pidfile}; echo done`);
    expect(result).toMatchObject({ exitCode: 0, timedOut: false, output: 'done\n' });
    // The leftover sleeps 30 s; the call ended with its own command.
    expect(result.durationMs).toBeLessThan(20_000);
    await eventuallyGone(await readPid(pidfile));
  });

  it('a process that left the group (setsid) cannot hold the call open past the grace period', async () => {
    const pidfile = path.join(dir, 'pid');
    // The command ends once the escaped process has written its pid, however slow the machine.
    const result = await run(
      `setsid sh -c 'echo $$ > ${pidfile}.tmp; mv ${pidfile}.tmp ${pidfile}; exec sleep 30' & while [ ! -e ${pidfile} ]; do sleep 0.02; done; echo done`,
      { killGraceMs: 200 },
    );
    const escaped = await readPid(pidfile);
    try {
      expect(result).toMatchObject({ exitCode: 0, output: 'done\n' });
      expect(result.durationMs).toBeLessThan(20_000);
    } finally {
      process.kill(escaped, 'SIGKILL');
    }
  });
});

describe('runCommand: output budget', () => {
  it('caps a very large output without blocking the child', async () => {
    const result = await run('yes | head -c 50000000; echo tail >&2', { maxOutputBytes: 1000 });
    expect(result.exitCode).toBe(0);
    expect(result.truncated).toBe(true);
    expect(result.output.startsWith('y\n'.repeat(500))).toBe(true);
    expect(result.output).toBe(`${'y\n'.repeat(500)}\n…[output truncated: 49999005 bytes omitted]`);
    expect(result.stdout).toBe(`${'y\n'.repeat(500)}\n…[output truncated: 49999000 bytes omitted]`);
    expect(result.stderr).toBe('tail\n');
    expect(result.durationMs).toBeLessThan(10_000);
  });
});
