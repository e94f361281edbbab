/*
 * The built-in command rules, as data (README, "Approval, command policy and the sandbox"). The
 * floor always blocks; the tunable rules take the action of `[sandbox.command_policy] enforcement`.
 * Each rule judges one CommandSite: a simple command with the views through its wrappers, so `sudo
 * env X=1 rm -rf /` is judged as `sudo …` and as `rm -rf /`. Rules are tried in table order; the
 * first match names the verdict. test/sandbox/command-policy.test.ts holds the table of cases
 * beside this one.
 */
import type { CommandSite } from './command-sites.js';
import { DOWNLOADERS, readsProgramFromStdin, runsCode } from './programs.js';
import { ifVariablesWereEmpty, isAuthorizedKeys, isBlockDevice, isRootTarget, isSystemTarget, operands, rmArguments } from './targets.js';

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
    matches: (site) => writesTo(site, isBlockDevice),
  },
  {
    name: 'floor:mkfs',
    reason: 'creates a filesystem, erasing what the device held',
    matches: (site) =>
      someView(site, (program, args) => MKFS.test(program) || (program === 'mkswap' && operands(args).some(isBlockDevice))),
  },
  {
    name: 'floor:wipe-device',
    reason: 'wipes a block device',
    matches: (site) =>
      someView(site, (program, args) => program === 'wipefs' || program === 'blkdiscard' || (program === 'shred' && operands(args).some(isBlockDevice))),
  },
];

/** The action of `[sandbox.command_policy] enforcement` (`warn` by default; `off` lets them pass). */
export const TUNABLE_RULES: readonly CommandRule[] = [
  {
    name: 'download-pipe-shell',
    reason: 'runs code straight from the network (a download piped or substituted into a shell or interpreter)',
    matches: (site) =>
      someView(
        site,
        (program, _args, argv) =>
          (readsProgramFromStdin(argv) && site.upstream().some(isDownload)) || (runsCode(program) && site.substituted.some(isDownload)),
      ),
  },
  {
    name: 'shutdown-reboot',
    reason: 'shuts down or reboots the machine',
    matches: (site) => someView(site, shutsDown),
  },
  {
    name: 'ssh-authorized-keys',
    reason: 'writes an SSH authorized_keys file, which grants login access',
    matches: (site) => writesTo(site, isAuthorizedKeys),
  },
  {
    name: 'rm-system-paths',
    reason: 'recursively removes a system directory, a home directory, or a direct child of one (or would, if a variable in the path were empty)',
    matches: (site) =>
      removesRecursively(site, (target) => {
        if (isSystemTarget(target, site.cwdIsRoot)) return true;
        const emptied = ifVariablesWereEmpty(target);
        return emptied !== undefined && (isSystemTarget(emptied, site.cwdIsRoot) || isRootTarget(emptied, site.cwdIsRoot));
      }),
  },
  {
    name: 'sudo',
    reason: 'runs a command with elevated privileges',
    matches: (site) => someView(site, (program) => PRIVILEGE_ESCALATION.has(program)),
  },
];

const MKFS = /^(?:mkfs(?:\..+)?|mke2fs|mkdosfs|mkntfs|mkexfatfs|newfs(?:_.+)?)$/;
const PRIVILEGE_ESCALATION = new Set(['sudo', 'sudoedit', 'doas', 'su', 'pkexec', 'run0']);
const POWER_COMMANDS = new Set(['shutdown', 'reboot', 'halt', 'poweroff']);
const POWER_VERBS = new Set(['poweroff', 'reboot', 'halt', 'kexec', 'soft-reboot']);
const POWER_TARGET = /^(?:poweroff|reboot|halt|kexec)\.target$/;
/** Redirections that open their target for writing (`>&2` only duplicates a descriptor). */
const WRITING_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&']);
/** Programs whose last operand is the file they write. */
const COPIERS = new Set(['cp', 'mv', 'install', 'ln', 'rsync', 'scp']);

type ViewTest = (program: string, args: readonly string[], argv: readonly string[]) => boolean;

function someView(site: CommandSite, test: ViewTest): boolean {
  return site.views.some((view) => test(view.program, view.args, view.argv));
}

function removesRecursively(site: CommandSite, target: (path: string) => boolean): boolean {
  return someView(site, (program, args) => {
    if (program !== 'rm') return false;
    const { recursive, targets } = rmArguments(args);
    return recursive && targets.some(target);
  });
}

/** Through a redirection, `tee`, `dd of=`, `cp`/`mv`/`install`/`ln` or `sed -i`. */
function writesTo(site: CommandSite, path: (target: string) => boolean): boolean {
  if (site.redirects.some((r) => WRITING_REDIRECTS.has(r.op) && !/^(?:\d+|-)$/.test(r.target.text) && path(r.target.text))) return true;
  return someView(site, (program, args) => {
    if (program === 'tee') return operands(args).some(path);
    if (program === 'dd') return args.some((arg) => arg.startsWith('of=') && path(arg.slice(3)));
    if (COPIERS.has(program)) {
      const last = operands(args).at(-1);
      return last !== undefined && operands(args).length >= 2 && path(last);
    }
    if (program === 'sed') return args.some((arg) => /^-[^-]*i|^--in-place/.test(arg)) && operands(args).some(path);
    return false;
  });
}

function isDownload(site: CommandSite): boolean {
  return site.views.some((view) => DOWNLOADERS.has(view.program));
}

function shutsDown(program: string, args: readonly string[]): boolean {
  if (POWER_COMMANDS.has(program)) return true;
  const [verb, ...rest] = operands(args);
  if (program === 'init' || program === 'telinit') return verb === '0' || verb === '6';
  if (program !== 'systemctl' && program !== 'loginctl') return false;
  if (verb !== undefined && POWER_VERBS.has(verb)) return true;
  return (verb === 'start' || verb === 'isolate') && rest.some((unit) => POWER_TARGET.test(unit));
}
