/*
 * Changes to the machine itself rather than to the workspace: who may log in and as whom
 * (credential, sudoers and scheduler files, accounts), permissions of system paths and setuid
 * bits, signals to every process, power state, privilege escalation.
 */
import type { CommandSite } from './command-sites.js';
import { optionValue, someView, writesTo } from './site-views.js';
import { isAuthorizedKeys, isSystemFile, isUnderSystemPath, operands, resolvePath } from './targets.js';

export function writesAuthorizedKeys(site: CommandSite): boolean {
  return writesTo(site, isAuthorizedKeys);
}

const ACCOUNT_TOOLS = new Set([
  'passwd',
  'chpasswd',
  'useradd',
  'usermod',
  'userdel',
  'adduser',
  'deluser',
  'groupadd',
  'groupmod',
  'gpasswd',
  'visudo',
  'vipw',
  'vigr',
  'pwconv',
  'chage',
  'dscl',
  'sysadminctl',
]);

/** Writes to credential, sudoers, scheduler, boot or kernel files, or account and crontab tools that change them. */
export function writesSystemFiles(site: CommandSite): boolean {
  if (writesTo(site, (path) => isSystemFile(path, site.cwdIsRoot))) return true;
  return someView(site, (program, args) => {
    if (ACCOUNT_TOOLS.has(program))
      return !(program === 'passwd' && args.some((arg) => arg === '-S' || arg === '--status'));
    if (program === 'crontab') return !args.some((arg) => /^-[a-zA-Z]*l/.test(arg)) || args.includes('-r');
    if (program === 'at' || program === 'batch') return true;
    if (program === 'launchctl') return ['load', 'bootstrap', 'submit', 'enable'].includes(args[0] ?? '');
    if (program === 'systemctl')
      return ['enable', 'link', 'edit', 'set-default', 'mask'].includes(operands(args)[0] ?? '');
    if (program === 'sysctl') return args.some((arg) => arg === '-w' || /^[a-z0-9_.]+=/.test(arg));
    return false;
  });
}

const PERMISSION_TOOLS = new Set(['chmod', 'chown', 'chgrp', 'chattr', 'setfacl', 'chflags']);
/** A mode that sets the setuid or setgid bit: `4755`, `u+s`, `g+s`, `+s`. */
const SETUID_MODE = /^(?:0?[2-7][0-7]{3}|[ugoa]*[+=][rwxXt]*s[rwxXt]*(?:,.*)?|.*,[ugoa]*[+=][rwxXt]*s.*)$/;

/** Programs that create a file with a mode given as an option: `install -m 4755`, `mkdir -m u+s`. */
const MODE_SETTERS = new Set(['install', 'mkdir', 'mknod', 'mkfifo']);
/** Programs installed setuid root: a copy that keeps its mode keeps the bit. */
const SETUID_PROGRAMS = new Set([
  'sudo',
  'sudoedit',
  'su',
  'passwd',
  'pkexec',
  'mount',
  'umount',
  'chsh',
  'chfn',
  'newgrp',
  'gpasswd',
  'doas',
  'fusermount',
  'fusermount3',
  'newuidmap',
  'newgidmap',
  'unix_chkpwd',
  'ping',
  'chage',
  'expiry',
  'pppd',
]);

/**
 * `chmod 777 /etc/…`, `chown -R me /usr`, a setuid bit set anywhere (`chmod u+s`, `install -m 4755`),
 * file capabilities (`setcap cap_setuid+ep`), or a setuid program copied with its mode. The user's
 * own files under the home directory are theirs to tighten (`chmod 600 ~/.ssh/id_ed25519`); only
 * the home directory itself, or a mode that lets others write, is flagged there.
 */
export function changesSystemPermissions(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (MODE_SETTERS.has(program)) return SETUID_MODE.test(optionValue(args, 'm', 'mode') ?? '');
    if (program === 'setcap') return !args.some((arg) => arg === '-r' || arg === '-v') && operands(args).length >= 2;
    if (program === 'cp' || program === 'rsync' || program === 'install') return copiesSetuidProgram(args);
    if (!PERMISSION_TOOLS.has(program)) return false;
    const targets = operands(args);
    const mode = targets[0] ?? '';
    if (program === 'chmod' && targets.some((target) => SETUID_MODE.test(target))) return true;
    return targets.slice(1).some((target) => {
      if (!isUnderSystemPath(target, site.cwdIsRoot)) return false;
      const path = resolvePath(target, site.cwdIsRoot);
      return path.anchor !== 'home' || path.parts.length === 0 || (program === 'chmod' && letsOthersWrite(mode));
    });
  });
}

/** `777`, `0666`, `o+w`, `a+rwx`, `+w`: group or others may write. */
function letsOthersWrite(mode: string): boolean {
  if (/^[0-7]{3,4}$/.test(mode))
    return mode
      .slice(-2)
      .split('')
      .some((digit) => (Number(digit) & 2) !== 0);
  return mode
    .split(',')
    .some(
      (clause) =>
        /^[ugoa]*[+=]/.test(clause) && /^(?:[ugo]*[go][ugo]*|a|)[+=][^,]*w/.test(clause.replace(/^u+(?=[go])/, '')),
    );
}

/** `cp -p /usr/bin/sudo x`, `cp --preserve=mode …`, `rsync -a …`: a setuid program copied with its mode. */
function copiesSetuidProgram(args: readonly string[]): boolean {
  const keepsMode = args.some(
    (arg) => /^-[A-Za-z]*[pa]/.test(arg) || /^--(?:archive|perms|preserve(?:=.*(?:mode|all).*)?)$/.test(arg),
  );
  const sources = operands(args).slice(0, -1);
  return (
    keepsMode &&
    sources.some(
      (source) =>
        /^\/(?:usr\/)?(?:local\/)?s?bin\//.test(source) &&
        SETUID_PROGRAMS.has(source.slice(source.lastIndexOf('/') + 1)),
    )
  );
}

/** `kill -9 -1`, `kill -1`, `kill 1`, `killall5`: every process, or init. */
export function signalsEveryProcess(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (program === 'killall5') return true;
    if (program !== 'kill') return false;
    if (args.length === 1 && args[0] === '-1') return true;
    const pids = killTargets(args);
    return pids.includes('-1') || pids.includes('1');
  });
}

function killTargets(args: readonly string[]): string[] {
  const pids: string[] = [];
  let signalGiven = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      pids.push(...args.slice(i + 1));
      break;
    }
    if (arg === '-s' || arg === '-n' || arg === '--signal') {
      i++;
      signalGiven = true;
    } else if (arg === '-l' || arg === '-L') return [];
    else if (!signalGiven && pids.length === 0 && /^-(?:[A-Za-z][A-Za-z0-9+-]*|\d+)$/.test(arg) && i === 0)
      signalGiven = true;
    else pids.push(arg);
  }
  return pids;
}

const POWER_COMMANDS = new Set(['shutdown', 'reboot', 'halt', 'poweroff']);
const POWER_VERBS = new Set(['poweroff', 'reboot', 'halt', 'kexec', 'soft-reboot']);
const POWER_TARGET = /^(?:poweroff|reboot|halt|kexec)\.target$/;

export function shutsDown(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (POWER_COMMANDS.has(program)) return true;
    const [verb, ...rest] = operands(args);
    if (program === 'init' || program === 'telinit') return verb === '0' || verb === '6';
    if (program !== 'systemctl' && program !== 'loginctl') return false;
    if (verb !== undefined && POWER_VERBS.has(verb)) return true;
    return (verb === 'start' || verb === 'isolate') && rest.some((unit) => POWER_TARGET.test(unit));
  });
}

const PRIVILEGE_ESCALATION = new Set(['sudo', 'sudoedit', 'doas', 'su', 'pkexec', 'run0', 'runuser', 'machinectl']);

export function escalatesPrivileges(site: CommandSite): boolean {
  return someView(site, (program) => PRIVILEGE_ESCALATION.has(program));
}
