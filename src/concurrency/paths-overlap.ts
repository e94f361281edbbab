/** Whether two paths may name the same file or one may contain the other (docs/claims.md). */

import { normalizePath } from './normalize-path.js';

/**
 * Overlap of two paths. Inputs are normalized first, so callers may pass raw paths; a blank
 * path overlaps everything, because a footprint nobody can resolve must be assumed to be large.
 */
export function pathsOverlap(a: string, b: string): boolean {
  const left = normalizePath(a);
  const right = normalizePath(b);
  if (left === undefined || right === undefined) return true;
  return normalizedPathsOverlap(left, right);
}

/** Overlap of two paths already in `normalizePath` form; the hot path of conflict checks. */
export function normalizedPathsOverlap(a: string, b: string): boolean {
  if (a === b) return true;
  const absolute = a.startsWith('/');
  // Without the workspace we cannot place a relative path against an absolute one.
  if (absolute !== b.startsWith('/')) return true;
  if (absolute) return a === '/' || b === '/' || isAncestor(a, b) || isAncestor(b, a);
  // The base directory may lie inside whatever the path that climbs higher reaches.
  if (climbLevels(a) !== climbLevels(b)) return true;
  return a === '.' || b === '.' || isAncestor(a, b) || isAncestor(b, a);
}

/** Number of leading `..` components of a normalized relative path. */
export function climbLevels(path: string): number {
  let levels = 0;
  let at = 0;
  while (path.startsWith('..', at) && (at + 2 === path.length || path[at + 2] === '/')) {
    levels += 1;
    at += 3;
  }
  return levels;
}

function isAncestor(ancestor: string, path: string): boolean {
  return path.startsWith(ancestor) && path[ancestor.length] === '/';
}
