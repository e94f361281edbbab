/*
 * The command runner (README, "Approval, command policy and the sandbox"): one shell command
 * through execa, optionally inside bubblewrap, with a timeout and cancellation that kill the whole
 * process group and an output budget that never blocks the child.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import { execa } from 'execa';
import { ToolError } from '../core/errors.js';
import { bwrapArgs, DEFAULT_BWRAP_PATH, probeBwrap } from './bwrap.js';
import { OutputCap } from './output-cap.js';

export type SandboxBackend = 'auto' | 'bwrap' | 'none';

export interface RunCommandOptions {
  command: string;
  /** Absolute working directory; must exist. */
  cwd: string;
  /** The whole environment of the command; the runner's own environment when omitted. */
  env?: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Budget for stdout, stderr and the interleaved output, each. */
  maxOutputBytes: number;
  /** Network access inside the sandbox (bwrap only: unsandboxed commands always have it). */
  network: boolean;
  backend: SandboxBackend;
  /** Bound read-write inside bwrap; the rest of the file system is read-only. */
  workspace?: string;
  /** Called when `auto` falls back to running unsandboxed. */
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

export async function runCommand(options: RunCommandOptions): Promise<CommandResult> {
  const sandbox = await chooseSandbox(options);
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

  const shellArgs = ['-c', options.command];
  const [file, args] =
    sandbox === 'bwrap'
      ? [
          options.bwrapPath ?? DEFAULT_BWRAP_PATH,
          [...bwrapArgs({ workspace: options.workspace, network: options.network, cwd: options.cwd }), '--', SHELL, ...shellArgs],
        ]
      : [SHELL, shellArgs];
  const child = execa(file, args, {
    cwd: options.cwd,
    ...(options.env === undefined ? {} : { env: options.env, extendEnv: false }),
    // Its own process group, so a kill reaches what the command started in the background.
    detached: true,
    stdin: 'ignore',
    buffer: false,
    reject: false,
  });
  collect(child.stdout, stdout, output);
  collect(child.stderr, stderr, output);

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
    }, group.graceMs + PIPE_RELEASE_MS);
  });

  try {
    const result = await child;
    if (child.pid === undefined) {
      throw new ToolError('spawn_failed', `could not start ${file}: ${result.shortMessage}`);
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

async function chooseSandbox(options: RunCommandOptions): Promise<'bwrap' | 'none'> {
  if (options.backend === 'none') return 'none';
  const probe = await probeBwrap(options.bwrapPath);
  if (probe.available) return 'bwrap';
  if (options.backend === 'bwrap') {
    throw new ToolError(
      'sandbox_unavailable',
      `bubblewrap is required ([sandbox] backend = "bwrap") but cannot run: ${probe.reason}. ` +
        'Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap) and make sure ' +
        'user namespaces are allowed, or set backend = "auto" to run unsandboxed with a warning.',
    );
  }
  options.onWarning?.(`bubblewrap not available: running unsandboxed (${probe.reason})`);
  return 'none';
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
