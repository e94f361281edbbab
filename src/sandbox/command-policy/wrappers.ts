/*
 * Commands that run another command: `sudo -u root rm …`, `env X=1 nice -n 5 rm …`, and
 * those that hand shell text to a shell (`bash -c '…'`, `eval …`, `su -c …`, `ssh host …`).
 * The policy judges the command inside as well as the wrapper, so peeling is data: for each
 * wrapper, which options take a value and how many operands come before the command.
 */

/** How a wrapper's own arguments are laid out before the command it runs. */
interface WrapperSpec {
  /** Short options that take a value (`-u root`, `-uroot`). */
  readonly shortWithValue?: string;
  /** Long options that take a value when written without `=` (`--user root`). */
  readonly longWithValue?: readonly string[];
  /** Operands between the options and the command (`timeout 5 cmd`: 1). */
  readonly operands?: number;
  /** `NAME=value` words may sit between the options and the command. */
  readonly assignments?: boolean;
  /** Options (short or long) that mean the rest is not run: `command -v rm` only looks `rm` up. */
  readonly notRunning?: readonly string[];
  /** Options (short or long) that make the wrapper run the rest through a shell: `sudo -s 'rm -rf /'`. */
  readonly viaShell?: readonly string[];
  /** `env -S 'text'` / `--split-string=text`: the value is split into words like shell text. */
  readonly splitString?: boolean;
  /** Options (short or long) whose value is shell text the wrapper runs: `flock f -c 'text'`. */
  readonly viaShellOption?: readonly string[];
}

const PREFIX_WRAPPERS: ReadonlyMap<string, WrapperSpec> = new Map<string, WrapperSpec>([
  [
    'sudo',
    {
      shortWithValue: 'CDghpRrTtUu',
      longWithValue: [
        'chdir',
        'chroot',
        'close-from',
        'command-timeout',
        'group',
        'host',
        'other-user',
        'prompt',
        'role',
        'type',
        'user',
      ],
      assignments: true,
      notRunning: ['e', 'l', 'v', 'V', 'edit', 'list', 'validate', 'version'],
      viaShell: ['i', 's', 'login', 'shell'],
    },
  ],
  ['doas', { shortWithValue: 'Cu', viaShell: ['s'] }],
  ['pkexec', { longWithValue: ['user'] }],
  [
    'run0',
    {
      shortWithValue: 'uDg',
      longWithValue: ['user', 'group', 'chdir', 'setenv', 'unit', 'property', 'description', 'slice', 'nice'],
    },
  ],
  [
    'env',
    {
      shortWithValue: 'uCP',
      longWithValue: ['unset', 'chdir', 'default-signal', 'ignore-signal', 'block-signal'],
      assignments: true,
      splitString: true,
    },
  ],
  ['nice', { shortWithValue: 'n', longWithValue: ['adjustment'] }],
  [
    'ionice',
    {
      shortWithValue: 'cnpPu',
      longWithValue: ['class', 'classdata', 'pid', 'pgid', 'uid'],
      notRunning: ['p', 'P', 'u', 'pid', 'pgid', 'uid'],
    },
  ],
  [
    'chrt',
    {
      shortWithValue: 'T',
      longWithValue: ['sched-runtime', 'sched-period', 'sched-deadline'],
      operands: 1,
      notRunning: ['p', 'pid', 'm', 'max'],
    },
  ],
  ['nohup', {}],
  ['setsid', {}],
  ['time', { shortWithValue: 'fo', longWithValue: ['format', 'output'] }],
  ['command', { notRunning: ['v', 'V'] }],
  ['exec', { shortWithValue: 'a' }],
  ['builtin', {}],
  ['busybox', {}],
  ['toybox', {}],
  [
    'xargs',
    {
      shortWithValue: 'aEdILnPs',
      longWithValue: [
        'arg-file',
        'delimiter',
        'eof',
        'max-lines',
        'max-args',
        'max-procs',
        'max-chars',
        'process-slot-var',
      ],
    },
  ],
  ['timeout', { shortWithValue: 'ks', longWithValue: ['kill-after', 'signal'], operands: 1 }],
  ['chroot', { longWithValue: ['userspec', 'groups'], operands: 1 }],
  ['stdbuf', { shortWithValue: 'ioe', longWithValue: ['input', 'output', 'error'] }],
  ['taskset', { operands: 1, notRunning: ['p', 'pid'] }],
  [
    'numactl',
    {
      shortWithValue: 'CmNipP',
      longWithValue: [
        'physcpubind',
        'membind',
        'cpunodebind',
        'interleave',
        'preferred',
        'preferred-many',
        'weighted-interleave',
      ],
    },
  ],
  ['setarch', { shortWithValue: 'B', operands: 1 }],
  // macOS `arch -x86_64 cmd`: the architecture options take no value.
  ['arch', {}],
  ['sandbox-exec', { shortWithValue: 'fpnD' }],
  ['unbuffer', {}],
  ['caffeinate', { shortWithValue: 'tw' }],
  ['chronic', {}],
  ['ifne', {}],
  ['torsocks', {}],
  ['proxychains', { shortWithValue: 'f' }],
  ['proxychains4', { shortWithValue: 'f' }],
  ['fakeroot', { shortWithValue: 'is', longWithValue: ['lib', 'faked'] }],
  ['faketime', { shortWithValue: 'm', operands: 1 }],
  ['prlimit', { shortWithValue: 'p', longWithValue: ['pid', 'output'] }],
  [
    'unshare',
    {
      shortWithValue: 'SGR',
      longWithValue: [
        'setuid',
        'setgid',
        'root',
        'wd',
        'propagation',
        'setgroups',
        'map-user',
        'map-group',
        'kill-child',
      ],
    },
  ],
  ['nsenter', { shortWithValue: 'tSGrw', longWithValue: ['target', 'setuid', 'setgid', 'root', 'wd'] }],
  ['firejail', {}],
  [
    'systemd-run',
    {
      shortWithValue: 'pMuEHd',
      longWithValue: [
        'unit',
        'property',
        'description',
        'slice',
        'uid',
        'gid',
        'nice',
        'working-directory',
        'setenv',
        'machine',
        'host',
        'on-active',
        'on-calendar',
      ],
    },
  ],
  [
    'strace',
    {
      shortWithValue: 'abeEIoOpPsSuUX',
      longWithValue: ['output', 'trace', 'signal', 'attach', 'user', 'env', 'string-limit'],
    },
  ],
  ['ltrace', { shortWithValue: 'aAeEFlnopsSuwxX', longWithValue: ['output', 'library'] }],
  ['valgrind', {}],
  [
    'xcrun',
    { longWithValue: ['sdk', 'toolchain'], notRunning: ['find', 'show-sdk-path', 'show-sdk-version', 'version'] },
  ],
  ['sg', { operands: 1, viaShellOption: ['c'] }],
]);

/** Programs peelWrapper reads a command or shell text out of. */
export function isWrapper(program: string): boolean {
  return PREFIX_WRAPPERS.has(program) || SHELLS.has(program) || PEELED_BY_SHAPE.has(program);
}

const PEELED_BY_SHAPE = new Set([
  'eval',
  'alias',
  'trap',
  'su',
  'runuser',
  'script',
  'flock',
  'gdb',
  'watch',
  'ssh',
  'find',
  'start-stop-daemon',
  'git',
]);

/** Every program peelWrapper knows by name. */
export const WRAPPER_NAMES: readonly string[] = [...PREFIX_WRAPPERS.keys(), ...PEELED_BY_SHAPE];

/** Programs whose `-c` operand is shell text. */
export const SHELLS: ReadonlySet<string> = new Set([
  'sh',
  'bash',
  'zsh',
  'dash',
  'ksh',
  'mksh',
  'ash',
  'yash',
  'fish',
  'csh',
  'tcsh',
  'rbash',
]);

/** What one wrapper layer runs: a command (argv), shell text, or both. */
export interface WrapperLayer {
  readonly command?: readonly string[];
  readonly shellText?: string;
}

/** The last path component: `/usr/bin/rm` → `rm`. */
export function programName(word: string | undefined): string {
  if (word === undefined) return '';
  return word.slice(word.lastIndexOf('/') + 1);
}

function isAssignment(word: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/.test(word);
}

const RESERVED_PREFIXES = new Set(['!', 'if', 'then', 'elif', 'else', 'do', 'while', 'until', '{']);

/** Drops what precedes the program itself: `FOO=1`, `!`, `then`, `do`… */
export function stripPrelude(argv: readonly string[]): readonly string[] {
  let i = 0;
  while (i < argv.length && (isAssignment(argv[i] ?? '') || RESERVED_PREFIXES.has(argv[i] ?? ''))) i++;
  return i === 0 ? argv : argv.slice(i);
}

/** One layer of wrapping peeled off `argv`, or undefined when `argv` is not a wrapper. */
export function peelWrapper(argv: readonly string[]): WrapperLayer | undefined {
  const name = programName(argv[0]);
  const spec = PREFIX_WRAPPERS.get(name);
  if (spec) return peelPrefix(argv, spec);
  if (SHELLS.has(name)) return shellCommandText(argv);
  switch (name) {
    case 'eval':
      return argv.length > 1 ? commandAndShellText(argv.slice(1)) : undefined;
    case 'alias':
      return aliasDefinitions(argv);
    case 'trap':
      return argv[1] !== undefined && !argv[1].startsWith('-') ? { shellText: argv[1] } : undefined;
    case 'su':
      return suCommand(argv);
    case 'runuser':
      return suCommand(argv) ?? runuserCommand(argv);
    case 'script':
      return scriptCommand(argv);
    case 'flock':
      return flockCommand(argv);
    case 'gdb':
      return gdbArgs(argv);
    case 'watch':
      return watchCommand(argv);
    case 'ssh':
      return sshCommand(argv);
    case 'find':
      return findExec(argv);
    case 'start-stop-daemon':
      return startStopDaemonCommand(argv);
    case 'git':
      return gitRunsCommand(argv);
    default:
      return undefined;
  }
}

interface ScannedOptions {
  readonly flags: ReadonlySet<string>;
  /** The values of options that took one. */
  readonly values: ReadonlyMap<string, string>;
  /** Index of the first word after the options. */
  readonly next: number;
  /** `env -S 'text'`: the split string, when present. */
  readonly splitString?: string;
}

function scanOptions(argv: readonly string[], spec: WrapperSpec): ScannedOptions {
  const flags = new Set<string>();
  const values = new Map<string, string>();
  let splitString: string | undefined;
  let i = 1;
  while (i < argv.length) {
    const word = argv[i] ?? '';
    if (word === '--') {
      i++;
      break;
    }
    if (spec.assignments && isAssignment(word)) {
      i++;
      continue;
    }
    if (word.startsWith('--') && word.length > 2) {
      const eq = word.indexOf('=');
      const long = word.slice(2, eq < 0 ? undefined : eq);
      const value = eq < 0 ? undefined : word.slice(eq + 1);
      flags.add(long);
      const split = spec.splitString === true && long === 'split-string';
      if (split) splitString = value ?? argv[i + 1];
      const takesNext = value === undefined && (split || spec.longWithValue?.includes(long));
      const given = takesNext ? argv[i + 1] : value;
      if (given !== undefined) values.set(long, given);
      i += takesNext ? 2 : 1;
      continue;
    }
    if (word.startsWith('-') && word.length > 1) {
      const shortWithValue = (spec.shortWithValue ?? '') + (spec.splitString ? 'S' : '');
      const { used, flag, attached } = scanShortCluster(word, shortWithValue, flags);
      if (flag === 'S' && spec.splitString) splitString = attached === '' ? argv[i + 1] : attached;
      const given = attached === '' ? argv[i + 1] : attached;
      if (flag !== undefined && given !== undefined) values.set(flag, given);
      i += used;
      continue;
    }
    break;
  }
  return { flags, values, next: i, splitString };
}

/**
 * Reads `-abc` / `-uroot`: how many words it used (2 when the value is the next word), and
 * the option that took a value, with the value when attached.
 */
function scanShortCluster(
  word: string,
  withValue: string,
  flags: Set<string>,
): { used: number; flag?: string; attached: string } {
  for (let j = 1; j < word.length; j++) {
    const flag = word.charAt(j);
    flags.add(flag);
    if (withValue.includes(flag)) {
      const attached = word.slice(j + 1);
      return { used: attached === '' ? 2 : 1, flag, attached };
    }
  }
  return { used: 1, attached: '' };
}

function peelPrefix(argv: readonly string[], spec: WrapperSpec): WrapperLayer | undefined {
  const { flags, values, next, splitString } = scanOptions(argv, spec);
  if (splitString !== undefined) {
    return { shellText: [splitString, ...argv.slice(next)].join(' ') };
  }
  const viaShell = spec.viaShellOption?.map((option) => values.get(option)).find((text) => text !== undefined);
  if (viaShell !== undefined) return { shellText: viaShell };
  if (spec.notRunning?.some((option) => flags.has(option))) return undefined;
  let start = next;
  while (spec.assignments && start < argv.length && isAssignment(argv[start] ?? '')) start++;
  const command = argv.slice(start + (spec.operands ?? 0));
  if (command.length === 0) return undefined;
  return spec.viaShell?.some((option) => flags.has(option)) ? commandAndShellText(command) : { command };
}

/** Shell syntax in a word: reading the words joined as shell text could find more than the words. */
const SHELL_SYNTAX = /[\s'"\\$`;&|<>(){}*?#~=!]/;

/**
 * `eval a b`, `sudo -s a b`: the words joined are shell text. When no word holds shell syntax,
 * that text reads back as the same words, so the command view alone says it all.
 */
function commandAndShellText(words: readonly string[]): WrapperLayer {
  return words.some((word) => SHELL_SYNTAX.test(word))
    ? { command: words, shellText: words.join(' ') }
    : { command: words };
}

/** `bash -c 'text'`, `sh -ec 'text'`, `bash -o pipefail -c 'text'`. */
function shellCommandText(argv: readonly string[]): WrapperLayer | undefined {
  let hasC = false;
  let i = 1;
  while (i < argv.length) {
    const word = argv[i] ?? '';
    if (word === '--' || word === '-') {
      i++;
      break;
    }
    if (word.startsWith('--')) {
      i += word === '--rcfile' || word === '--init-file' ? 2 : 1;
      continue;
    }
    if (!/^[-+]./.test(word)) break;
    if (word.startsWith('-') && word.includes('c')) hasC = true;
    i += /[oO]/.test(word) ? 2 : 1;
  }
  const text = argv[i];
  return hasC && text !== undefined ? { shellText: text } : undefined;
}

/** `su -c 'text' user`, `su --command=text`. */
function suCommand(argv: readonly string[]): WrapperLayer | undefined {
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i] ?? '';
    if (word === '-c' || word === '--command') {
      const text = argv[i + 1];
      return text === undefined ? undefined : { shellText: text };
    }
    if (word.startsWith('--command=')) return { shellText: word.slice('--command='.length) };
    if (/^-[^-]*c./.test(word)) return { shellText: word.slice(word.indexOf('c') + 1) };
  }
  return undefined;
}

/** `runuser -u user [--] cmd …`. */
function runuserCommand(argv: readonly string[]): WrapperLayer | undefined {
  const { next } = scanOptions(argv, {
    shortWithValue: 'ugGw',
    longWithValue: ['user', 'group', 'supp-group', 'whitelist-environment'],
  });
  const command = argv.slice(next);
  return command.length === 0 ? undefined : { command };
}

/**
 * util-linux `script -c 'text' [file]` runs shell text; BSD and macOS `script [-aq] file cmd …`
 * run the command after the file.
 */
function scriptCommand(argv: readonly string[]): WrapperLayer | undefined {
  const { values, next } = scanOptions(argv, {
    shortWithValue: 'cEIOBTtmF',
    longWithValue: ['command', 'echo', 'log-in', 'log-out', 'log-io', 'log-timing', 'logging-format', 'output-limit'],
  });
  const text = values.get('c') ?? values.get('command');
  if (text !== undefined) return { shellText: text };
  const command = argv.slice(next + 1);
  return command.length === 0 ? undefined : { command };
}

/** `flock [options] file cmd …` or `flock [options] file -c 'text'`: options may also follow the file. */
function flockCommand(argv: readonly string[]): WrapperLayer | undefined {
  const spec: WrapperSpec = { shortWithValue: 'wEc', longWithValue: ['timeout', 'conflict-exit-code', 'command'] };
  const before = scanOptions(argv, spec);
  const afterFile = scanOptions(['flock', ...argv.slice(before.next + 1)], spec);
  const text =
    before.values.get('c') ??
    before.values.get('command') ??
    afterFile.values.get('c') ??
    afterFile.values.get('command');
  if (text !== undefined) return { shellText: text };
  const command = argv.slice(before.next + afterFile.next);
  return command.length === 0 ? undefined : { command };
}

/** `gdb --args cmd …` runs `cmd` under the debugger. */
function gdbArgs(argv: readonly string[]): WrapperLayer | undefined {
  const at = argv.indexOf('--args');
  const command = at < 0 ? [] : argv.slice(at + 1);
  return command.length === 0 ? undefined : { command };
}

/** `alias ls='rm -rf /'`: the text runs whenever the alias is used. */
function aliasDefinitions(argv: readonly string[]): WrapperLayer | undefined {
  const texts = argv.slice(1).flatMap((arg) => {
    const eq = arg.indexOf('=');
    return eq > 0 ? [arg.slice(eq + 1)] : [];
  });
  return texts.length === 0 ? undefined : { shellText: texts.join('\n') };
}

/** `watch -n 5 'text'` runs its operands joined, through `sh -c`. */
function watchCommand(argv: readonly string[]): WrapperLayer | undefined {
  const { next } = scanOptions(argv, { shortWithValue: 'n', longWithValue: ['interval'] });
  const rest = argv.slice(next);
  return rest.length === 0 ? undefined : { shellText: rest.join(' ') };
}

/** `ssh host text…`: the remote shell runs the operands after the host, joined. */
function sshCommand(argv: readonly string[]): WrapperLayer | undefined {
  const { next } = scanOptions(argv, { shortWithValue: 'BbcDEeFIiJLlmOopQRSWw' });
  const rest = argv.slice(next + 1);
  return rest.length === 0 ? undefined : { shellText: rest.join(' ') };
}

/** `find … -exec cmd {} ;` runs `cmd`. */
function findExec(argv: readonly string[]): WrapperLayer | undefined {
  const at = argv.findIndex((w) => w === '-exec' || w === '-execdir' || w === '-ok' || w === '-okdir');
  if (at < 0) return undefined;
  const end = argv.findIndex((w, i) => i > at && (w === ';' || w === '+'));
  const command = argv.slice(at + 1, end < 0 ? argv.length : end);
  return command.length === 0 ? undefined : { command };
}

/** `start-stop-daemon -S -x /bin/prog -- args…`: the program is an option's value, its arguments follow `--`. */
function startStopDaemonCommand(argv: readonly string[]): WrapperLayer | undefined {
  const { values, next } = scanOptions(argv, {
    shortWithValue: 'xaunpgcdrRNPkIs',
    longWithValue: [
      'exec',
      'startas',
      'name',
      'pidfile',
      'user',
      'group',
      'chuid',
      'chdir',
      'chroot',
      'retry',
      'nicelevel',
      'procsched',
      'iosched',
      'umask',
      'signal',
      'output',
      'remove-pidfile',
    ],
  });
  const program = values.get('exec') ?? values.get('x') ?? values.get('startas') ?? values.get('a');
  if (program === undefined) return undefined;
  return { command: [program, ...argv.slice(next)] };
}

/** Git's own ways of running a command: `submodule foreach 'text'`, `bisect run cmd…`, `rebase -x 'text'`. */
function gitRunsCommand(argv: readonly string[]): WrapperLayer | undefined {
  let i = 1;
  while (i < argv.length && (argv[i] ?? '').startsWith('-'))
    i += /^(?:-C|-c|--git-dir|--work-tree|--namespace|--config-env)$/.test(argv[i] ?? '') ? 2 : 1;
  const subcommand = argv[i];
  const rest = argv.slice(i + 1);
  if (subcommand === 'submodule' && rest.includes('foreach')) {
    const text = rest
      .slice(rest.indexOf('foreach') + 1)
      .filter((arg) => arg !== '--recursive' && arg !== '-q' && arg !== '--quiet');
    return text.length === 0 ? undefined : { shellText: text.join(' ') };
  }
  if (subcommand === 'bisect' && rest[0] === 'run' && rest.length > 1) return { command: rest.slice(1) };
  if (subcommand === 'rebase') {
    const texts = rest.flatMap((arg, j) =>
      arg === '-x' || arg === '--exec'
        ? [rest[j + 1] ?? '']
        : arg.startsWith('--exec=')
          ? [arg.slice(7)]
          : /^-x./.test(arg)
            ? [arg.slice(2)]
            : [],
    );
    return texts.length === 0 ? undefined : { shellText: texts.join('\n') };
  }
  return undefined;
}
