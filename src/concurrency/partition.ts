/** Ordered bucketing of a batch of tool calls into groups that may run concurrently (docs/claims.md). */

import type { Claim } from './claims.js';
import { GroupFootprint } from './group-footprint.js';
import { PathShapes } from './path-overlap-index.js';

/**
 * Walks the claims in model order and starts a new group when a call conflicts with any call
 * already in the current group. Returns half-open `[start, end)` ranges that tile `0..n`.
 */
export function partitionParallelGroups(claims: readonly Claim[]): [start: number, end: number][] {
  const groups: [number, number][] = [];
  const shapes = new PathShapes();
  let group = new GroupFootprint(shapes);
  let start = 0;
  claims.forEach((claim, index) => {
    if (group.conflictsWith(claim)) {
      groups.push([start, index]);
      start = index;
      group = new GroupFootprint(shapes);
    }
    group.add(claim);
  });
  if (!group.isEmpty) groups.push([start, claims.length]);
  return groups;
}

/** Whether no two claims of the batch conflict; empty and single batches are parallelizable. */
export function batchParallelizable(claims: readonly Claim[]): boolean {
  const group = new GroupFootprint(new PathShapes());
  for (const claim of claims) {
    if (group.conflictsWith(claim)) return false;
    group.add(claim);
  }
  return true;
}
