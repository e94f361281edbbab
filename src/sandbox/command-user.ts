/*
 * Who runs a sandboxed command. An unprivileged server runs them as itself (bubblewrap gives
 * each its own user namespace, where the process count starts at zero). A server running as
 * root must not: the kernel exempts root from RLIMIT_NPROC whatever the namespace, so a fork
 * bomb would only stop at the host's limits. It runs them as the owner of the workspace, and
 * hands a root-owned workspace to the unprivileged user first (the directory itself; what is
 * in it keeps its owner). The file tools give what they create to the same owner.
 */
import { chown, stat } from 'node:fs/promises';

export interface UnixUser {
  uid: number;
  gid: number;
}

/** [sandbox] unprivileged_uid / unprivileged_gid defaults: nobody / nogroup. */
export const DEFAULT_UNPRIVILEGED_USER: UnixUser = { uid: 65534, gid: 65534 };

export function serverIsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** The user to run commands as in `workspace` (an existing directory); undefined: the server's own. */
export async function commandUser(workspace: string, unprivileged: UnixUser = DEFAULT_UNPRIVILEGED_USER): Promise<UnixUser | undefined> {
  if (!serverIsRoot()) return undefined;
  const owner = await stat(workspace);
  if (owner.uid !== 0) return { uid: owner.uid, gid: owner.gid };
  await chown(workspace, unprivileged.uid, unprivileged.gid);
  return unprivileged;
}
