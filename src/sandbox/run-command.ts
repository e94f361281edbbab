/*
 * The command runner (README "Sandbox", docs/sandbox.md): one shell command through execa,
 * inside bubblewrap unless the operator chose otherwise, with an allow-listed environment,
 * resource limits, a timeout and cancellation that kill the whole process group, and an output
 * budget that never blocks the child.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { Duplex, Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { execa } from 'execa';
import { ToolError } from '../core/errors.js';
import { BWRAP_FDS, probeBwrap, sandboxedProcess } from './bwrap.js';
import { answerStart, STARTED } from './start-handshake.js';
import { guardedByParent } from './parent-guard.js';
import type { CommandLimits } from './command-limits.js';
import { DEFAULT_COMMAND_LIMITS } from './command-limits.js';
import { commandEnvironment } from './command-environment.js';
import type { UnixUser, WorkspaceOwners } from './command-user.js';
import { commandUser, commandUserWithoutWorkspace } from './command-user.js';
import { OutputCap } from './output-cap.js';
import { SANDBOX_HOME } from './sandbox-filesystem.js';

export type SandboxBackend = 'auto' | 'bwrap' | 'none';

export interface RunCommandOptions {
  command: string;
  /** Absolute working directory; must exist. */
  cwd: string;
  /**
   * Variables added to the command's environment. The rest of it is an allow-list of the
   * server's (PATH, locale, TZ, TERM) and HOME, never the server's whole environment.
   */
  env?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Budget for stdout, stderr and the interleaved output, each. */
  maxOutputBytes: number;
  /** Network access inside the sandbox (bwrap only: unsandboxed commands always have it). */
  network: boolean;
  /** "none" runs unsandboxed: callers pass it only when the operator allowed that. */
  backend: SandboxBackend;
  /** May "auto" run unsandboxed when bubblewrap cannot run? Default false: sandbox_unavailable. */
  allowUnsandboxed?: boolean;
  /** Bound read-write inside bwrap; the only writable host directory. */
  workspace?: string;
  /** Process, memory and file-size limits inside bwrap (default DEFAULT_COMMAND_LIMITS). */
  limits?: CommandLimits;
  /** Extra host directories bound read-only inside bwrap. */
  readOnlyPaths?: readonly string[];
  /** For a server running as root: who runs commands in a workspace they own. */
  unprivileged?: UnixUser;
  /** Whose directories the workspace may be ([sandbox] client_workspaces); default "sandbox_user". */
  workspaceOwners?: WorkspaceOwners;
  /** Called when `auto` runs unsandboxed because the operator allowed it. */
  onWarning?(message: string): void;
  /** The bubblewrap binary (default `bwrap` on PATH). */
  bwrapPath?: string;
  /** Time between SIGTERM and SIGKILL for the process group (default 2000 ms). */
  killGraceMs?: number;
}

export interface CommandResult {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved in arrival order. */
  output: string;
  truncated: boolean;
  timedOut: boolean;
  cancelled: boolean;
  durationMs: number;
  sandbox: 'bwrap' | 'none';
}

const SHELL = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
const DEFAULT_KILL_GRACE_MS = 2_000;
// After the group is SIGKILLed, a process that left it (setsid) may still hold our pipes.
const PIPE_RELEASE_MS = 1_000;
const INSTALL_HINT =
  'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) and util-linux ' +
  '(prlimit), and make sure unprivileged user namespaces are allowed';

export async function runCommand(options: RunCommandOptions): Promise<CommandResult> {
  // Who would run the command in the sandbox (and whether the workspace may be one), before anything runs.
  const owners = { unprivileged: options.unprivileged, owners: options.workspaceOwners };
  const sandboxUser =
    options.backend === 'none'
      ? undefined
      : options.workspace === undefined
        ? commandUserWithoutWorkspace(owners)
        : await commandUser(options.workspace, owners);
  const sandbox = await chooseSandbox(options, sandboxUser);
  await assertDirectory(options.cwd);
  const started = performance.now();
  const stdout = new OutputCap(options.maxOutputBytes);
  const stderr = new OutputCap(options.maxOutputBytes);
  const output = new OutputCap(options.maxOutputBytes);
  const finish = (fields: Pick<CommandResult, 'exitCode' | 'signal' | 'timedOut' | 'cancelled'>): CommandResult => ({
    ...fields,
    stdout: stdout.text(),
    stderr: stderr.text(),
    output: output.text(),
    truncated: output.truncated || stdout.truncated || stderr.truncated,
    durationMs: Math.round(performance.now() - started),
    sandbox,
  });
  if (options.signal?.aborted) return finish({ exitCode: null, signal: null, timedOut: false, cancelled: true });

  const shell = [SHELL, '-c', options.command];
  const user = sandbox === 'bwrap' ? sandboxUser : undefined;
  const env = commandEnvironment({
    home: sandbox === 'bwrap' ? SANDBOX_HOME : (options.workspace ?? options.cwd),
    ...(options.env ? { extra: options.env } : {}),
  });
  const confined =
    sandbox === 'bwrap'
      ? sandboxedProcess({
          ...(options.bwrapPath !== undefined ? { bwrapPath: options.bwrapPath } : {}),
          ...(options.workspace !== undefined ? { workspace: options.workspace } : {}),
          ...(options.readOnlyPaths !== undefined ? { readOnlyPaths: options.readOnlyPaths } : {}),
          network: options.network,
          cwd: options.cwd,
          limits: options.limits ?? DEFAULT_COMMAND_LIMITS,
          uid: user?.uid ?? process.getuid?.() ?? 0,
          gid: user?.gid ?? process.getgid?.() ?? 0,
          argv: shell,
        })
      : undefined;
  // Armed to die with this process before anything of the command runs (parent-guard.ts); in
  // bwrap the sandbox's own start handshake (on its start-up descriptor) does the same inside.
  const guardFd = confined ? BWRAP_FDS.started + 1 : 3;
  const file = confined?.file ?? SHELL;
  const args = confined?.args ?? shell.slice(1);
  const guarded = guardedByParent(file, args, process.pid, guardFd);
  const extraStdio = [...(confined?.extraStdio ?? []), ...(guarded ? (['pipe'] as const) : [])];
  const child = execa(guarded?.file ?? file, guarded?.args ?? args, {
    // bwrap changes into cwd inside the sandbox; the user it runs as may not reach it from here.
    cwd: confined ? '/' : options.cwd,
    env,
    extendEnv: false,
    ...(user ?? {}),
    // Its own process group, so a kill reaches what the command started in the background.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', ...extraStdio],
    buffer: false,
    reject: false,
  });
  collect(child.stdout, stdout, output);
  collect(child.stderr, stderr, output);
  const report = confined ? ((child.stdio as readonly unknown[])[BWRAP_FDS.started] as Duplex) : undefined;
  // The command starts only once this process answers, and never after it was stopped or bwrap exited.
  const holdBack = () => stoppedBy !== undefined || exited;
  const startReport = report ? answerStart(report, holdBack) : undefined;
  if (guarded) answerStart((child.stdio as readonly unknown[])[guardFd] as Duplex, holdBack);
  // The report may still be in the pipe when the process exits; its end comes with bwrap's exit.
  const reportRead = report === undefined ? Promise.resolve() : finished(report).catch(() => undefined);

  const group = new ProcessGroup(child.pid, options.killGraceMs ?? DEFAULT_KILL_GRACE_MS);
  let stoppedBy: 'timeout' | 'abort' | undefined;
  let exited = false;
  const stop = (reason: 'timeout' | 'abort') => {
    // Once the command has exited its result stands, even if its pipes are still closing.
    if (exited) return;
    stoppedBy ??= reason;
    group.kill();
  };
  const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
  const onAbort = () => stop('abort');
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let releasePipes: NodeJS.Timeout | undefined;
  child.once('exit', () => {
    exited = true;
    // Leftover background processes would hold the pipes open and outlive the call.
    group.kill();
    releasePipes = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      report?.destroy();
    }, group.graceMs + PIPE_RELEASE_MS);
  });

  try {
    const result = await child;
    await reportRead;
    if (child.pid === undefined) {
      throw new ToolError('spawn_failed', `could not start ${confined?.file ?? SHELL}: ${result.shortMessage}`);
    }
    if (confined && stoppedBy === undefined && !(startReport?.text().includes(STARTED) ?? false)) {
      const hint =
        user === undefined
          ? ''
          : ` (the server runs as root, so commands run as uid ${user.uid}, who must be able to reach ${options.workspace})`;
      throw new ToolError(
        'sandbox_unavailable',
        `bubblewrap could not set up the sandbox: ${stderr.text().trim() || result.shortMessage}${hint}`,
      );
    }
    return finish({
      exitCode: result.exitCode ?? null,
      signal: result.signal ?? null,
      timedOut: stoppedBy === 'timeout',
      cancelled: stoppedBy === 'abort',
    });
  } finally {
    clearTimeout(timer);
    clearTimeout(releasePipes);
    options.signal?.removeEventListener('abort', onAbort);
  }
}

async function chooseSandbox(options: RunCommandOptions, user: UnixUser | undefined): Promise<'bwrap' | 'none'> {
  if (options.backend === 'none') return 'none';
  const probe = await probeBwrap(options.bwrapPath, user);
  if (probe.available) return 'bwrap';
  if (options.backend === 'auto' && options.allowUnsandboxed === true) {
    options.onWarning?.(
      `bubblewrap not available: running unsandboxed, as [sandbox] allow_unsandboxed = true permits (${probe.reason})`,
    );
    return 'none';
  }
  const configured =
    options.backend === 'bwrap'
      ? '[sandbox] backend = "bwrap"'
      : '[sandbox] backend = "auto" and allow_unsandboxed = false';
  throw new ToolError(
    'sandbox_unavailable',
    `bubblewrap cannot run here (${probe.reason}), and ${configured} refuses to run commands without it. ${INSTALL_HINT}; ` +
      "or, to run commands unsandboxed with the server's own rights, set [sandbox] allow_unsandboxed = true.",
  );
}

async function assertDirectory(cwd: string): Promise<void> {
  const info = await stat(cwd).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw new ToolError('invalid_cwd', `working directory ${cwd} does not exist or is not a directory`);
  }
}

/** Reads a pipe to its end whatever the budget, so the child never blocks on a full pipe. */
function collect(stream: Readable | null, own: OutputCap, combined: OutputCap): void {
  if (stream === null) return;
  const decoder = new StringDecoder('utf8');
  stream.on('data', (chunk: Buffer) => {
    if (own.full && combined.full) {
      own.omit(chunk.length);
      combined.omit(chunk.length);
      return;
    }
    const text = decoder.write(chunk);
    own.append(text);
    combined.append(text);
  });
  stream.on('end', () => {
    const rest = decoder.end();
    own.append(rest);
    combined.append(rest);
  });
}

/** The command's process group (pgid = the leader's pid, because it was spawned detached). */
class ProcessGroup {
  private killing = false;

  constructor(
    private readonly pgid: number | undefined,
    readonly graceMs: number,
  ) {}

  /** SIGTERM to every member now, SIGKILL to whatever is left after the grace period. */
  kill(): void {
    const pgid = this.pgid;
    if (this.killing || pgid === undefined) return;
    this.killing = true;
    if (!signalGroup(pgid, 'SIGTERM')) return;
    setTimeout(() => signalGroup(pgid, 'SIGKILL'), this.graceMs).unref();
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is already empty
  }
}
