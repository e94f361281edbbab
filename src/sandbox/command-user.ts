/*
 * Who runs a sandboxed command, and whose directories may be a workspace at all. An
 * unprivileged server runs commands as itself (bubblewrap gives each its own user namespace,
 * where the process count starts at zero). A server running as root must not: the kernel
 * exempts root from RLIMIT_NPROC whatever the namespace, so a fork bomb would only stop at the
 * host's limits. It runs them as the unprivileged user, in directories that user owns.
 *
 * Ownership is never changed, except of a directory the server has just created itself: a
 * workspace a request names (`/etc`, `/root/.ssh`, a service's data) keeps its owner, and a
 * directory of another user is refused unless `[sandbox] client_workspaces` allows it
 * (docs/sandbox.md, "Whose workspace").
 */
import { chown, mkdir, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathWithin } from '../config/sandbox-placement.js';
import { ToolError } from '../core/errors.js';

export interface UnixUser {
  uid: number;
  gid: number;
}

/** [sandbox] unprivileged_uid / unprivileged_gid defaults: nobody / nogroup. */
export const DEFAULT_UNPRIVILEGED_USER: UnixUser = { uid: 65534, gid: 65534 };

/** [sandbox] client_workspaces: whose directories may be a workspace. */
export type WorkspaceOwners = 'sandbox_user' | 'run_as_owner';

export interface WorkspaceOwnerOptions {
  /** The user a server running as root runs commands as (default nobody). */
  unprivileged?: UnixUser | undefined;
  /** Default "sandbox_user". */
  owners?: WorkspaceOwners | undefined;
}

export function serverIsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * The user to run commands as in `workspace` (an existing directory); undefined: the server's
 * own. Refuses (`workspace_refused`) a directory the policy does not allow; changes nothing.
 * `statPath` names the same directory when the caller holds it open (/proc/self/fd/N).
 */
export async function commandUser(
  workspace: string,
  options: WorkspaceOwnerOptions = {},
  statPath: string = workspace,
): Promise<UnixUser | undefined> {
  const info = await stat(statPath).catch(() => undefined);
  if (!info?.isDirectory())
    throw new ToolError('invalid_cwd', `workspace ${workspace} does not exist or is not a directory`);
  const { uid, gid } = info;
  const owners = options.owners ?? 'sandbox_user';
  const allowOthers = 'or set [sandbox] client_workspaces = "run_as_owner" to allow directories of other users';
  if (!serverIsRoot()) {
    const self = process.getuid?.();
    if (self === undefined || uid === self || owners === 'run_as_owner') return undefined;
    throw refused(
      `${workspace} belongs to uid ${uid}, not to the server's user (uid ${self}), who runs the commands; name a directory of that user, ${allowOthers}`,
    );
  }
  const sandboxUser = options.unprivileged ?? DEFAULT_UNPRIVILEGED_USER;
  if (uid === sandboxUser.uid) return sandboxUser;
  const giveIt = `give it to the sandbox user yourself (chown ${sandboxUser.uid}:${sandboxUser.gid} ${workspace})`;
  if (uid === 0) {
    throw refused(
      `${workspace} belongs to root; commands never run as root, and the server never hands a directory it did not create to ` +
        `the sandbox user (uid ${sandboxUser.uid}): ${giveIt} or name a directory of that user`,
    );
  }
  if (owners === 'run_as_owner') return { uid, gid };
  throw refused(
    `${workspace} belongs to uid ${uid}, not to the sandbox user (uid ${sandboxUser.uid}); ${giveIt}, ${allowOthers} (commands then run as the owner)`,
  );
}

/** A command without a workspace (nothing of the host writable): never root either. */
export function commandUserWithoutWorkspace(options: WorkspaceOwnerOptions = {}): UnixUser | undefined {
  return serverIsRoot() ? (options.unprivileged ?? DEFAULT_UNPRIVILEGED_USER) : undefined;
}

export interface MakeWorkspaceOptions extends WorkspaceOwnerOptions {
  /** [sandbox] workspace_root: the one place a server running as root creates workspaces. */
  workspaceRoot?: string | undefined;
}

/**
 * Creates `workspace` when it is missing. A server running as root gives the directory it
 * created (only that one: its new parents stay root's) to the sandbox user, and creates one
 * only under the workspace root, so a request cannot plant a directory of that user anywhere
 * root's programs look (`/etc/profile.d`).
 */
export async function makeWorkspace(workspace: string, options: MakeWorkspaceOptions = {}): Promise<void> {
  const path = resolve(workspace);
  const root = serverIsRoot();
  if (root && options.workspaceRoot !== undefined && !pathWithin(resolve(options.workspaceRoot), path)) {
    if (
      await stat(path).then(
        () => true,
        () => false,
      )
    )
      return;
    throw refused(
      `${path} does not exist, and a server running as root creates workspaces only under [sandbox] workspace_root ` +
        `(${resolve(options.workspaceRoot)}); create it for the sandbox user first or name a directory that exists`,
    );
  }
  const created = await mkdir(path, { recursive: true });
  if (created === undefined || !root) return;
  const sandboxUser = options.unprivileged ?? DEFAULT_UNPRIVILEGED_USER;
  await chown(path, sandboxUser.uid, sandboxUser.gid);
}

/** What of a tool call's sandbox settings decides a workspace's owner. */
export function workspaceOwnerOptions(
  settings:
    | {
        unprivileged?: UnixUser | undefined;
        clientWorkspaces?: WorkspaceOwners | undefined;
        workspaceRoot?: string | undefined;
      }
    | undefined,
): MakeWorkspaceOptions {
  return {
    unprivileged: settings?.unprivileged,
    owners: settings?.clientWorkspaces,
    workspaceRoot: settings?.workspaceRoot,
  };
}

function refused(reason: string): ToolError {
  return new ToolError('workspace_refused', `workspace refused: ${reason}`);
}
