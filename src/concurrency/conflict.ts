/**
 * The conflict rules of docs/claims.md ("Conflict rules"), and the resource that made two claims
 * conflict. Claims are assumed normalized (built by `Claims` or passed through `normalizeClaim`).
 */

import type { Claim, Scope } from './claims.js';
import { describeScope } from './claims.js';
import { normalizedPathsOverlap } from './paths-overlap.js';

/** A claim flattened to one level, ranked so that each unordered pair is handled once. */
type Footprint = { kind: 'unknown-read' } | { kind: 'reads'; paths: readonly string[] } | Scope;

const RANK: Record<Footprint['kind'], number> = {
  'unknown-read': 0,
  reads: 1,
  paths: 2,
  nodes: 3,
  sessions: 4,
  global: 5,
};

type Conflict =
  | { rule: 'global' }
  | { rule: 'unknown-read'; scope: Scope }
  | { rule: 'unknown-delegation'; sessions: readonly string[] }
  | { rule: 'path'; a: string; b: string }
  | { rule: 'node'; id: string }
  | { rule: 'session'; key: string };

function footprintOf(claim: Claim): Footprint {
  if (claim.kind === 'exclusive') return claim.scope;
  return claim.reads === undefined ? { kind: 'unknown-read' } : { kind: 'reads', paths: claim.reads };
}

function overlappingPaths(as: readonly string[], bs: readonly string[]): Conflict | undefined {
  for (const a of as) {
    for (const b of bs) if (normalizedPathsOverlap(a, b)) return { rule: 'path', a, b };
  }
  return undefined;
}

function common(as: readonly string[], bs: readonly string[]): string | undefined {
  return as.find((a) => bs.includes(a));
}

function findConflict(first: Claim, second: Claim): Conflict | undefined {
  let x = footprintOf(first);
  let y = footprintOf(second);
  if (RANK[x.kind] > RANK[y.kind]) [x, y] = [y, x];
  // From here on x ranks no higher than y, so each cell of the table appears once below.
  if (y.kind === 'global') return { rule: 'global' };
  if (x.kind === 'unknown-read') {
    return y.kind === 'unknown-read' || y.kind === 'reads' ? undefined : { rule: 'unknown-read', scope: y };
  }
  if (y.kind === 'sessions') {
    if (x.kind !== 'sessions') return { rule: 'unknown-delegation', sessions: y.sessions };
    const key = common(x.sessions, y.sessions);
    return key === undefined ? undefined : { rule: 'session', key };
  }
  if (x.kind === 'reads') return y.kind === 'paths' ? overlappingPaths(x.paths, y.paths) : undefined;
  if (x.kind === 'paths') return y.kind === 'paths' ? overlappingPaths(x.paths, y.paths) : undefined;
  if (x.kind === 'nodes' && y.kind === 'nodes') {
    const id = common(x.nodes, y.nodes);
    return id === undefined ? undefined : { rule: 'node', id };
  }
  return undefined;
}

/** Whether two claims may not run at the same time (symmetric). */
export function claimsConflict(a: Claim, b: Claim): boolean {
  return findConflict(a, b) !== undefined;
}

/**
 * The resource two claims conflict on, e.g. `path /w/a`, `node n1`, `global`, or `undefined`
 * when they do not conflict. Used to explain why a group boundary was drawn.
 */
export function conflictReason(a: Claim, b: Claim): string | undefined {
  const conflict = findConflict(a, b);
  if (conflict === undefined) return undefined;
  switch (conflict.rule) {
    case 'global':
      return 'global';
    case 'unknown-read':
      return `unknown read footprint vs ${describeScope(conflict.scope)}`;
    case 'unknown-delegation':
      return `unknown footprint of delegated ${describeScope({ kind: 'sessions', sessions: conflict.sessions })}`;
    case 'path':
      return conflict.a === conflict.b ? `path ${conflict.a}` : `path ${conflict.a} overlaps ${conflict.b}`;
    case 'node':
      return `node ${conflict.id}`;
    case 'session':
      return `session ${conflict.key}`;
  }
}
