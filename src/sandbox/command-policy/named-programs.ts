/*
 * Which programs the rules judge by name, and which take their operands as data. Both decide
 * where a command may hide in another command's words: every suffix of a simple command's words
 * is a command in its own right (`cpulimit -l 50 rm -rf /` is also `rm -rf /`, whatever the
 * wrapper and its options), unless the program takes its operands as data (`echo rm -rf /`,
 * `grep -rn sudo .`). A data program's name further in (`perf stat rm -rf /`) is most often a
 * subcommand, so it does not end the reading. Every rule asks first which program a view runs, so a suffix that does not
 * start with a judged program can match none of them: only those suffixes are built.
 */
import { isScriptInterpreter } from './programs.js';
import { isWrapper, programName, SHELLS, WRAPPER_NAMES } from './wrappers.js';
import { globToRegExp } from './word-expansion.js';

/**
 * Programs some rule judges by name (the wrappers, shells and interpreters besides). `at` and
 * `batch` are judged only as the program itself: as an operand they are most often English.
 */
const JUDGED_PROGRAMS: ReadonlySet<string> = new Set([
  // destruction.ts, site-views.ts
  'rm',
  'unlink',
  'rmdir',
  'shred',
  'srm',
  'wipe',
  'dd',
  'tee',
  'truncate',
  'fallocate',
  'cp',
  'mv',
  'install',
  'ln',
  'rsync',
  'scp',
  'sed',
  'gsed',
  'sort',
  'wipefs',
  'blkdiscard',
  'badblocks',
  'hdparm',
  'sgdisk',
  'sfdisk',
  'parted',
  'cryptsetup',
  'nvme',
  'diskutil',
  'mkfs',
  'mke2fs',
  'mkdosfs',
  'mkntfs',
  'mkexfatfs',
  'mkswap',
  'newfs',
  // system-changes.ts
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
  'crontab',
  'launchctl',
  'systemctl',
  'loginctl',
  'sysctl',
  'chmod',
  'chown',
  'chgrp',
  'chattr',
  'setfacl',
  'chflags',
  'setcap',
  'kill',
  'killall5',
  'shutdown',
  'reboot',
  'halt',
  'poweroff',
  'init',
  'telinit',
  'sudo',
  'sudoedit',
  'doas',
  'su',
  'pkexec',
  'run0',
  'runuser',
  'machinectl',
  // code-origin.ts, exfiltration.ts, exhaustion.ts, git-hazards.ts
  'eval',
  'source',
  '.',
  'awk',
  'gawk',
  'mawk',
  'nawk',
  'busybox-awk',
  'find',
  'xargs',
  'parallel',
  'tar',
  'gtar',
  'bsdtar',
  'zip',
  'ssh',
  'sftp',
  'vim',
  'vi',
  'nvim',
  'ex',
  'view',
  'gdb',
  'less',
  'more',
  'man',
  'make',
  'gmake',
  'sqlite3',
  'psql',
  'mysql',
  'mariadb',
  'duckdb',
  'openssl',
  'whois',
  'ab',
  'ztcp',
  'curl',
  'wget',
  'wget2',
  'fetch',
  'aria2c',
  'http',
  'https',
  'xh',
  'lwp-download',
  'lwp-request',
  'GET',
  'POST',
  'nc',
  'ncat',
  'netcat',
  'socat',
  'telnet',
  'tftp',
  'ftp',
  'smbclient',
  'gh',
  'dig',
  'nslookup',
  'host',
  'drill',
  'ping',
  'ping6',
  'traceroute',
  'getent',
  'git',
  'base64',
  'xxd',
]);

const NAMED_BY_PATTERN = /^(?:mkfs\..+|newfs_.+)$/;

/** Whether a rule may judge a command run as `program`. */
export function isJudgedProgram(program: string): boolean {
  return (
    JUDGED_PROGRAMS.has(program) || NAMED_BY_PATTERN.test(program) || isWrapper(program) || isScriptInterpreter(program)
  );
}

/**
 * Programs whose operands are text, patterns, names or files, never a command they run: their
 * suffixes are not read. Git's own runners (`submodule foreach`, `bisect run`, `rebase -x`)
 * are peeled as wrappers; package managers' `install` takes package names.
 */
const OPERANDS_ARE_DATA: ReadonlySet<string> = new Set([
  'echo',
  'printf',
  'grep',
  'egrep',
  'fgrep',
  'rg',
  'ag',
  'ack',
  'git',
  'man',
  'which',
  'whereis',
  'type',
  'whatis',
  'apropos',
  'info',
  'help',
  'tldr',
  'hash',
  'cat',
  'head',
  'tail',
  'wc',
  'uniq',
  'cut',
  'tr',
  'ls',
  'stat',
  'file',
  'du',
  'df',
  'touch',
  'mkdir',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'diff',
  'cmp',
  'comm',
  'jq',
  'yq',
  'test',
  '[',
  '[[',
  'read',
  'export',
  'declare',
  'local',
  'readonly',
  'typeset',
  'unset',
  'alias',
  'complete',
  'compgen',
  'apt',
  'apt-get',
  'apt-cache',
  'dpkg',
  'brew',
  'port',
  'dnf',
  'yum',
  'pacman',
  'apk',
  'zypper',
  'snap',
  'flatpak',
  'pip',
  'pip3',
  'gem',
  // programs that copy, archive, inspect or change files named in their operands
  'cp',
  'mv',
  'ln',
  'install',
  'rsync',
  'scp',
  'chmod',
  'chown',
  'chgrp',
  'chattr',
  'setfacl',
  'setcap',
  'tar',
  'zip',
  'unzip',
  'gzip',
  'ldd',
  'strip',
  'nm',
  'objdump',
  'readelf',
  'strings',
  'md5sum',
  'sha1sum',
  'sha256sum',
  'sha512sum',
  'shasum',
  'otool',
  'codesign',
]);

/** Package managers and hosts' tools whose subcommand decides: `npm install sudo` names a package, `npm exec rm` runs it. */
const PACKAGE_MANAGERS: ReadonlySet<string> = new Set([
  'npm',
  'pnpm',
  'yarn',
  'bun',
  'cargo',
  'go',
  'uv',
  'pipx',
  'poetry',
  'pdm',
  'composer',
  'conda',
  'mamba',
  'gh',
  'glab',
  'nix',
]);
const DATA_SUBCOMMANDS: ReadonlySet<string> = new Set([
  'install',
  'i',
  'add',
  'remove',
  'rm',
  'uninstall',
  'un',
  'search',
  'info',
  'view',
  'show',
  'list',
  'ls',
  'outdated',
  'update',
  'upgrade',
  'publish',
  'pack',
  'init',
  'create',
  'get',
  'mod',
  'issue',
  'pr',
  'repo',
  'release',
  'api',
  'browse',
  'gist',
  'label',
  'workflow',
]);

/** Suffixes of a command beyond this many are not read: the command is too complex. */
export const MAX_OPERAND_COMMANDS = 16;

/** The suffixes of `argv` that start with a judged program: `cpulimit -l 50 rm -rf /` → `rm -rf /`; `echo rm -rf /` → none. */
export function operandCommands(argv: readonly string[]): (readonly string[])[] {
  const first = programName(argv[0]);
  // A wrapper the policy knows is read exactly (peelWrapper); the suffixes are for programs it does not know.
  if (OPERANDS_ARE_DATA.has(first) || isWrapper(first)) return [];
  if (PACKAGE_MANAGERS.has(first) && DATA_SUBCOMMANDS.has(argv.slice(1).find((arg) => !arg.startsWith('-')) ?? ''))
    return [];
  const suffixes: (readonly string[])[] = [];
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i] ?? '';
    if (word.startsWith('-')) continue;
    if (!namesProgram(word)) continue;
    const program = programName(word);
    if (isJudgedProgram(program)) suffixes.push(argv.slice(i));
  }
  return suffixes;
}

/** A bare name (`rm`) or a path in a directory of programs (`/usr/bin/rm`), not a file that shares a name (`/etc/passwd`). */
function namesProgram(word: string): boolean {
  const slash = word.lastIndexOf('/');
  return slash < 0 || /(?:^|\/)s?bin$/.test(word.slice(0, slash));
}

/** Whether the program takes its operands as data (`echo`, `grep`, `git`…). */
export function takesOperandsAsData(program: string): boolean {
  return OPERANDS_ARE_DATA.has(program);
}

/**
 * Programs a glob in the program word is matched against (`/bin/r?` → `rm`): those some rule
 * names, and the wrappers and shells that run others.
 */
const GLOB_CANDIDATES: readonly string[] = [
  ...JUDGED_PROGRAMS,
  ...WRAPPER_NAMES,
  ...SHELLS,
  'at',
  'batch',
  'python',
  'python3',
  'perl',
  'ruby',
  'node',
  'php',
  ...['ext2', 'ext3', 'ext4', 'xfs', 'btrfs', 'vfat', 'fat', 'msdos', 'ntfs', 'exfat', 'f2fs'].map(
    (fs) => `mkfs.${fs}`,
  ),
];

/** The programs a glob program word may name: `/usr/bin/r[m]` → `rm`. */
export function globCandidates(word: string): string[] {
  const pattern = programName(word);
  if (!/[*?[]/.test(pattern)) return [];
  const matcher = new RegExp(`^(?:${globToRegExp(pattern, true)})$`);
  return [...new Set(GLOB_CANDIDATES)].filter((name) => matcher.test(name));
}
