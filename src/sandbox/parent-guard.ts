/*
 * A command never outlives the server that started it (docs/sandbox.md, "A command dies with
 * its server"). The process the server spawns arms its parent-death signal (util-linux's
 * `setpriv --pdeathsig KILL`, PR_SET_PDEATHSIG) before anything else runs, then checks that its
 * parent is still the server: a server that died between the fork and the arming left the
 * process to another parent, which the check sees (the classic prctl-then-getppid check), and
 * it exits before the command starts. Past the check the kernel kills it when the server dies.
 * bwrap's own --die-with-parent arms only once bwrap runs, which is what left that window open.
 */
import { existsSync } from 'node:fs';
import { GO, STARTED } from './start-handshake.js';

const SETPRIV_CANDIDATES = ['/usr/bin/setpriv', '/bin/setpriv', '/usr/sbin/setpriv', '/sbin/setpriv'];

/** The exit status of a guard whose server was gone before the command could start. */
export const PARENT_GONE_EXIT = 125;

/**
 * `$PPID` is read once, as the shell starts: after setpriv armed the signal (same process,
 * setpriv execs the shell). A mismatch means the server is gone. A match is not enough in a
 * server with threads (Node has several): when the thread that spawned us dies first, the
 * kernel hands us to another thread of the same process, so getppid() still names the server
 * while it is dying, and the signal already went out before it was armed. Trials showed it
 * (23 of 40 commands outlived a server killed within 20 ms of the spawn). So the guard also
 * asks the server itself, on `fd`: it writes STARTED and waits for GO (answerStart), which only
 * a server whose event loop still runs can give; a server that died reads as end-of-file. Then
 * the descriptor is closed and the command replaces the shell, keeping the armed signal (it
 * survives exec for a program that is not set-user-ID).
 */
function guardScript(fd: number): string {
  return (
    `[ "$PPID" = "$1" ] || exit ${PARENT_GONE_EXIT}; ` +
    `printf ${STARTED} >&${fd}; IFS= read -r -N ${GO.length} go <&${fd} && [ "$go" = ${GO} ] || exit ${PARENT_GONE_EXIT}; ` +
    `exec ${fd}>&-; shift; exec "$@"`
  );
}

/** Where setpriv is, or undefined when util-linux's setpriv is not installed. */
export function findSetpriv(): string | undefined {
  return SETPRIV_CANDIDATES.find((candidate) => existsSync(candidate));
}

export interface GuardedCommand {
  file: string;
  args: string[];
}

/**
 * `file args` started so that it dies with the process `serverPid` (the one that spawns it),
 * talking the start handshake on descriptor `fd` (give the spawn a pipe there and answer it
 * with answerStart); undefined when setpriv is missing (bwrap's own start-up handshake still
 * holds a sandboxed command back then; an unsandboxed command is not covered).
 */
export function guardedByParent(
  file: string,
  args: readonly string[],
  serverPid: number,
  fd: number,
  setpriv = findSetpriv(),
): GuardedCommand | undefined {
  if (setpriv === undefined) return undefined;
  return {
    file: setpriv,
    args: [
      '--pdeathsig',
      'KILL',
      '--',
      '/bin/bash',
      '-c',
      guardScript(fd),
      'parent-guard',
      String(serverPid),
      file,
      ...args,
    ],
  };
}
