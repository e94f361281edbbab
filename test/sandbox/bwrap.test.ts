import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bwrapArgs, bwrapAvailable, probeBwrap } from '../../src/sandbox/bwrap.js';
import { ETC_ENTRIES, type SystemEntry } from '../../src/sandbox/sandbox-filesystem.js';
import { runCommand, type RunCommandOptions } from '../../src/sandbox/run-command.js';
import { sandboxWorkspace } from './sandbox-workspace.js';
import { eventually } from '../support/eventually.js';
import { hasBwrap } from '../support/real-parts.js';

const bwrap = await hasBwrap('the bwrap tests');
const sandboxIt = it.skipIf(!bwrap);

let workspace: string;
beforeEach(async () => {
  workspace = await sandboxWorkspace('switchyard-bwrap-ws-');
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
    const [state = '', ppid = '', pgid = ''] = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(
      ' ',
    );
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

/** Processes on a loaded machine take a while to start or to go: poll gently, for long. */
const PROCESS_PATIENCE = { withinMs: 15_000, everyMs: 50 };

/** A sleep whose command line is unique to this test, so /proc can find it from the host. */
function uniqueSleep(): { command: string; token: string } {
  const token = `3000.${process.pid}${Math.floor(Math.random() * 1e6)}`;
  return { command: `sleep ${token}`, token };
}

describe('bwrapArgs', () => {
  const system: SystemEntry[] = [
    { kind: 'bind', path: '/usr' },
    { kind: 'symlink', path: '/bin', target: 'usr/bin' },
  ];
  const args = (overrides: Partial<Parameters<typeof bwrapArgs>[0]> = {}) =>
    bwrapArgs({ workspace: '/w', network: false, cwd: '/w/src', tmpfsBytes: 1024, system, ...overrides });
  /** The operands of every occurrence of `option` (it takes `arity` of them). */
  const operands = (list: string[], option: string, arity: number) =>
    list.flatMap((arg, index) => (arg === option ? [list.slice(index + 1, index + 1 + arity).join(' ')] : []));

  it('unshares every namespace, the network included, and forbids nested user namespaces', () => {
    expect(args()).toEqual(
      expect.arrayContaining([
        '--unshare-user',
        '--disable-userns',
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        '--unshare-net',
        '--die-with-parent',
        '--new-session',
      ]),
    );
  });

  it('shares the network only when it is allowed', () => {
    expect(args({ network: true })).not.toContain('--unshare-net');
  });

  it('binds the system directories read-only, keeps merged-/usr links as links, and never binds the root', () => {
    const list = args();
    expect(operands(list, '--ro-bind', 2)).toContain('/usr /usr');
    expect(operands(list, '--symlink', 2)).toEqual(['usr/bin /bin']);
    expect(operands(list, '--ro-bind', 2).filter((pair) => pair.startsWith('/ '))).toEqual([]);
    expect(operands(list, '--bind', 2)).toEqual(['/w /w']);
  });

  it('binds only allow-listed /etc entries, none with credentials, and a passwd and group of its own', () => {
    const etc = operands(args(), '--ro-bind-try', 2).map((pair) => pair.split(' ')[0] ?? '');
    expect(etc).toEqual(ETC_ENTRIES.map((entry) => `/etc/${entry}`));
    for (const secret of ['shadow', 'gshadow', 'sudoers', 'ssh', 'ssl/private', 'npmrc', 'passwd', 'group']) {
      expect(etc).not.toContain(`/etc/${secret}`);
    }
    expect(operands(args(), '--ro-bind-data', 2)).toEqual(['3 /etc/passwd', '4 /etc/group']);
  });

  it('a fresh /proc, a minimal read-only /dev, private size-limited tmpfs for /tmp, /dev/shm and home', () => {
    const list = args();
    expect(operands(list, '--proc', 1)).toEqual(['/proc']);
    expect(operands(list, '--dev', 1)).toEqual(['/dev']);
    expect(operands(list, '--tmpfs', 1)).toEqual(['/dev/shm', '/tmp', '/home/sandbox']);
    expect(operands(list, '--size', 1)).toEqual(['1024', '1024', '1024']);
    expect(operands(list, '--remount-ro', 1)).toEqual(['/dev', '/']);
  });

  it('binds the workspace after the tmpfs and read-only binds (so it stays writable) and the root read-only last', () => {
    const list = args({ workspace: '/tmp/w', readOnlyPaths: ['/opt/go'] });
    const at = (...pair: string[]) =>
      list.findIndex((_, index) => pair.every((arg, offset) => list[index + offset] === arg));
    expect(at('--ro-bind', '/opt/go', '/opt/go')).toBeGreaterThan(at('--tmpfs', '/tmp'));
    expect(at('--bind', '/tmp/w', '/tmp/w')).toBeGreaterThan(at('--ro-bind', '/opt/go', '/opt/go'));
    expect(at('--remount-ro', '/')).toBeGreaterThan(at('--bind', '/tmp/w', '/tmp/w'));
    expect(list.slice(-2)).toEqual(['--chdir', '/w/src']);
  });

  it('binds nothing read-write without a workspace', () => {
    expect(args({ workspace: undefined })).not.toContain('--bind');
  });
});

describe('backend selection: fail closed', () => {
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

  it('backend "auto" without bubblewrap refuses too, naming the install and the explicit opt-out', async () => {
    const marker = path.join(workspace, 'ran');
    const attempt = run(`touch ${marker}`, { backend: 'auto', bwrapPath: missing });
    await expect(attempt).rejects.toMatchObject({ name: 'ToolError', code: 'sandbox_unavailable' });
    await expect(attempt).rejects.toThrow(/apt-get install bubblewrap.*allow_unsandboxed = true/s);
    expect(existsSync(marker)).toBe(false);
  });

  it('backend "auto" without bubblewrap runs unsandboxed, with a warning, only when the operator allowed it', async () => {
    const warnings: string[] = [];
    const result = await run('echo hi', {
      backend: 'auto',
      bwrapPath: missing,
      allowUnsandboxed: true,
      onWarning: (message) => warnings.push(message),
    });
    expect(result).toMatchObject({ sandbox: 'none', exitCode: 0, output: 'hi\n' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^bubblewrap not available: running unsandboxed, as \[sandbox\] allow_unsandboxed = true permits/,
    );
  });

  it('unsandboxed, the command still gets only the allow-listed environment', async () => {
    process.env.SWITCHYARD_FAKE_API_KEY = 'sk-unsandboxed-secret';
    try {
      const result = await run('env', { backend: 'none' });
      expect(result.output).not.toContain('sk-unsandboxed-secret');
      expect(result.output).toMatch(/^PATH=/m);
    } finally {
      delete process.env.SWITCHYARD_FAKE_API_KEY;
    }
  });

  sandboxIt('backend "auto" with bubblewrap sandboxes and does not warn', async () => {
    const warnings: string[] = [];
    const result = await run('echo hi', { backend: 'auto', onWarning: (message) => warnings.push(message) });
    expect(result).toMatchObject({ sandbox: 'bwrap', exitCode: 0, output: 'hi\n' });
    expect(warnings).toEqual([]);
  });

  sandboxIt('a sandbox that cannot be set up is sandbox_unavailable, not the command failing', async () => {
    const attempt = run('echo ran', { readOnlyPaths: [path.join(workspace, 'missing-dir')] });
    await expect(attempt).rejects.toMatchObject({ name: 'ToolError', code: 'sandbox_unavailable' });
    await expect(attempt).rejects.toThrow(/bubblewrap could not set up the sandbox/);
  });

  it('backend "none" runs directly', async () => {
    expect(await run('echo hi', { backend: 'none' })).toMatchObject({ sandbox: 'none', output: 'hi\n' });
  });
});

describe('bubblewrap confinement', () => {
  let outside: string;
  beforeAll(async () => {
    // Outside /tmp, so a failure to write there is not the private /tmp.
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

  sandboxIt('writes outside the workspace fail: what is not bound is not there, the rest is read-only', async () => {
    const target = path.join(outside, 'escaped');
    const result = await run(`echo out > ${target}`);
    expect(result.exitCode).not.toBe(0);
    // /var is not in the sandbox at all; /usr is, read-only.
    expect(result.stderr).toMatch(/No such file or directory/);
    expect(existsSync(target)).toBe(false);
    expect((await run('touch /usr/escaped')).stderr).toMatch(/Read-only file system/);
  });

  sandboxIt('/tmp is private: host files are invisible and sandbox files stay inside', async () => {
    const hostDir = await mkdtemp(path.join(tmpdir(), 'switchyard-bwrap-host-'));
    try {
      const hostFile = path.join(hostDir, 'secret');
      await writeFile(hostFile, 'host');
      const sandboxFile = path.join(tmpdir(), `switchyard-bwrap-${process.pid}-inner`);
      const result = await run(
        `test -e ${hostFile} && echo visible || echo hidden; echo x > ${sandboxFile} && echo wrote`,
      );
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
      await eventually(() => connections === before + 1, 'the sandbox connected once', PROCESS_PATIENCE);
    });

    sandboxIt('node, reached at its host path through the read-only root, is confined too', async () => {
      const script =
        `require("net").connect(${port}, "127.0.0.1").on("connect", () => { console.log("connected"); ` +
        `process.exit(0); }).on("error", (e) => { console.log(e.code); process.exit(3); })`;
      const off = await run(`'${process.execPath}' -e '${script}'`);
      expect(off).toMatchObject({ exitCode: 3, stdout: 'ECONNREFUSED\n' });
      const on = await run(`'${process.execPath}' -e '${script}'`, { network: true });
      expect(on).toMatchObject({ exitCode: 0, stdout: 'connected\n' });
    });
  });
});

describe('bubblewrap: timeout and cancellation end everything inside', () => {
  sandboxIt(
    'a timeout kills a backgrounded process, though --new-session put it outside our process group',
    async () => {
      const { command, token } = uniqueSleep();
      // Long enough for the sandbox to start and the test to look at its processes before the
      // timeout fires, also on a loaded machine; the sleep itself would take 50 minutes.
      const pending = run(`${command} & wait`, { timeoutMs: 5_000 });
      await eventually(() => sleepers(token).length === 1, 'one sleeper runs', PROCESS_PATIENCE);
      // sleep <- bash <- bwrap (pid 1 of the sandbox) <- bwrap (the process we spawned, leading its group)
      const [sleeper] = sleepers(token);
      const outer = hostProcess(hostProcess(hostProcess(sleeper?.pid ?? 0)?.ppid ?? 0)?.ppid ?? 0)?.ppid;
      expect(outer).toBeDefined();
      expect(hostProcess(outer ?? 0)?.pgid).toBe(outer);
      expect(sleeper?.pgid).not.toBe(outer);
      const result = await pending;
      expect(result).toMatchObject({ sandbox: 'bwrap', timedOut: true, exitCode: null, signal: 'SIGTERM' });
      await eventually(() => sleepers(token).length === 0, 'no sleeper is left', PROCESS_PATIENCE);
    },
  );

  sandboxIt('an abort kills a backgrounded process', async () => {
    const { command, token } = uniqueSleep();
    const controller = new AbortController();
    const pending = run(`${command} & wait`, { signal: controller.signal });
    await eventually(() => sleepers(token).length === 1, 'one sleeper runs', PROCESS_PATIENCE);
    controller.abort();
    expect(await pending).toMatchObject({ sandbox: 'bwrap', cancelled: true, timedOut: false });
    await eventually(() => sleepers(token).length === 0, 'no sleeper is left', PROCESS_PATIENCE);
  });

  sandboxIt('background leftovers of a finished command die with the sandbox', async () => {
    const { command, token } = uniqueSleep();
    // The command ends only once the test has seen its leftover, however slow the machine.
    const pending = run(`${command} & while [ ! -e seen ]; do sleep 0.02; done; echo done`);
    await eventually(() => sleepers(token).length === 1, 'one sleeper runs', PROCESS_PATIENCE);
    await writeFile(path.join(workspace, 'seen'), '');
    const result = await pending;
    expect(result).toMatchObject({ sandbox: 'bwrap', exitCode: 0, output: 'done\n' });
    // The leftover sleeps for 50 minutes; the call ended with its own command.
    await eventually(() => sleepers(token).length === 0, 'no sleeper is left', PROCESS_PATIENCE);
  });
});
