/*
 * What a sandboxed command sees of the host's file system: the program and library
 * directories (read-only, merged-/usr links kept as links), a short list of /etc entries that
 * programs need and that hold no credentials, and a passwd and group file of its own. Nothing
 * else of the host is bound: not the data directory, not $HOME or /root, not /run, /var or
 * /tmp, not other workspaces, so no host socket is reachable either.
 */
import { lstatSync, readlinkSync } from 'node:fs';

export type SystemEntry = { kind: 'bind'; path: string } | { kind: 'symlink'; path: string; target: string };

const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * /etc entries bound read-only when they exist: name resolution, the dynamic linker, time zone,
 * CA certificates, Debian's alternatives, shell start-up files. Never shadow, gshadow,
 * sudoers, ssh host keys, ssl/private, or tool configs that may hold tokens (npmrc, pip.conf).
 */
export const ETC_ENTRIES = [
  'hosts',
  'resolv.conf',
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'services',
  'protocols',
  'networks',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'alternatives',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'ca-certificates.conf',
  'pki/tls/certs',
  'pki/ca-trust',
  'crypto-policies',
  'os-release',
  'lsb-release',
  'debian_version',
  'bash.bashrc',
  'profile',
  'inputrc',
  'mime.types',
  'magic',
  'magic.mime',
  'locale.alias',
  'locale.conf',
] as const;

/** The home of the sandboxed user: a private tmpfs. */
export const SANDBOX_HOME = '/home/sandbox';

let layout: readonly SystemEntry[] | undefined;

/** The host's program and library directories, read once (they do not move while we run). */
export function systemLayout(): readonly SystemEntry[] {
  layout ??= SYSTEM_DIRECTORIES.flatMap((path): SystemEntry[] => {
    try {
      const info = lstatSync(path);
      if (info.isSymbolicLink()) return [{ kind: 'symlink', path, target: readlinkSync(path) }];
      return info.isDirectory() ? [{ kind: 'bind', path }] : [];
    } catch {
      return [];
    }
  });
  return layout;
}

/** passwd and group of the sandbox: root, the sandboxed user and nobody, nothing of the host's. */
export function identityFiles(uid: number, gid: number): { passwd: string; group: string } {
  const users = new Map<number, string>([
    [0, 'root:x:0:0:root:/root:/usr/sbin/nologin'],
    [65534, 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin'],
  ]);
  users.set(uid, `sandbox:x:${uid}:${gid}:sandbox:${SANDBOX_HOME}:/bin/bash`);
  const groups = new Map<number, string>([
    [0, 'root:x:0:'],
    [65534, 'nogroup:x:65534:'],
  ]);
  groups.set(gid, `sandbox:x:${gid}:`);
  const lines = (entries: Map<number, string>) => [...entries.values()].join('\n') + '\n';
  return { passwd: lines(users), group: lines(groups) };
}
