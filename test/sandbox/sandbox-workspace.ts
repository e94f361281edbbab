/*
 * Workspaces for tests that name their own. A server running as root runs commands as the
 * sandbox user, only in directories that user owns, and hands over only directories it creates
 * under [sandbox] workspace_root (docs/sandbox.md, "Whose workspace"): a test that makes a
 * workspace elsewhere is the operator, and gives it to that user itself.
 */
import { chown, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The default [sandbox] unprivileged_uid / unprivileged_gid. */
export const SANDBOX_USER = { uid: 65534, gid: 65534 } as const;

/** A new temporary directory of the sandbox user (of the test's own user when not root). */
export async function sandboxWorkspace(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await giveToSandboxUser(dir);
  return dir;
}

/** Makes `path` (and missing parents) and gives the directory itself to the sandbox user. */
export async function sandboxDirectory(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  await giveToSandboxUser(path);
  return path;
}

async function giveToSandboxUser(path: string): Promise<void> {
  if (process.getuid?.() === 0) await chown(path, SANDBOX_USER.uid, SANDBOX_USER.gid);
}
