/*
 * The bubblewrap platform sandbox (README "Sandbox", docs/sandbox.md): the argument list that
 * confines a command, and a probe that checks once whether that confinement actually works
 * here (installed is not enough: a container may forbid the namespaces it needs).
 */
import type { Duplex } from 'node:stream';
import { execa } from 'execa';
import { answerStart, GO, STARTED } from './start-handshake.js';
import type { CommandLimits } from './command-limits.js';
import { DEFAULT_COMMAND_LIMITS, findPrlimit, limitPrefix } from './command-limits.js';
import type { SystemEntry } from './sandbox-filesystem.js';
import { ETC_ENTRIES, identityFiles, SANDBOX_HOME, systemLayout } from './sandbox-filesystem.js';

export const DEFAULT_BWRAP_PATH = 'bwrap';

/** File descriptors bwrap reads its passwd and group from, and the sandbox reports its start on. */
export const BWRAP_FDS = { passwd: 3, group: 4, started: 5 } as const;

export { STARTED } from './start-handshake.js';

export interface BwrapProbe {
  available: boolean;
  /** Why bwrap cannot run, when it cannot. */
  reason?: string;
}

export interface BwrapArgsOptions {
  /** Bound read-write at its own path; nothing else of the host is writable. */
  workspace?: string;
  network: boolean;
  cwd: string;
  /** The size of each private tmpfs (/tmp, home, /dev/shm). */
  tmpfsBytes: number;
  /** The host's program and library directories (systemLayout()). */
  system: readonly SystemEntry[];
  /** Extra host directories bound read-only ([sandbox] read_only_paths). */
  readOnlyPaths?: readonly string[];
}

/**
 * Every namespace unshared (the network only when it is not allowed), a user namespace that
 * cannot create further ones, an empty root with only the system directories, a short /etc,
 * a fresh /proc (own pid namespace: no host process is visible), a minimal /dev, private
 * tmpfs for /tmp, /dev/shm and home, the workspace read-write, and the root read-only after
 * that. --new-session keeps the command off our terminal (TIOCSTI); it moves the command out
 * of bwrap's process group, which is safe because killing bwrap ends the pid namespace
 * (--die-with-parent) and with it every process inside.
 */
export function bwrapArgs({
  workspace,
  network,
  cwd,
  tmpfsBytes,
  system,
  readOnlyPaths = [],
}: BwrapArgsOptions): string[] {
  const size = String(tmpfsBytes);
  return [
    '--unshare-user',
    '--disable-userns',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(network ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
    ...system.flatMap((entry) =>
      entry.kind === 'bind' ? ['--ro-bind', entry.path, entry.path] : ['--symlink', entry.target, entry.path],
    ),
    '--dir',
    '/etc',
    ...ETC_ENTRIES.flatMap((entry) => ['--ro-bind-try', `/etc/${entry}`, `/etc/${entry}`]),
    '--perms',
    '0644',
    '--ro-bind-data',
    String(BWRAP_FDS.passwd),
    '/etc/passwd',
    '--perms',
    '0644',
    '--ro-bind-data',
    String(BWRAP_FDS.group),
    '/etc/group',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    size,
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--size',
    size,
    '--tmpfs',
    '/tmp',
    '--size',
    size,
    '--tmpfs',
    SANDBOX_HOME,
    ...readOnlyPaths.flatMap((path) => ['--ro-bind', path, path]),
    // Last, so a workspace under /tmp or /usr is the workspace, not the tmpfs or the read-only bind.
    ...(workspace === undefined ? [] : ['--bind', workspace, workspace]),
    '--remount-ro',
    '/',
    '--chdir',
    cwd,
  ];
}

export interface SandboxedProcess {
  file: string;
  args: string[];
  /** What to give bwrap on fds 3, 4 and 5 (execa's stdio entries after stdin, stdout, stderr). */
  extraStdio: [Uint8Array, Uint8Array, 'pipe'];
}

export interface SandboxedCommandOptions extends Omit<BwrapArgsOptions, 'tmpfsBytes' | 'system'> {
  bwrapPath?: string;
  limits: CommandLimits;
  /** The user and group bwrap runs as; the sandboxed user has the same ids. */
  uid: number;
  gid: number;
  /** The program and its arguments, run under the limits inside the sandbox. */
  argv: string[];
}

/**
 * Runs first inside the sandbox, under the limits: reports on the start-up descriptor that the
 * sandbox is set up, waits for the server's GO on it (answerStart), closes every descriptor but
 * stdin, stdout and stderr (a server started through a wrapper may hold inherited ones, which
 * would reach into the host), and becomes the command. No report means the sandbox never
 * started, which is not the command's failure.
 *
 * Why the GO: every process between the server and the command (bwrap, the pid namespace's
 * init) arms its parent-death signal before this script runs, each against a parent that was
 * alive when it armed only if the server still was. A server that answers was alive after all
 * of them armed, so its death from then on reaches the whole sandbox; a server that died
 * earlier never answers (the descriptor reads end-of-file) and the command never starts.
 */
const START_SCRIPT =
  `printf ${STARTED} >&${BWRAP_FDS.started}; ` +
  `IFS= read -r -N ${GO.length} go <&${BWRAP_FDS.started} && [ "$go" = ${GO} ] || exit 125; ` +
  `for fd in /proc/$$/fd/*; do fd=\${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done; ` +
  `exec "$@"`;

/** bwrap, its arguments and its inputs for `argv` under `limits`; throws when prlimit is missing. */
export function sandboxedProcess(options: SandboxedCommandOptions): SandboxedProcess {
  const prlimit = findPrlimit();
  if (prlimit === undefined) {
    throw new Error('prlimit (util-linux) not found in /usr/bin or /bin; install util-linux');
  }
  const args = [
    ...bwrapArgs({ ...options, tmpfsBytes: options.limits.maxFileBytes, system: systemLayout() }),
    '--',
    ...limitPrefix(prlimit, options.limits),
    '/bin/bash',
    '-c',
    START_SCRIPT,
    'sandbox-start',
    ...options.argv,
  ];
  const { passwd, group } = identityFiles(options.uid, options.gid);
  const encoder = new TextEncoder();
  return {
    file: options.bwrapPath ?? DEFAULT_BWRAP_PATH,
    args,
    extraStdio: [encoder.encode(passwd), encoder.encode(group), 'pipe'],
  };
}

const probes = new Map<string, Promise<BwrapProbe>>();

/**
 * Runs `true` under the same confinement and limits commands get, once per bwrap path and
 * user (a server running as root runs commands as another user, who must be able to run bwrap).
 */
export function probeBwrap(
  bwrapPath: string = DEFAULT_BWRAP_PATH,
  user?: { uid: number; gid: number },
): Promise<BwrapProbe> {
  const key = `${bwrapPath}\0${user?.uid ?? ''}`;
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runProbe(bwrapPath, user);
    probes.set(key, probe);
  }
  return probe;
}

export async function bwrapAvailable(
  bwrapPath: string = DEFAULT_BWRAP_PATH,
  user?: { uid: number; gid: number },
): Promise<boolean> {
  return (await probeBwrap(bwrapPath, user)).available;
}

async function runProbe(bwrapPath: string, user: { uid: number; gid: number } | undefined): Promise<BwrapProbe> {
  let sandboxed: SandboxedProcess;
  try {
    sandboxed = sandboxedProcess({
      bwrapPath,
      network: false,
      cwd: '/',
      limits: DEFAULT_COMMAND_LIMITS,
      uid: user?.uid ?? process.getuid?.() ?? 0,
      gid: user?.gid ?? process.getgid?.() ?? 0,
      argv: ['true'],
    });
  } catch (error) {
    return { available: false, reason: (error as Error).message };
  }
  const probe = execa(sandboxed.file, sandboxed.args, {
    reject: false,
    stdio: ['ignore', 'pipe', 'pipe', ...sandboxed.extraStdio],
    timeout: 10_000,
    ...(user ?? {}),
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    extendEnv: false,
  });
  const report = (probe.stdio as readonly unknown[])[BWRAP_FDS.started] as Duplex | undefined;
  if (report) answerStart(report);
  const result = await probe;
  if (result.exitCode === 0) return { available: true };
  const detail =
    result.code === 'ENOENT' ? `${bwrapPath} not found` : String(result.stderr).trim() || result.shortMessage;
  return { available: false, reason: detail };
}
