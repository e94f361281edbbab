/*
 * Where the code a command runs comes from: the network (a download piped or substituted into a
 * shell), a connection back to someone else (reverse shells), a text made at run time (decoded,
 * reversed, assembled), or another program that runs commands of its own (`awk` `system()`,
 * `sed`'s `e`, `find -exec sh -c`, an interpreter's `os.system`).
 */
import type { CommandSite } from './command-sites.js';
import { DOWNLOADERS, isScriptInterpreter, NETWORK_SENDERS, readsProgramFromStdin, runsCode } from './programs.js';
import { hasOption, optionValue, sedScripts, someView } from './site-views.js';
import { operands } from './targets.js';
import { SHELLS } from './wrappers.js';
import { regexUnion } from './regex-union.js';

export function runsDownloadedCode(site: CommandSite): boolean {
  return someView(
    site,
    (program, _args, argv) =>
      (readsProgramFromStdin(argv) && (site.upstream().some(isDownload) || readsNetworkInput(site))) ||
      (runsCode(program) && site.substituted.some(isDownload)),
  );
}

function isDownload(site: CommandSite): boolean {
  return site.views.some(
    (view) => DOWNLOADERS.has(view.program) || (view.program === 'openssl' && view.args[0] === 's_client'),
  );
}

/** `sh < /dev/tcp/host/port`. */
function readsNetworkInput(site: CommandSite): boolean {
  return site.redirects.some(
    (r) => r.op.startsWith('<') && r.target !== undefined && /^\/dev\/(?:tcp|udp)\//.test(r.target),
  );
}

/** Code the policy cannot read: a program name, `sh -c`/`eval` text or a shell's stdin made at run time. */
export function runsUnreadableCode(site: CommandSite): boolean {
  return site.unreadableCode;
}

const SOCKET_CODE = /socket|TCPSocket|fsockopen|IO::Socket|Net::|net\.connect|createConnection|\/dev\/tcp/i;
const SPAWN_CODE =
  /\bexec\b|dup2|spawn|subprocess|\bpty\b|popen|system|\/bin\/(?:ba)?sh|child_process|proc_open|shell_exec|passthru/i;

/** A shell's input and output joined to the network: `/dev/tcp`, `nc -e`, `socat exec:`, a shell piped into `nc`. */
export function opensReverseShell(site: CommandSite): boolean {
  if (site.redirects.some((r) => r.target !== undefined && /^\/dev\/(?:tcp|udp)\//.test(r.target))) return true;
  return (
    someView(site, (program, args) => {
      if (program === 'nc' || program === 'ncat' || program === 'netcat') {
        if (hasOption(args, 'e', 'exec') || hasOption(args, 'c', 'sh-exec') || hasOption(args, undefined, 'lua-exec'))
          return true;
      }
      if (program === 'socat' && args.some((arg) => /^(?:exec|system):/i.test(arg))) return true;
      // zsh's ztcp opens a socket as one of the shell's descriptors, as /dev/tcp does.
      if (program === 'ztcp') return args.some((arg) => !arg.startsWith('-'));
      if (
        NETWORK_SENDERS.has(program) &&
        site
          .upstream()
          .some((fed) => fed.views.some((view) => SHELLS.has(view.program) || isScriptInterpreter(view.program)))
      )
        return true;
      return false;
    }) || site.code.some((code) => SOCKET_CODE.test(code) && SPAWN_CODE.test(code))
  );
}

const AWK = new Set(['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk']);
const INTERPRETER_RUNS_COMMAND = regexUnion([
  /os\.system|os\.exec|os\.popen|subprocess|child_process|\bexecSync\b|\bspawnSync\b|(?<![.\w])(?:system|exec)\s*\(/,
  /`[^`]+`|%x\{|IO\.popen|Open3|shell_exec|passthru|proc_open|Runtime\.getRuntime|do shell script|Process\.start/,
]);
const SHELL_OR_INTERPRETER = (name: string): boolean => SHELLS.has(name) || isScriptInterpreter(name);

/** Commands carried inside another program, which runs them where the policy cannot follow. */
export function embedsCommand(site: CommandSite): boolean {
  if (site.carried.some((command) => command.escapes)) return true;
  if (site.code.some((code) => INTERPRETER_RUNS_COMMAND.test(code))) return true;
  return someView(site, (program, args) => {
    if (AWK.has(program)) return awkRunsCommands(args);
    if (program === 'sed' || program === 'gsed') return sedScripts(args).some(sedRunsCommands);
    if (program === 'find')
      return findExecs(args).some((command) => SHELL_OR_INTERPRETER(command[0]?.replace(/^.*\//, '') ?? ''));
    if (program === 'xargs' || program === 'parallel') {
      const command = operands(args).map((arg) => arg.replace(/^.*\//, ''));
      return (
        command.length > 0 && SHELL_OR_INTERPRETER(command[0] ?? '') && args.some((arg) => /^-[a-zA-Z]*c$/.test(arg))
      );
    }
    return carriesCommandOption(program, args);
  });
}

function awkRunsCommands(args: readonly string[]): boolean {
  const text =
    optionValue(args, undefined, 'source') ??
    operands(args.filter((arg, i) => !/^-[fvF]$/.test(args[i - 1] ?? '')))[0] ??
    '';
  return /\bsystem\s*\(|\|\s*getline|\|&|print[^;}]*\|\s*"/.test(text);
}

/** GNU sed's `e` command and the `e` flag of `s///e` run shell commands. */
function sedRunsCommands(script: string): boolean {
  if (/(?:^|[;\n{}])\s*(?:\d+|\$|\/[^/]*\/)?\s*e(?:\s|;|$)/.test(script)) return true;
  for (const match of script.matchAll(/s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([a-zA-Z0-9]*)/g)) {
    if ((match[2] ?? '').includes('e')) return true;
  }
  return false;
}

function findExecs(args: readonly string[]): string[][] {
  const commands: string[][] = [];
  for (let i = 0; i < args.length; i++) {
    if (!/^-(?:exec|execdir|ok|okdir)$/.test(args[i] ?? '')) continue;
    const end = args.findIndex((arg, j) => j > i && (arg === ';' || arg === '+'));
    commands.push(args.slice(i + 1, end < 0 ? args.length : end));
  }
  return commands;
}

/** Options of other programs whose value is a command they run (GTFOBins' "shell" entries). */
function carriesCommandOption(program: string, args: readonly string[]): boolean {
  switch (program) {
    case 'tar':
    case 'gtar':
    case 'bsdtar':
      return args.some(
        (arg) =>
          /^--(?:checkpoint-action=exec|to-command|use-compress-program|rsh-command|info-script|new-volume-script)/.test(
            arg,
          ) ||
          arg === '-I' ||
          arg === '-F',
      );
    case 'zip':
      return hasOption(args, 'T', undefined) && (hasOption(args, undefined, 'unzip-command') || args.includes('-TT'));
    case 'rsync':
      return hasOption(args, 'e', 'rsh') || args.some((arg) => arg.startsWith('--rsync-path'));
    case 'ssh':
    case 'scp':
    case 'sftp':
      return args.some(
        (arg, i) =>
          (/^(?:ProxyCommand|LocalCommand|PermitLocalCommand|KnownHostsCommand)=/i.test(arg) &&
            (args[i - 1] === '-o' || arg.startsWith('-o'))) ||
          /^-o(?:ProxyCommand|LocalCommand|KnownHostsCommand)/i.test(arg),
      );
    case 'vim':
    case 'vi':
    case 'nvim':
    case 'ex':
    case 'view':
      return args.some(
        (arg, i) =>
          (args[i - 1] === '-c' || args[i - 1] === '--cmd' || arg.startsWith('+')) &&
          /!|system\(|:py|:lua|:perl|:ruby/.test(arg),
      );
    case 'gdb':
      return args.some(
        (arg, i) =>
          (args[i - 1] === '-ex' || args[i - 1] === '--eval-command') && /^\s*(?:!|shell|python|pipe)/.test(arg),
      );
    case 'less':
    case 'more':
    case 'man':
      return args.some((arg) => /^\+!|^-P/.test(arg)) || hasOption(args, undefined, 'pager');
    default:
      return false;
  }
}
