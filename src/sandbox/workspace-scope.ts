/*
 * Workspace paths in their lexical form (`..` resolved, no I/O): what claims name, because
 * they are computed before any I/O, and how outputs show paths. Where a path really leads is
 * WorkspaceDir's business (workspace-dir.ts), at the moment of the I/O.
 */
import { relative, resolve, sep } from 'node:path';
import type { ClaimContext } from '../concurrency/index.js';

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
