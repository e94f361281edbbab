/*
 * Resource limits of a sandboxed command, applied inside bubblewrap by util-linux's prlimit
 * (setrlimit, inherited by every process the command starts). RLIMIT_NPROC counts the
 * processes of one user in one user namespace (Linux 5.14 and later), and every sandbox has a
 * user namespace of its own, so the count starts at zero whatever else the server's user runs.
 */
import { existsSync } from 'node:fs';

export interface CommandLimits {
  /** Processes and threads at once (RLIMIT_NPROC). */
  maxProcesses: number;
  /** Address space per process (RLIMIT_AS), in bytes. */
  maxMemoryBytes: number;
  /** Largest file a process may write (RLIMIT_FSIZE), in bytes; also the size of each private tmpfs. */
  maxFileBytes: number;
}

/** The [sandbox] defaults (src/config/schema.ts). */
export const DEFAULT_COMMAND_LIMITS: CommandLimits = {
  maxProcesses: 512,
  maxMemoryBytes: 4 * 1024 ** 3,
  maxFileBytes: 1024 ** 3,
};

// Only directories the sandbox binds: prlimit runs inside it.
const PRLIMIT_CANDIDATES = ['/usr/bin/prlimit', '/usr/sbin/prlimit', '/bin/prlimit', '/sbin/prlimit'];

/** Where prlimit is, or undefined when util-linux's prlimit is not installed. */
export function findPrlimit(): string | undefined {
  return PRLIMIT_CANDIDATES.find((candidate) => existsSync(candidate));
}

/** The prefix that runs a command under `limits`: `prlimit --nproc=… --as=… --fsize=… --`. */
export function limitPrefix(prlimit: string, limits: CommandLimits): string[] {
  return [
    prlimit,
    `--nproc=${limits.maxProcesses}`,
    `--as=${limits.maxMemoryBytes}`,
    `--fsize=${limits.maxFileBytes}`,
    '--',
  ];
}
