/*
 * The bubblewrap platform sandbox (README, "Approval, command policy and the sandbox"): the
 * argument list that confines a command, and a probe that checks once whether bwrap actually works
 * here (installed is not enough: a container may forbid the namespaces it needs).
 */
import { execa } from 'execa';

export const DEFAULT_BWRAP_PATH = 'bwrap';

export interface BwrapProbe {
  available: boolean;
  /** Why bwrap cannot run, when it cannot. */
  reason?: string;
}

export interface BwrapArgsOptions {
  /** Bound read-write; everything else is read-only (or private, for /tmp). */
  workspace?: string;
  network: boolean;
  cwd: string;
}

/**
 * Read-only root, fresh /dev and /proc, a private /tmp, the workspace read-write, every
 * namespace unshared (the network only when it is not allowed). --new-session keeps the
 * command off our terminal (TIOCSTI); it moves the command out of bwrap's process group,
 * which is safe because killing bwrap ends the pid namespace (--die-with-parent) and with it
 * every process inside.
 */
export function bwrapArgs({ workspace, network, cwd }: BwrapArgsOptions): string[] {
  return [
    '--ro-bind', '/', '/',
    '--dev', '/dev',
    '--proc', '/proc',
    '--tmpfs', '/tmp',
    // After the /tmp tmpfs, so a workspace under /tmp stays visible.
    ...(workspace === undefined ? [] : ['--bind', workspace, workspace]),
    '--unshare-all',
    ...(network ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--chdir', cwd,
  ];
}

const probes = new Map<string, Promise<BwrapProbe>>();

/** Runs `true` under the same confinement commands get, once per bwrap path. */
export function probeBwrap(bwrapPath: string = DEFAULT_BWRAP_PATH): Promise<BwrapProbe> {
  let probe = probes.get(bwrapPath);
  if (probe === undefined) {
    probe = runProbe(bwrapPath);
    probes.set(bwrapPath, probe);
  }
  return probe;
}

export async function bwrapAvailable(bwrapPath: string = DEFAULT_BWRAP_PATH): Promise<boolean> {
  return (await probeBwrap(bwrapPath)).available;
}

async function runProbe(bwrapPath: string): Promise<BwrapProbe> {
  const args = [...bwrapArgs({ network: false, cwd: '/' }), 'true'];
  const result = await execa(bwrapPath, args, { reject: false, stdin: 'ignore', timeout: 10_000 });
  if (result.exitCode === 0) return { available: true };
  const detail = result.code === 'ENOENT' ? `${bwrapPath} not found` : result.stderr.trim() || result.shortMessage;
  return { available: false, reason: detail };
}
