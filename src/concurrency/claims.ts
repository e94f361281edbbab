/** Resource claims (docs/claims.md): what a tool call may touch, and the constructors that build them. */

import { normalizePath } from './normalize-path.js';

export type Claim =
  | { kind: 'shared'; reads?: readonly string[] } // read-only / side-effect free
  | { kind: 'exclusive'; scope: Scope };

export type Scope =
  | { kind: 'global' } // unknown or unbounded mutation
  | { kind: 'paths'; paths: readonly string[] } // normalized, unique, sorted
  | { kind: 'nodes'; nodes: readonly string[] } // remote node ids, trimmed, unique, sorted
  | { kind: 'sessions'; sessions: readonly string[] }; // delegated session keys, likewise

/** Entries a constructor accepts; `null` and `undefined` let tools pass optional arguments as is. */
/** What a tool computes a call's claim against: the run's workspace and session. */
export interface ClaimContext {
  workspace: string;
  sessionId: string;
}

export type ClaimEntries = Iterable<string | null | undefined>;

const GLOBAL: Claim = { kind: 'exclusive', scope: { kind: 'global' } };

function uniqueSorted(values: string[]): string[] {
  return [...new Set(values)].sort();
}

function resolvedPaths(entries: ClaimEntries): { paths: string[]; unresolved: number } {
  const paths: string[] = [];
  let unresolved = 0;
  for (const entry of entries) {
    const path = typeof entry === 'string' ? normalizePath(entry) : undefined;
    if (path === undefined) unresolved += 1;
    else paths.push(path);
  }
  return { paths: uniqueSorted(paths), unresolved };
}

function trimmedIds(entries: ClaimEntries): string[] {
  const ids: string[] = [];
  for (const entry of entries) {
    const id = typeof entry === 'string' ? entry.trim() : '';
    if (id !== '') ids.push(id);
  }
  return uniqueSorted(ids);
}

function shared(reads?: ClaimEntries): Claim {
  if (reads === undefined) return { kind: 'shared' };
  const { paths, unresolved } = resolvedPaths(reads);
  // A read we cannot place could be anywhere: fall back to the unknown-footprint form.
  if (unresolved > 0 || paths.length === 0) return { kind: 'shared' };
  return { kind: 'shared', reads: paths };
}

function global(): Claim {
  return GLOBAL;
}

function paths(entries: ClaimEntries): Claim {
  const resolved = resolvedPaths(entries).paths;
  return resolved.length === 0 ? GLOBAL : { kind: 'exclusive', scope: { kind: 'paths', paths: resolved } };
}

function nodes(entries: ClaimEntries): Claim {
  const ids = trimmedIds(entries);
  return ids.length === 0 ? GLOBAL : { kind: 'exclusive', scope: { kind: 'nodes', nodes: ids } };
}

function sessions(entries: ClaimEntries): Claim {
  const keys = trimmedIds(entries);
  return keys.length === 0 ? GLOBAL : { kind: 'exclusive', scope: { kind: 'sessions', sessions: keys } };
}

/** Constructors; an empty or unresolvable set degrades to global, never to "nothing". */
export const Claims = { shared, global, paths, nodes, sessions } as const;

/**
 * Re-applies the constructor rules to a claim built by hand (e.g. returned by a tool), so the
 * conflict rules, which assume normalized claims, can trust it. Unknown shapes become global.
 */
export function normalizeClaim(claim: Claim): Claim {
  if (claim.kind === 'shared') return shared(claim.reads);
  // Reachable from untyped callers (JavaScript tools); an unknown shape means unbounded.
  if (claim.kind !== 'exclusive') return GLOBAL;
  const scope = claim.scope;
  switch (scope.kind) {
    case 'global':
      return GLOBAL;
    case 'paths':
      return paths(scope.paths);
    case 'nodes':
      return nodes(scope.nodes);
    case 'sessions':
      return sessions(scope.sessions);
    default:
      return GLOBAL;
  }
}

const LABEL_ENTRIES = 4;

function list(entries: readonly string[]): string {
  const shown = entries.slice(0, LABEL_ENTRIES).join(', ');
  const more = entries.length - LABEL_ENTRIES;
  return more > 0 ? `[${shown}, … +${more} more]` : `[${shown}]`;
}

/** Short label of a scope, e.g. `paths [/w/a, /w/b]`. */
export function describeScope(scope: Scope): string {
  switch (scope.kind) {
    case 'global':
      return 'global';
    case 'paths':
      return `paths ${list(scope.paths)}`;
    case 'nodes':
      return `nodes ${list(scope.nodes)}`;
    case 'sessions':
      return `sessions ${list(scope.sessions)}`;
  }
}

/** Short label of a claim for scheduling explanations, e.g. `shared reads [/w/a]`. */
export function describeClaim(claim: Claim): string {
  if (claim.kind === 'exclusive') return describeScope(claim.scope);
  return claim.reads === undefined ? 'shared' : `shared reads ${list(claim.reads)}`;
}
