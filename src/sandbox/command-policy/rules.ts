/*
 * The built-in command rules, as data (docs/command-policy.md). The floor always blocks; the
 * tunable rules take the action of `[sandbox.command_policy] enforcement`. Each rule judges one
 * CommandSite: a simple command as bash will expand it, with the views through its wrappers, so
 * `sudo env X=1 rm -rf /` is judged as `sudo …` and as `rm -rf /`. Rules are tried in table
 * order; the first match names the verdict. test/sandbox/command-policy.corpus.ts holds the
 * cases, each with the peer rule or test it comes from.
 */
import { embedsCommand, opensReverseShell, runsDownloadedCode, runsUnreadableCode } from './code-origin.js';
import type { CommandSite } from './command-sites.js';
import { makesFilesystemOnDevice, removesRecursively, wipesDevice, writesBlockDevice } from './destruction.js';
import { exhaustsResources } from './exhaustion.js';
import { sendsLocalData } from './exfiltration.js';
import { makesGitRunCommand, rewritesGitHistory } from './git-hazards.js';
import { someView } from './site-views.js';
import {
  changesSystemPermissions,
  escalatesPrivileges,
  shutsDown,
  signalsEveryProcess,
  writesAuthorizedKeys,
  writesSystemFiles,
} from './system-changes.js';
import { ifVariablesWereEmpty, isRootTarget, isSystemTarget } from './targets.js';

export interface CommandRule {
  readonly name: string;
  /** Completes "blocked by <name>: …" / "flagged by <name>: …". */
  readonly reason: string;
  readonly matches: (site: CommandSite) => boolean;
}

/** Always `block`, whatever the enforcement or the operator rules. */
export const FLOOR_RULES: readonly CommandRule[] = [
  {
    name: 'floor:fork-bomb',
    reason: 'defines a function that keeps spawning copies of itself (a fork bomb)',
    matches: (site) => site.concurrent && someView(site, (program) => site.functions.includes(program)),
  },
  {
    name: 'floor:rm-root',
    reason: 'removes the root filesystem',
    matches: (site) => removesRecursively(site, (target) => isRootTarget(target, site.cwdIsRoot)),
  },
  {
    name: 'floor:block-device-write',
    reason: 'writes directly to a block device',
    matches: writesBlockDevice,
  },
  {
    name: 'floor:mkfs',
    reason: 'creates a filesystem on a device, erasing what it held',
    matches: makesFilesystemOnDevice,
  },
  {
    name: 'floor:wipe-device',
    reason: 'wipes or re-partitions a block device',
    matches: wipesDevice,
  },
];

/** The action of `[sandbox.command_policy] enforcement` (`warn` by default; `off` lets them pass). */
export const TUNABLE_RULES: readonly CommandRule[] = [
  {
    name: 'download-pipe-shell',
    reason:
      'runs code straight from the network (a download or a connection piped or substituted into a shell or interpreter)',
    matches: runsDownloadedCode,
  },
  {
    name: 'reverse-shell',
    reason: "joins a shell's input or output to a network connection (/dev/tcp, nc -e, a shell piped into nc)",
    matches: opensReverseShell,
  },
  {
    name: 'runtime-payload',
    reason:
      'runs code made only when it runs (decoded, reversed, assembled or substituted), which cannot be read beforehand',
    matches: runsUnreadableCode,
  },
  {
    name: 'resource-exhaustion',
    reason: 'starts processes without a bound (a fork loop, an endless loop of background jobs, xargs -P0)',
    matches: exhaustsResources,
  },
  {
    name: 'embedded-command',
    reason:
      "hands a command to another program that runs it (awk system(), sed's e, find -exec sh -c, an interpreter's os.system)",
    matches: embedsCommand,
  },
  {
    name: 'exfiltration',
    reason: 'sends local files, the environment or command output over the network',
    matches: sendsLocalData,
  },
  {
    name: 'shutdown-reboot',
    reason: 'shuts down or reboots the machine',
    matches: shutsDown,
  },
  {
    name: 'ssh-authorized-keys',
    reason: 'writes an SSH authorized_keys file, which grants login access',
    matches: writesAuthorizedKeys,
  },
  {
    name: 'system-files',
    reason: 'changes accounts, sudoers, scheduled jobs, boot or kernel settings of the machine',
    matches: writesSystemFiles,
  },
  {
    name: 'system-permissions',
    reason: 'changes permissions or owners of system paths, or sets a setuid/setgid bit',
    matches: changesSystemPermissions,
  },
  {
    name: 'rm-system-paths',
    reason:
      'recursively removes a system directory, a home directory, or a direct child of one (or would, if a variable in the path were empty)',
    matches: (site) =>
      removesRecursively(site, (target) => {
        if (isSystemTarget(target, site.cwdIsRoot)) return true;
        const emptied = ifVariablesWereEmpty(target);
        return (
          emptied !== undefined && (isSystemTarget(emptied, site.cwdIsRoot) || isRootTarget(emptied, site.cwdIsRoot))
        );
      }),
  },
  {
    name: 'kill-all',
    reason: 'signals every process (kill -1) or init',
    matches: signalsEveryProcess,
  },
  {
    name: 'git-history',
    reason: 'destroys git history or uncommitted work (force push, reset --hard, clean -f)',
    matches: rewritesGitHistory,
  },
  {
    name: 'git-runs-command',
    reason: 'makes git run a command (a hook, core.editor, core.pager, core.sshCommand, a shell alias)',
    matches: makesGitRunCommand,
  },
  {
    name: 'sudo',
    reason: 'runs a command with elevated privileges',
    matches: escalatesPrivileges,
  },
];
