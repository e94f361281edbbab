/*
 * Git commands that destroy history others rely on (force pushes, hard resets, cleaning
 * untracked files) and configuration that makes git run a command of its choosing (hooks,
 * `core.editor`, `core.pager`, `core.sshCommand`, shell aliases).
 */
import type { CommandSite } from './command-sites.js';
import { someView, writesTo } from './site-views.js';
import { operands } from './targets.js';
import { regexUnion } from './regex-union.js';

/** Git's global options that take a value, so the subcommand is found after them. */
const GLOBAL_WITH_VALUE = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--exec-path',
  '--config-env',
  '--super-prefix',
]);

interface GitCall {
  readonly configs: readonly string[];
  readonly subcommand: string | undefined;
  readonly rest: readonly string[];
}

function gitCall(args: readonly string[]): GitCall {
  const configs: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '-c' || arg === '--config-env') configs.push(args[++i] ?? '');
    else if (/^-c./.test(arg)) configs.push(arg.slice(2));
    else if (arg.startsWith('--config-env=')) configs.push(arg.slice(13));
    else if (GLOBAL_WITH_VALUE.has(arg)) i++;
    else if (!arg.startsWith('-')) break;
  }
  return { configs, subcommand: args[i], rest: args.slice(i + 1) };
}

export function rewritesGitHistory(site: CommandSite): boolean {
  return someView(site, (program, args) => {
    if (program !== 'git') return false;
    const { subcommand, rest } = gitCall(args);
    switch (subcommand) {
      case 'push':
        // `--force`, `-f`, `--delete`, `-d`, or a refspec that forces (`+main`) or deletes (`:main`).
        return rest.some(
          (arg) =>
            /^--(?:force|force-with-lease|force-if-includes|mirror|delete|prune)(?:=|$)/.test(arg) ||
            /^-[a-zA-Z]*[fd]/.test(arg) ||
            /^[+:]./.test(arg),
        );
      case 'reset':
        return rest.includes('--hard') || rest.includes('--merge') || rest.includes('--keep');
      case 'clean':
        return (
          rest.some((arg) => /^-[a-zA-Z]*f/.test(arg) || arg === '--force') &&
          !rest.some((arg) => /^-[a-zA-Z]*n/.test(arg) || arg === '--dry-run')
        );
      case 'checkout':
      case 'restore':
        // Discards uncommitted work: `checkout -- .`, `checkout .`, `checkout -f`, `restore .`.
        return (
          rest.some((arg) => arg === '-f' || arg === '--force') ||
          (!rest.includes('--staged') && operands(rest).includes('.'))
        );
      case 'branch':
        return rest.some((arg) => /^-[a-zA-Z]*D/.test(arg)) || (rest.includes('--delete') && rest.includes('--force'));
      case 'stash':
        return rest[0] === 'drop' || rest[0] === 'clear';
      case 'filter-branch':
      case 'filter-repo':
        return true;
      case 'reflog':
        return rest[0] === 'expire' || rest[0] === 'delete';
      case 'update-ref':
        return rest.includes('-d');
      case 'gc':
        return rest.some((arg) => arg.startsWith('--prune=now'));
      default:
        return false;
    }
  });
}

/** Settings whose value is a command git runs. */
const COMMAND_SETTINGS = regexUnion(
  [
    /core\.(?:editor|pager|sshcommand|hookspath|fsmonitor|askpass|gitproxy)|sequence\.editor|diff\.external/,
    /diff\.[^.]+\.(?:command|textconv)|merge\.[^.]+\.driver|filter\.[^.]+\.(?:clean|smudge|process)/,
    /credential\.helper|gpg\.program|gpg\.[^.]+\.program|uploadpack\.packobjectshook|pager\.[^.]+/,
  ],
  { before: /^/, after: /$/, flags: 'i' },
);

/** Pagers and editors that only show or edit text: `-c core.pager=cat` turns the pager off. */
const PLAIN_VIEWERS = /^\s*(?:cat|less|more|less -[A-Za-z]+|vi|vim|nano|true|)\s*$/;

function runsCommand(setting: string, value: string | undefined): boolean {
  if (/^alias\./i.test(setting)) return (value ?? '').trimStart().startsWith('!');
  return COMMAND_SETTINGS.test(setting) && (value === undefined || !PLAIN_VIEWERS.test(value));
}

/** Git told to run a command: `-c core.pager=…`, `git config core.editor …`, a shell alias, a hook written. */
export function makesGitRunCommand(site: CommandSite): boolean {
  if (writesTo(site, (path) => /(?:^|\/)\.git\/hooks\//.test(path))) return true;
  return someView(site, (program, args) => {
    if (program !== 'git') return false;
    const { configs, subcommand, rest } = gitCall(args);
    if (
      configs.some((setting) =>
        runsCommand(setting.replace(/=.*$/s, ''), setting.includes('=') ? setting.replace(/^[^=]*=/s, '') : undefined),
      )
    )
      return true;
    if (
      rest.some(
        (arg) => /^--(?:upload-pack|receive-pack|exec)(?:=|$)/.test(arg) || (arg === '-u' && subcommand === 'clone'),
      )
    )
      return true;
    if (subcommand !== 'config') return false;
    const values = operands(rest);
    const reading = rest.some(
      (arg) => /^--(?:get|get-all|get-regexp|get-urlmatch|list|unset|unset-all)$/.test(arg) || arg === '-l',
    );
    const key = values[0] ?? '';
    return !reading && values.length >= 2 && runsCommand(key, values[1]);
  });
}
