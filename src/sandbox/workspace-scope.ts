/*
 * Workspace scope (README, "Builtin tools"): every file path a tool touches must resolve inside the
 * run's workspace, after `..` and after following symlinks (realpath of the deepest existing
 * ancestor). Claims use the lexical form, because they are computed before any I/O.
 */
import { lstat, readlink, realpath } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import type { ClaimContext } from '../concurrency/index.js';
import { ToolError } from '../core/errors.js';

/** The same bound as the kernel's: a longer chain of links is a loop. */
const MAX_SYMLINK_HOPS = 40;

/** Resolves `path` against the absolute `workspace`, lexically (`..` resolved, no I/O). */
export function resolveInWorkspace(workspace: string, path: string): string {
  return resolve(workspace, path);
}

/** The absolute path a claim names for `path`: lexical, so it can be built before execution. */
export function workspaceClaimPath(ctx: ClaimContext, path: string): string {
  return resolveInWorkspace(ctx.workspace, path);
}

/** `path` relative to the workspace, for messages and tool outputs (`.` for the workspace itself). */
export function workspaceRelative(workspace: string, path: string): string {
  const rel = relative(resolve(workspace), resolveInWorkspace(workspace, path));
  return rel === '' ? '.' : rel.split(sep).join('/');
}

function errorCode(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

function isMissing(error: unknown): boolean {
  const code = errorCode(error);
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * The real path of `path`, which need not exist: the realpath of its deepest existing
 * ancestor with the missing rest appended. A dangling symlink is followed to where it points,
 * since writing through it would create its target.
 */
async function realpathOfPossiblyMissing(path: string, hops = 0): Promise<string> {
  if (hops > MAX_SYMLINK_HOPS) {
    throw new ToolError('outside_workspace', `${path}: too many levels of symbolic links`);
  }
  try {
    return await realpath(path);
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const stats = await lstat(path).catch((error: unknown) => {
    if (isMissing(error)) return undefined;
    throw error;
  });
  if (stats?.isSymbolicLink()) {
    const target = resolve(await realpath(parent), await readlink(path));
    return realpathOfPossiblyMissing(target, hops + 1);
  }
  return join(await realpathOfPossiblyMissing(parent, hops), basename(path));
}

function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return candidate.startsWith(prefix);
}

/**
 * Resolves `path` against the workspace, follows symlinks, and returns the real absolute path
 * to use for I/O; throws `outside_workspace` when it lands outside the workspace.
 */
export async function ensureInsideWorkspace(workspace: string, path: string): Promise<string> {
  const root = await realpathOfPossiblyMissing(resolve(workspace));
  const real = await realpathOfPossiblyMissing(resolveInWorkspace(workspace, path));
  if (!isInside(root, real)) {
    throw new ToolError('outside_workspace', `${path} resolves to ${real}, outside the workspace ${root}`);
  }
  return real;
}

/**
 * Like ensureInsideWorkspace, but for an operation on the directory entry itself (delete,
 * move): a symlink is not followed, so removing a link removes the link, not its target.
 */
export async function ensureEntryInsideWorkspace(workspace: string, path: string): Promise<string> {
  const lexical = resolveInWorkspace(workspace, path);
  if (lexical === resolve(workspace) || dirname(lexical) === lexical) return ensureInsideWorkspace(workspace, path);
  const parent = await ensureInsideWorkspace(workspace, dirname(lexical));
  return join(parent, basename(lexical));
}
