/*
 * Which directories may be a workspace. A workspace is bound read-write into the sandbox and
 * is the whole reach of the file tools, so it must not be the file-system root, must not
 * overlap the data directory (the store and the gateway token), and must not contain the
 * workspace root (every session's default workspace). Anywhere else is fine: an editor's
 * project directory is the normal case.
 */
import { realpath } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { pathsNest, pathWithin } from '../config/sandbox-placement.js';
import { ToolError } from '../core/errors.js';

export interface WorkspaceGuard {
  /** The data directory: no workspace may contain it or lie inside it. */
  dataDir?: string;
  /** The root of the default workspaces: a workspace may lie inside it, not contain it. */
  workspaceRoot?: string;
}

/** Why `workspace` may not be one, comparing the paths as written (after resolving `..`); undefined when it may. */
export function workspaceRefusal(workspace: string, guard: WorkspaceGuard): string | undefined {
  const path = resolve(workspace);
  if (path === sep) return 'the file-system root cannot be a workspace; name a project directory';
  if (guard.dataDir !== undefined && pathsNest(path, resolve(guard.dataDir))) {
    return (
      `${path} overlaps the data directory ${resolve(guard.dataDir)} (the store and the gateway ` +
      `token); choose a directory outside it that does not contain it`
    );
  }
  if (guard.workspaceRoot !== undefined && pathWithin(path, resolve(guard.workspaceRoot))) {
    return (
      `${path} contains the workspace root ${resolve(guard.workspaceRoot)}, every session's workspace; ` +
      `choose a directory inside one session's workspace or elsewhere`
    );
  }
  return undefined;
}

/**
 * The same check on real paths (symlinks resolved), right before a workspace is used, so an
 * alias of the data directory is refused too. Throws `invalid_request`.
 */
export async function assertWorkspaceAllowed(workspace: string, guard: WorkspaceGuard): Promise<void> {
  const real = await realPathOfPossiblyMissing(resolve(workspace));
  const realGuard: WorkspaceGuard = {
    ...(guard.dataDir !== undefined ? { dataDir: await realPathOfPossiblyMissing(resolve(guard.dataDir)) } : {}),
    ...(guard.workspaceRoot !== undefined
      ? { workspaceRoot: await realPathOfPossiblyMissing(resolve(guard.workspaceRoot)) }
      : {}),
  };
  const refusal = workspaceRefusal(real, realGuard) ?? workspaceRefusal(workspace, guard);
  if (refusal !== undefined) throw new ToolError('invalid_request', `workspace refused: ${refusal}`);
}

/** The real path of the deepest existing ancestor, with the missing rest appended. */
async function realPathOfPossiblyMissing(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(await realPathOfPossiblyMissing(parent), basename(path));
  }
}
