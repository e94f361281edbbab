import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bwrapArgs, bwrapAvailable, probeBwrap } from '../../src/sandbox/bwrap.js';
import { runCommand, type RunCommandOptions } from '../../src/sandbox/run-command.js';

const probe = await probeBwrap();
if (!probe.available) console.warn(`bwrap tests skipped: bubblewrap cannot run here (${probe.reason})`);
const sandboxIt = it.skipIf(!probe.available);

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(path.join(tmpdir(), 'switchyard-bwrap-ws-'));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function run(command: string, overrides: Partial<RunCommandOptions> = {}) {
  return runCommand({
    command,
    cwd: workspace,
    workspace,
    timeoutMs: 10_000,
    maxOutputBytes: 1 << 20,
    network: false,
    backend: 'bwrap',
    ...overrides,
  });
}

interface HostProcess {
  pid: number;
  ppid: number;
  pgid: number;
}

function hostProcess(pid: number): HostProcess | undefined {
  try {
    const [state = '', ppid = '', pgid = ''] = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
    // A zombie has exited; it only waits for init (slow to reap on some VMs) to collect it.
    return state === 'Z' ? undefined : { pid, ppid: Number(ppid), pgid: Number(pgid) };
  } catch {
    return undefined;
  }
}

/** Live host processes running `sleep <token>`, found from the host: pids inside the sandbox are not host pids. */
function sleepers(token: string): HostProcess[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${token}\0`;
      } catch {
        return false;
      }
    })
    .flatMap((entry) => hostProcess(Number(entry)) ?? []);
}

/** Polls until `check` holds; the wall-clock limit only turns a hang into a failure on a loaded machine. */
async function eventually(check: () => boolean, withinMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

/** A sleep whose command line is unique to this test, so /proc can find it from the host. */
function uniqueSleep(): { command: string; token: string } {
  const token = `3000.${process.pid}${Math.floor(Math.random() * 1e6)}`;
  return { command: `sleep ${token}`, token };
}

describe('bwrapArgs', () => {
  it('confines: read-only root, fresh /dev and /proc, private /tmp, workspace read-write, no network', () => {
    expect(bwrapArgs({ workspace: '/w', network: false, cwd: '/w/src' })).toEqual([
      '--ro-bind', '/', '/',
      '--dev', '/dev',
      '--proc', '/proc',
      '--tmpfs', '/tmp',
      '--bind', '/w', '/w',
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--chdir', '/w/src',
    ]);
  });

  it('shares the network only when it is allowed', () => {
    const args = bwrapArgs({ workspace: '/w', network: true, cwd: '/w' });
    expect(args.slice(args.indexOf('--unshare-all'), args.indexOf('--unshare-all') + 2)).toEqual(['--unshare-all', '--share-net']);
  });

  it('binds nothing read-write without a workspace', () => {
    expect(bwrapArgs({ network: false, cwd: '/' })).not.toContain('--bind');
  });
});

describe('backend selection', () => {
  const missing = '/nonexistent/bin/bwrap';

  it('a bwrap that cannot run is reported unavailable, with the reason', async () => {
    expect(await bwrapAvailable(missing)).toBe(false);
    expect((await probeBwrap(missing)).reason).toContain('not found');
  });

  it('backend "bwrap" refuses to run without bubblewrap and says how to install it', async () => {
    const marker = path.join(workspace, 'ran');
    const attempt = run(`touch ${marker}`, { bwrapPath: missing });
    await expect(attempt).rejects.toMatchObject({ name: 'ToolError', code: 'sandbox_unavailable' });
    await expect(attempt).rejects.toThrow(/apt-get install bubblewrap/);
    expect(existsSync(marker)).toBe(false);
  });

  it('backend "auto" without bubblewrap runs unsandboxed and warns', async () => {
    const warnings: string[] = [];
    const result = await run('echo hi', { backend: 'auto', bwrapPath: missing, onWarning: (message) => warnings.push(message) });
    expect(result).toMatchObject({ sandbox: 'none', exitCode: 0, output: 'hi\n' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^bubblewrap not available: running unsandboxed/);
  });

  sandboxIt('backend "auto" with bubblewrap sandboxes and does not warn', async () => {
    const warnings: string[] = [];
    const result = await run('echo hi', { backend: 'auto', onWarning: (message) => warnings.push(message) });
    expect(result).toMatchObject({ sandbox: 'bwrap', exitCode: 0, output: 'hi\n' });
    expect(warnings).toEqual([]);
  });

  it('backend "none" runs directly', async () => {
    expect(await run('echo hi', { backend: 'none' })).toMatchObject({ sandbox: 'none', output: 'hi\n' });
  });
});

describe('bubblewrap confinement', () => {
  let outside: string;
  beforeAll(async () => {
    // Outside /tmp, so a failure to write there is the read-only root, not the private /tmp.
    outside = await mkdtemp('/var/tmp/switchyard-bwrap-outside-');
  });
  afterAll(async () => {
    await rm(outside, { recursive: true, force: true });
  });

  sandboxIt('writes inside the workspace reach the host', async () => {
    const result = await run('mkdir -p sub && echo inside > sub/file && cat sub/file');
    expect(result).toMatchObject({ sandbox: 'bwrap', exitCode: 0, output: 'inside\n' });
    expect(await readFile(path.join(workspace, 'sub/file'), 'utf8')).toBe('inside\n');
  });

  sandboxIt('writes outside the workspace fail: the root is read-only', async () => {
    const target = path.join(outside, 'escaped');
    const result = await run(`echo out > ${target}`);
    expect(result.exitCode).not.toBe(0);
    expect(result.stderr).toMatch(/Read-only file system/);
    expect(existsSync(target)).toBe(false);
  });

  sandboxIt('/tmp is private: host files are invisible and sandbox files stay inside', async () => {
    const hostDir = await mkdtemp(path.join(tmpdir(), 'switchyard-bwrap-host-'));
    try {
      const hostFile = path.join(hostDir, 'secret');
      await writeFile(hostFile, 'host');
      const sandboxFile = path.join(tmpdir(), `switchyard-bwrap-${process.pid}-inner`);
      const result = await run(`test -e ${hostFile} && echo visible || echo hidden; echo x > ${sandboxFile} && echo wrote`);
      expect(result.output).toBe('hidden\nwrote\n');
      expect(existsSync(sandboxFile)).toBe(false);
    } finally {
      await rm(hostDir, { recursive: true, force: true });
    }
  });

  describe('network', () => {
    let server: Server;
    let port: number;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((socket) => {
        connections += 1;
        socket.end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });
    const connect = () => `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`;

    sandboxIt('is off by default: a loopback server on the host is unreachable', async () => {
      const before = connections;
      const result = await run(connect());
      expect(result.exitCode).not.toBe(0);
      expect(result.output).not.toContain('connected');
      expect(result.stderr).toMatch(/Connection refused|Network is unreachable/);
      expect(connections).toBe(before);
    });

    sandboxIt('is shared when allowed', async () => {
      const before = connections;
      const result = await run(connect(), { network: true });
      expect(result).toMatchObject({ exitCode: 0, output: 'connected\n' });
      expect(await eventually(() => connections === before + 1)).toBe(true);
    });

    sandboxIt('node, reached at its host path through the read-only root, is confined too', async () => {
      const script = `require("net").connect(${port}, "127.0.0.1").on("connect", () => { console.log("connected"); process.exit(0); }).on("error", (e) => { console.log(e.code); process.exit(3); })`;
      const off = await run(`'${process.execPath}' -e '${script}'`);
      expect(off).toMatchObject({ exitCode: 3, stdout: 'ECONNREFUSED\n' });
      const on = await run(`'${process.execPath}' -e '${script}'`, { network: true });
      expect(on).toMatchObject({ exitCode: 0, stdout: 'connected\n' });
    });
  });
});

describe('bubblewrap: timeout and cancellation end everything inside', () => {
  sandboxIt('a timeout kills a backgrounded process, though --new-session put it outside our process group', async () => {
    const { command, token } = uniqueSleep();
    // Long enough for the sandbox to start and the test to look at its processes before the
    // timeout fires, also on a loaded machine; the sleep itself would take 50 minutes.
    const pending = run(`${command} & wait`, { timeoutMs: 5_000 });
    expect(await eventually(() => sleepers(token).length === 1)).toBe(true);
    // sleep <- bash <- bwrap (pid 1 of the sandbox) <- bwrap (the process we spawned, leading its group)
    const [sleeper] = sleepers(token);
    const outer = hostProcess(hostProcess(hostProcess(sleeper?.pid ?? 0)?.ppid ?? 0)?.ppid ?? 0)?.ppid;
    expect(outer).toBeDefined();
    expect(hostProcess(outer ?? 0)?.pgid).toBe(outer);
    expect(sleeper?.pgid).not.toBe(outer);
    const result = await pending;
    expect(result).toMatchObject({ sandbox: 'bwrap', timedOut: true, exitCode: null, signal: 'SIGTERM' });
    expect(await eventually(() => sleepers(token).length === 0)).toBe(true);
  });

  sandboxIt('an abort kills a backgrounded process', async () => {
    const { command, token } = uniqueSleep();
    const controller = new AbortController();
    const pending = run(`${command} & wait`, { signal: controller.signal });
    expect(await eventually(() => sleepers(token).length === 1)).toBe(true);
    controller.abort();
    expect(await pending).toMatchObject({ sandbox: 'bwrap', cancelled: true, timedOut: false });
    expect(await eventually(() => sleepers(token).length === 0)).toBe(true);
  });

  sandboxIt('background leftovers of a finished command die with the sandbox', async () => {
    const { command, token } = uniqueSleep();
    // The command ends only once the test has seen its leftover, however slow the machine.
    const pending = run(`${command} & while [ ! -e seen ]; do sleep 0.02; done; echo done`);
    expect(await eventually(() => sleepers(token).length === 1)).toBe(true);
    await writeFile(path.join(workspace, 'seen'), '');
    const result = await pending;
    expect(result).toMatchObject({ sandbox: 'bwrap', exitCode: 0, output: 'done\n' });
    // The leftover sleeps for 50 minutes; the call ended with its own command.
    expect(await eventually(() => sleepers(token).length === 0)).toBe(true);
  });
});
