import { describe, it, expect } from 'vitest';
import { Claims, claimsConflict, conflictReason } from '../../src/concurrency/index.js';
import type { Claim } from '../../src/concurrency/index.js';

const shared = Claims.shared();
const reads = (...paths: string[]): Claim => Claims.shared(paths);
const global = Claims.global();
const writes = (...paths: string[]): Claim => Claims.paths(paths);
const nodes = (...ids: string[]): Claim => Claims.nodes(ids);
const sessions = (...keys: string[]): Claim => Claims.sessions(keys);

// One row per cell of the table in docs/claims.md, "Conflict rules" (upper triangle; every row
// also runs with a and b swapped), with overlapping and disjoint variants for the cells that
// depend on what the claims name.
const table: [description: string, a: Claim, b: Claim, expected: boolean][] = [
  ['shared / shared', shared, shared, false],
  ['shared / shared reads', shared, reads('/w/a'), false],
  ['shared / global', shared, global, true],
  ['shared / paths', shared, writes('/w/a'), true],
  ['shared / nodes', shared, nodes('n1'), true],
  ['shared / sessions', shared, sessions('s1'), true],

  ['shared reads / shared reads, same path', reads('/w/a'), reads('/w/a'), false],
  ['shared reads / global', reads('/w/a'), global, true],
  ['overlap(Q, W): same path', reads('/w/a'), writes('/w/a'), true],
  ['overlap(Q, W): read inside written directory', reads('/w/a/b.ts'), writes('/w/a'), true],
  ['overlap(Q, W): read directory contains write', reads('/w'), writes('/w/a/b.ts'), true],
  ['overlap(Q, W): one of several overlaps', reads('/w/x', '/w/a'), writes('/w/a', '/w/z'), true],
  ['overlap(Q, W): disjoint files ("read a.ts, edit b.ts")', reads('/w/a.ts'), writes('/w/b.ts'), false],
  ['overlap(Q, W): name prefix only', reads('/w/a'), writes('/w/ab'), false],
  ['overlap(Q, W): relative read vs absolute write', reads('src/a'), writes('/w/b'), true],
  ['shared reads / nodes', reads('/w/a'), nodes('n1'), false],
  ['shared reads / sessions', reads('/w/a'), sessions('s1'), true],

  ['overlap(R, V): same path', writes('/w/a'), reads('/w/a'), true],
  ['overlap(R, V): write directory contains read', writes('/w/a'), reads('/w/a/b.ts'), true],
  ['overlap(R, V): disjoint', writes('/w/b.ts'), reads('/w/a.ts', '/w/c.ts'), false],

  ['global / global', global, global, true],
  ['global / paths', global, writes('/w/a'), true],
  ['global / nodes', global, nodes('n1'), true],
  ['global / sessions', global, sessions('s1'), true],

  ['overlap(V, W): same file', writes('/w/a.ts'), writes('/w/a.ts'), true],
  ['overlap(V, W): directory and file inside', writes('/w/a'), writes('/w/a/b.ts'), true],
  ['overlap(V, W): root and anything', writes('/'), writes('/w/a'), true],
  ['overlap(V, W): different files', writes('/w/a.ts'), writes('/w/b.ts'), false],
  ['overlap(V, W): name prefix only', writes('/w/a'), writes('/w/ab'), false],
  ['overlap(V, W): several, disjoint', writes('/w/a', '/w/b'), writes('/w/c', '/w/d'), false],
  ['overlap(V, W): climbing relative vs below base', writes('../x'), writes('src'), true],
  ['paths / nodes', writes('/w/a'), nodes('n1'), false],
  ['paths / sessions', writes('/w/a'), sessions('s1'), true],

  ['N ∩ M: same node', nodes('n1'), nodes('n1'), true],
  ['N ∩ M: one in common', nodes('n1', 'n2'), nodes('n2', 'n3'), true],
  ['N ∩ M: disjoint', nodes('n1'), nodes('n2'), false],
  ['nodes / sessions', nodes('n1'), sessions('s1'), true],

  ['J ∩ K: same session', sessions('s1'), sessions('s1'), true],
  ['J ∩ K: one in common', sessions('s1', 's2'), sessions('s2', 's3'), true],
  ['J ∩ K: disjoint', sessions('s1'), sessions('s2'), false],
];

// The rule is symmetric: every row must hold with its arguments swapped.
const mirrored = table.map(([description, a, b, expected]): [string, Claim, Claim, boolean] => [
  `${description} (swapped)`,
  b,
  a,
  expected,
]);

describe('claimsConflict (docs/claims.md, conflict rules)', () => {
  it.each([...table, ...mirrored])('%s -> %s', (_description, a, b, expected) => {
    expect(claimsConflict(a, b)).toBe(expected);
  });
});

const reasons: [description: string, a: Claim, b: Claim, reason: string | undefined][] = [
  ['no conflict', reads('/w/a.ts'), writes('/w/b.ts'), undefined],
  ['global on either side', writes('/w/a'), global, 'global'],
  ['same path', writes('/w/a'), writes('/w/a'), 'path /w/a'],
  ['nested paths', writes('/w/a'), writes('/w/a/b.ts'), 'path /w/a overlaps /w/a/b.ts'],
  ['read and write of one path', reads('/w/a'), writes('/w/a'), 'path /w/a'],
  ['write and read of one path', writes('/w/a'), reads('/w/a'), 'path /w/a'],
  ['unknown read footprint', shared, writes('/w/a', '/w/b'), 'unknown read footprint vs paths [/w/a, /w/b]'],
  ['unknown read footprint vs nodes', nodes('n1'), shared, 'unknown read footprint vs nodes [n1]'],
  ['node in common', nodes('n1', 'n2'), nodes('n2'), 'node n2'],
  ['session in common', sessions('s1'), sessions('s1', 's2'), 'session s1'],
  [
    'delegated session vs a local write',
    writes('/w/a'),
    sessions('s1'),
    'unknown footprint of delegated sessions [s1]',
  ],
];

describe('conflictReason', () => {
  it.each(reasons)('%s -> %j', (_description, a, b, reason) => {
    expect(conflictReason(a, b)).toBe(reason);
  });

  it.each([...table, ...mirrored])('agrees with claimsConflict: %s', (_description, a, b, expected) => {
    expect(conflictReason(a, b) !== undefined).toBe(expected);
  });
});
