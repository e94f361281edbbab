/*
 * What a command's operands point at: the root, a system directory, a home directory, a
 * block device, an authorized_keys file. Paths are resolved lexically (`//`, `/./`, `/..`),
 * because the policy decides before anything runs.
 */

import { regexUnion } from './regex-union.js';

/** A path with `.`/`..`/`//` resolved: absolute (from `/`), under the home directory, or relative. */
export interface ResolvedPath {
  readonly anchor: 'root' | 'home' | 'relative';
  readonly parts: readonly string[];
}

const HOME_PREFIX = /^(?:~[A-Za-z0-9._-]*|\$HOME|\$\{HOME\})(?=\/|$)/;

/** `cwdIsRoot`: an earlier `cd /` makes relative paths start at the root. */
export function resolvePath(raw: string, cwdIsRoot = false): ResolvedPath {
  const home = HOME_PREFIX.exec(raw);
  const anchor = home ? 'home' : raw.startsWith('/') || cwdIsRoot ? 'root' : 'relative';
  // As far as `..` goes, the home directory is /home/<user>: `~/..` is `/home`.
  const parts: string[] = home ? ['home', '~'] : [];
  for (const part of (home ? raw.slice(home[0].length) : raw).split('/')) {
    if (part === '' || part === '.') continue;
    if (part !== '..') parts.push(part);
    else if (parts.length > 0 && parts.at(-1) !== '..') parts.pop();
    else if (anchor === 'relative') parts.push('..');
  }
  if (!home) return { anchor, parts };
  return parts[0] === 'home' && parts[1] === '~'
    ? { anchor: 'home', parts: parts.slice(2) }
    : { anchor: 'root', parts };
}

/** `*`, `?*`, `**`: a component that matches every name. */
function matchesEverything(part: string): boolean {
  return /^[*?]*\*[*?]*$/.test(part);
}

function hasGlob(part: string): boolean {
  return /[*?[]/.test(part);
}

/** `/`, `//`, `/.`, `/..`, `/*`, `/*\/*`: the root or everything in it. */
export function isRootTarget(raw: string, cwdIsRoot = false): boolean {
  const path = resolvePath(raw, cwdIsRoot);
  return path.anchor === 'root' && path.parts.every(matchesEverything);
}

/**
 * The top-level directories whose loss breaks the machine or its users' data. `lib` covers
 * `lib32`, `lib64`, `libx32`; the macOS names are here for operators on macOS.
 */
const SYSTEM_DIRECTORIES = new Set([
  'bin',
  'boot',
  'dev',
  'etc',
  'home',
  'opt',
  'proc',
  'root',
  'sbin',
  'srv',
  'sys',
  'usr',
  'var',
  'Applications',
  'Library',
  'System',
  'Users',
  'private',
]);

/**
 * A system directory, a direct child of one, a root-level glob, the home directory, everything
 * in it (`~/*`) or one of its dot-directories (`~/.ssh`, `~/.config`).
 */
export function isSystemTarget(raw: string, cwdIsRoot = false): boolean {
  const path = resolvePath(raw, cwdIsRoot);
  if (path.anchor === 'home') {
    const [first, ...rest] = path.parts;
    return first === undefined || (rest.length === 0 && (first.startsWith('.') || matchesEverything(first)));
  }
  if (path.anchor !== 'root' || path.parts.length === 0 || path.parts.length > 2) return false;
  const top = path.parts[0] ?? '';
  return SYSTEM_DIRECTORIES.has(top) || top.startsWith('lib') || hasGlob(top);
}

/** Parameter expansions other than HOME: `$DIR`, `${PREFIX}`, `${X:-}`. */
const VARIABLE = /\$(?:\{(?!HOME\})[^}]{0,64}\}|(?!HOME(?![A-Za-z0-9_]))[A-Za-z_][A-Za-z0-9_]*)/g;

/**
 * The path as it would read if its variables were empty (`"$DIR"/*` → `/*`), or undefined
 * when it has none: the classic way a script deletes far more than it meant to.
 */
export function ifVariablesWereEmpty(raw: string): string | undefined {
  const emptied = raw.replace(VARIABLE, '');
  return emptied === raw ? undefined : emptied;
}

/**
 * Disks, partitions and raw memory under /dev, by every platform's names: Linux (sd, hd, vd, xvd,
 * nvme, mmcblk, pmem, dm-, md, mapper/, nbd, loop, zram, ubi, mtdblock, block/, disk/by-*),
 * macOS (disk*, rdisk*), FreeBSD and friends (ada, nda, nvd, da, ad, wd, vtbd, xbd, mmcsd, gpt/,
 * label/, diskid/, zvol/). `/dev/null`, `/dev/zero`, `/dev/tty`, `/dev/fd/*` are not here.
 */
const BLOCK_DEVICE = regexUnion(
  [
    /sd|hd|vd|xvd|nvme|mmcblk|pmem|dm-|md\d|md\/|mapper\/|nbd|loop\d|zram|ubi|mtdblock|block\/|disk\/|disk\d|rdisk/,
    /ada\d|nda\d|nvd\d|da\d|ad\d|wd\d|vtbd|xbd|mmcsd|gpt\/|label\/|diskid\/|zvol\/|root$|mem$|kmem$|port$/,
  ],
  { before: /^\/dev\// },
);

export function isBlockDevice(raw: string): boolean {
  const path = resolvePath(raw);
  return path.anchor === 'root' && BLOCK_DEVICE.test(`/${path.parts.join('/')}`);
}

/**
 * Files that hold who may log in and as whom, what runs on a schedule or at boot, and the
 * kernel's switches: writing one changes the machine for everyone.
 */
const SYSTEM_FILES = [
  regexUnion(
    [
      /passwd|shadow|group|gshadow|sudoers|crontab|anacrontab|environment|profile|bashrc|rc\.local|ld\.so\.preload/,
      /hosts|pam\.d(?:\/|$)|sudoers\.d(?:\/|$)|cron\.[a-z]+(?:\/|$)|systemd\/|init\.d\/|profile\.d\/|ssh\/sshd_config/,
      /security\//,
    ],
    { before: /^\/etc\// },
  ),
  /^\/var\/spool\/cron(?:\/|$)/,
  /^\/var\/at\/tabs(?:\/|$)/,
  /^\/usr\/lib\/cron\/tabs(?:\/|$)/,
  /^\/proc\/(?:sysrq-trigger|sys\/)/,
  /^\/sys\//,
  /^\/(?:System\/)?Library\/(?:LaunchDaemons|LaunchAgents)(?:\/|$)/,
  /^\/private\/etc\/(?:passwd|sudoers|master\.passwd|hosts)/,
];

export function isSystemFile(raw: string, cwdIsRoot = false): boolean {
  const path = resolvePath(raw, cwdIsRoot);
  const absolute = `/${path.parts.join('/')}`;
  if (path.anchor === 'home') return /^\/Library\/LaunchAgents(?:\/|$)/.test(absolute);
  return path.anchor === 'root' && SYSTEM_FILES.some((file) => file.test(absolute));
}

/** The root, or anything at any depth under a system directory, or the home directory and its dot-directories. */
export function isUnderSystemPath(raw: string, cwdIsRoot = false): boolean {
  const path = resolvePath(raw, cwdIsRoot);
  if (path.anchor === 'home')
    return path.parts.length === 0 || (path.parts.length <= 2 && (path.parts[0] ?? '').startsWith('.'));
  if (path.anchor !== 'root') return false;
  const top = path.parts[0];
  return top === undefined || SYSTEM_DIRECTORIES.has(top) || top.startsWith('lib') || hasGlob(top);
}

/**
 * Credentials named in a text (a path, an argument, an interpreter's code): SSH, cloud, cluster,
 * registry and GPG credentials under a home directory, private keys, the shadow and sudoers files.
 */
const SECRET_IN_TEXT = regexUnion([
  /** A dot directory or file under a home: `~/.ssh/id_x` (not a public key), `.aws`, `.netrc`, … */
  regexUnion(
    [
      /ssh(?:\/(?![\w.-]*\.pub\b|known_hosts|config\b|authorized_keys)|(?=['"\s]|$))/,
      /(?:aws|gnupg|azure|password-store|config\/gcloud)(?=[/'"\s]|$)/,
      /(?:docker\/config\.json|kube\/config|netrc|git-credentials|npmrc|pypirc)(?![\w.-])/,
    ],
    { before: /(?:^|[\s/'"=:~])\./ },
  ),
  /\bid_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?(?![\w.])/,
  /\/etc\/(?:g?shadow|sudoers|master\.passwd|ssh\/ssh_host_\w+_key)(?![\w.])/,
]);

export function mentionsSecret(text: string): boolean {
  return SECRET_IN_TEXT.test(text);
}

export function isAuthorizedKeys(raw: string): boolean {
  const last = resolvePath(raw).parts.at(-1) ?? '';
  return last === 'authorized_keys' || last === 'authorized_keys2';
}

/** Operands: the words after the program that are not options (everything after `--`). */
export function operands(args: readonly string[]): string[] {
  const out: string[] = [];
  let optionsEnded = false;
  for (const arg of args) {
    if (!optionsEnded && arg === '--') optionsEnded = true;
    else if (optionsEnded || !arg.startsWith('-') || arg === '-') out.push(arg);
  }
  return out;
}

/** `rm`'s arguments: GNU rm reads options anywhere before `--`, abbreviations of long ones too. */
export function rmArguments(args: readonly string[]): { recursive: boolean; targets: string[] } {
  let recursive = false;
  const targets: string[] = [];
  let optionsEnded = false;
  for (const arg of args) {
    if (optionsEnded || arg === '-' || !arg.startsWith('-')) targets.push(arg);
    else if (arg === '--') optionsEnded = true;
    else if (arg.startsWith('--')) recursive ||= isAbbreviationOf(arg.slice(2).split('=')[0] ?? '', 'recursive');
    else recursive ||= /[rR]/.test(arg);
  }
  return { recursive, targets };
}

function isAbbreviationOf(option: string, long: string): boolean {
  return option.length > 0 && long.startsWith(option);
}
