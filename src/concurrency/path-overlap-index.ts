/**
 * A set of normalized paths that answers "does any member overlap this path?". Small sets are
 * scanned (cheapest for the typical group of a few calls); past a threshold the set switches to
 * ancestor lookups, costing O(depth) per query however large it grows, so that a wide group of
 * reads and writes stays near-linear instead of quadratic.
 */

import { climbLevels, normalizedPathsOverlap } from './paths-overlap.js';

/** A normalized path with what ancestor lookups need, computed once per distinct path. */
export interface PathShape {
  readonly path: string;
  readonly absolute: boolean;
  /** Leading `..` components; 0 for absolute paths. */
  readonly climb: number;
  /** Ancestors-or-self within the path's own class (same root, or same climb), root first. */
  readonly chain: readonly string[];
}

function shapeOf(path: string): PathShape {
  const absolute = path.startsWith('/');
  const climb = absolute ? 0 : climbLevels(path);
  // The class root is the common ancestor of every path of that class: `/`, `.`, `..`, `../..`, …
  const root = absolute ? '/' : climb === 0 ? '.' : path.slice(0, 3 * climb - 1);
  const chain = [root];
  if (path !== root) {
    const from = absolute ? 1 : climb === 0 ? 0 : 3 * climb;
    for (let at = path.indexOf('/', from); at !== -1; at = path.indexOf('/', at + 1)) {
      chain.push(path.slice(0, at));
    }
    chain.push(path);
  }
  return { path, absolute, climb, chain };
}

/** Memoizes shapes; a batch names the same few paths many times. */
export class PathShapes {
  private readonly shapes = new Map<string, PathShape>();

  of(path: string): PathShape {
    let shape = this.shapes.get(path);
    if (shape === undefined) {
      shape = shapeOf(path);
      this.shapes.set(path, shape);
    }
    return shape;
  }
}

/** Ancestor lookups over a set of paths: the same answers as scanning with `normalizedPathsOverlap`. */
class PathAncestry {
  private absolute = 0;
  private relative = 0;
  private readonly relativeByClimb = new Map<number, number>();
  private readonly members = new Set<string>();
  private readonly ancestorsOrSelf = new Set<string>();

  add(shape: PathShape): void {
    if (shape.absolute) this.absolute += 1;
    else {
      this.relative += 1;
      this.relativeByClimb.set(shape.climb, (this.relativeByClimb.get(shape.climb) ?? 0) + 1);
    }
    this.members.add(shape.path);
    for (const ancestor of shape.chain) this.ancestorsOrSelf.add(ancestor);
  }

  overlapsAny(shape: PathShape): boolean {
    if (shape.absolute) {
      if (this.relative > 0) return true;
      if (this.absolute === 0) return false;
    } else {
      if (this.absolute > 0) return true;
      const sameClimb = this.relativeByClimb.get(shape.climb) ?? 0;
      // Relative paths that climb a different number of levels always overlap.
      if (sameClimb !== this.relative) return true;
      if (sameClimb === 0) return false;
    }
    // Every member is now in the shape's class, where overlap is ancestry in either direction.
    if (this.ancestorsOrSelf.has(shape.path)) return true;
    return shape.chain.some((ancestor) => this.members.has(ancestor));
  }
}

/** Scanning beats hashing every ancestor until a set holds about this many paths (measured on wide batches). */
export const SCAN_UP_TO = 8;

export class PathOverlapIndex {
  private readonly paths: string[] = [];
  private ancestry: PathAncestry | undefined;

  constructor(
    private readonly shapes: PathShapes,
    private readonly scanUpTo: number = SCAN_UP_TO,
  ) {}

  add(path: string): void {
    this.paths.push(path);
    if (this.ancestry !== undefined) this.ancestry.add(this.shapes.of(path));
    else if (this.paths.length > this.scanUpTo) {
      const ancestry = new PathAncestry();
      for (const member of this.paths) ancestry.add(this.shapes.of(member));
      this.ancestry = ancestry;
    }
  }

  overlapsAny(path: string): boolean {
    if (this.ancestry !== undefined) return this.ancestry.overlapsAny(this.shapes.of(path));
    return this.paths.some((member) => normalizedPathsOverlap(member, path));
  }
}
