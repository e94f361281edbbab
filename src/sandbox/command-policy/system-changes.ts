/*
 * Changes to the machine itself rather than to the workspace: who may log in and as whom
 * (credential, sudoers and scheduler files, accounts), permissions of system paths and setuid
 * bits, signals to every process, power state, privilege escalation.
 */
import type { CommandSite } from './command-sites.js';
import { someView, writesTo } from './site-views.js';
import { isAuthorizedKeys, isSystemFile, isUnderSystemPath, operands } from './targets.js';

export function writesAuthorizedKeys(site: CommandSite): boolean {
  return writesTo(site, isAuthorizedKeys);
}

const ACCOUNT_TOOLS = new Set(['passwd', 'chpasswd', 'useradd', 'usermod', 'userdel', 'adduser', 'deluser', 'groupadd', 'groupmod', 'gpasswd', 'visudo', 'vipw', 'vigr', 'pwconv', 'chage', 'dscl', 'sysadminctl']);

/** Writes to credential, sudoers, scheduler, boot or kernel files, or account and crontab tools that change them. */
export function writesSystemFiles(site: CommandSite): boolean {
  if (writesTo(site, (path) => isSystemFile(path, site.cwdIsRoot))) return true;
  return someView(site, (program, args) => {
    if (ACCOUNT_TOOLS.has(program)) return !(program === 'passwd' && args.some((arg) => arg === '-S' || arg === '--status'));
    if (program === 'crontab') return !args.some((arg) => /^-[a-zA-Z]*l/.test(arg)) || args.includes('-r');
    if (program === 'at' || program === 'batch') return true;
    if (program === 'launchctl') return ['load', 'bootstrap', 'submit', 'enable'].includes(args[0] ?? '');
    if (program === 'systemctl') return ['enable', 'link', 'edit', 'set-default', 'mask'].includes(operands(args)[0] ?? '');
    if (program === 'sysctl') return args.some((arg) => arg === '-w' || /^[a-z0-9_.]+=/.test(arg));
    return false;
  });
}

const PERMISSION_TOOLS = new Set(['chmod', 'chown', 'chgrp', 'chattr', 'setfacl', 'chflags']);
/** A mode that sets the setuid or setgid bit: `4755`, `u+s`, `g+s`, `+s`. */
const SETUID_MODE = /^(?:0?[2-7][0-7]{3}|[ugoa]*[+=][rwxXt]*s[rwxXt]*(?:,.*)?|.*,[ugoa]*[+=][rwxXt]*s.*)$/;

/** `chmod 777 /etc/…`, `chown -R me /usr`, or a setuid bit anywhere. */
export function changesSystemPermissions(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (!PERMISSION_TOOLS.has(program)) return false;
    const targets = operands(args);
    if (program === 'chmod' && targets.some((mode) => SETUID_MODE.test(mode))) return true;
    return targets.slice(1).some((target) => isUnderSystemPath(target, site.cwdIsRoot));
  });
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
    else if (!signalGiven && pids.length === 0 && /^-(?:[A-Za-z][A-Za-z0-9+-]*|\d+)$/.test(arg) && i === 0) signalGiven = true;
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
