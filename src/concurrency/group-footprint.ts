/**
 * The combined footprint of the calls in the group being built, kept as counts, id sets and
 * path indexes so that "does this call conflict with any call of the group?" does not grow with
 * the group. It answers exactly as `claimsConflict` against every member would (property-tested).
 */

import type { Claim } from './claims.js';
import { PathOverlapIndex, SCAN_UP_TO } from './path-overlap-index.js';
import type { PathShapes } from './path-overlap-index.js';

export class GroupFootprint {
  private size = 0;
  private unknownReads = 0;
  private exclusive = 0;
  private global = 0;
  private delegations = 0;
  // Allocated on first use: most groups in a real batch are small and never need all four.
  private reads: PathOverlapIndex | undefined;
  private writes: PathOverlapIndex | undefined;
  private nodes: Set<string> | undefined;
  private sessions: Set<string> | undefined;

  constructor(
    private readonly shapes: PathShapes,
    /** How many paths an index scans before it switches to ancestor lookups; tests lower it. */
    private readonly scanUpTo: number = SCAN_UP_TO,
  ) {}

  get isEmpty(): boolean {
    return this.size === 0;
  }

  conflictsWith(claim: Claim): boolean {
    if (claim.kind === 'shared') {
      if (claim.reads === undefined) return this.exclusive > 0;
      return this.global > 0 || this.delegations > 0 || this.anyOverlap(this.writes, claim.reads);
    }
    const scope = claim.scope;
    switch (scope.kind) {
      case 'global':
        return this.size > 0;
      case 'paths':
        return (
          this.blocksLocalWrites() ||
          this.anyOverlap(this.reads, scope.paths) ||
          this.anyOverlap(this.writes, scope.paths)
        );
      case 'nodes':
        return this.blocksLocalWrites() || anyIn(this.nodes, scope.nodes);
      case 'sessions':
        return this.size > this.delegations || anyIn(this.sessions, scope.sessions);
    }
  }

  add(claim: Claim): void {
    this.size += 1;
    if (claim.kind === 'shared') {
      if (claim.reads === undefined) this.unknownReads += 1;
      else this.indexPaths((this.reads ??= new PathOverlapIndex(this.shapes, this.scanUpTo)), claim.reads);
      return;
    }
    this.exclusive += 1;
    const scope = claim.scope;
    switch (scope.kind) {
      case 'global':
        this.global += 1;
        return;
      case 'paths':
        this.indexPaths((this.writes ??= new PathOverlapIndex(this.shapes, this.scanUpTo)), scope.paths);
        return;
      case 'nodes':
        this.nodes ??= new Set();
        for (const id of scope.nodes) this.nodes.add(id);
        return;
      case 'sessions':
        this.delegations += 1;
        this.sessions ??= new Set();
        for (const key of scope.sessions) this.sessions.add(key);
        return;
    }
  }

  /** Members that conflict with any paths or nodes claim regardless of what it names. */
  private blocksLocalWrites(): boolean {
    return this.unknownReads > 0 || this.global > 0 || this.delegations > 0;
  }

  private indexPaths(index: PathOverlapIndex, paths: readonly string[]): void {
    for (const path of paths) index.add(path);
  }

  private anyOverlap(index: PathOverlapIndex | undefined, paths: readonly string[]): boolean {
    return index !== undefined && paths.some((path) => index.overlapsAny(path));
  }
}

function anyIn(members: Set<string> | undefined, ids: readonly string[]): boolean {
  return members !== undefined && ids.some((id) => members.has(id));
}
