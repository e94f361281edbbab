import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { Claims, batchParallelizable, claimsConflict, partitionParallelGroups } from '../../src/concurrency/index.js';
import type { Claim } from '../../src/concurrency/index.js';
import { batch, claim } from './arbitraries.js';

const S = Claims.shared();
const G = Claims.global();

describe('partitionParallelGroups (docs/claims.md, ordered bucketing examples)', () => {
  const cases: [description: string, claims: Claim[], groups: [number, number][]][] = [
    ['empty batch', [], []],
    ['single call', [G], [[0, 1]]],
    [
      '[S,S,S,G]',
      [S, S, S, G],
      [
        [0, 3],
        [3, 4],
      ],
    ],
    [
      '[S,S,G,S,S]',
      [S, S, G, S, S],
      [
        [0, 2],
        [2, 3],
        [3, 5],
      ],
    ],
    [
      'three writes to different files',
      [Claims.paths(['/w/a.ts']), Claims.paths(['/w/b.ts']), Claims.paths(['/w/c.ts'])],
      [[0, 3]],
    ],
    [
      'two writes to the same file',
      [Claims.paths(['/w/a.ts']), Claims.paths(['/w/a.ts'])],
      [
        [0, 1],
        [1, 2],
      ],
    ],
    [
      '[G,G,G]',
      [G, G, G],
      [
        [0, 1],
        [1, 2],
        [2, 3],
      ],
    ],
    [
      'read a.ts, edit b.ts run together; editing a.ts next starts a group',
      [Claims.shared(['/w/a.ts']), Claims.paths(['/w/b.ts']), Claims.paths(['/w/a.ts'])],
      [
        [0, 2],
        [2, 3],
      ],
    ],
    [
      'a boundary resets the group: only conflicts with the current group count',
      [Claims.paths(['/w/a']), Claims.paths(['/w/a']), Claims.paths(['/w/b']), Claims.paths(['/w/a'])],
      [
        [0, 1],
        [1, 3],
        [3, 4],
      ],
    ],
  ];

  it.each(cases)('%s', (_description, claims, groups) => {
    expect(partitionParallelGroups(claims)).toStrictEqual(groups);
    expect(batchParallelizable(claims)).toBe(groups.length <= 1);
  });
});

/** The definition of §2.3, pair by pair: the partition must match it exactly. */
function referencePartition(claims: readonly Claim[]): [number, number][] {
  const groups: [number, number][] = [];
  let start = 0;
  claims.forEach((next, index) => {
    if (claims.slice(start, index).some((member) => claimsConflict(member, next))) {
      groups.push([start, index]);
      start = index;
    }
  });
  if (claims.length > 0) groups.push([start, claims.length]);
  return groups;
}

const members = (claims: readonly Claim[], [start, end]: [number, number]): Claim[] => claims.slice(start, end);

describe('partition properties', () => {
  it('claimsConflict is symmetric', () => {
    fc.assert(fc.property(claim, claim, (a, b) => claimsConflict(a, b) === claimsConflict(b, a)));
  });

  it('groups tile 0..n contiguously and in order', () => {
    fc.assert(
      fc.property(batch, (claims) => {
        const groups = partitionParallelGroups(claims);
        let expectedStart = 0;
        for (const [start, end] of groups) {
          expect(start).toBe(expectedStart);
          expect(end).toBeGreaterThan(start);
          expectedStart = end;
        }
        expect(expectedStart).toBe(claims.length);
      }),
    );
  });

  it('no two calls of a group conflict', () => {
    fc.assert(
      fc.property(batch, (claims) => {
        for (const group of partitionParallelGroups(claims)) {
          const calls = members(claims, group);
          calls.forEach((a, i) => calls.slice(i + 1).forEach((b) => expect(claimsConflict(a, b)).toBe(false)));
        }
      }),
    );
  });

  it('every group after the first starts with a call that conflicts with the previous group', () => {
    fc.assert(
      fc.property(batch, (claims) => {
        const groups = partitionParallelGroups(claims);
        groups.slice(1).forEach((group, i) => {
          const first = claims[group[0]]!;
          const previous = members(claims, groups[i]!);
          expect(previous.some((member) => claimsConflict(member, first))).toBe(true);
        });
      }),
    );
  });

  it('matches the pairwise definition exactly', () => {
    fc.assert(
      fc.property(batch, (claims) => {
        expect(partitionParallelGroups(claims)).toStrictEqual(referencePartition(claims));
      }),
      { numRuns: 2000 },
    );
  });

  it('batchParallelizable holds iff the partition has at most one group', () => {
    fc.assert(
      fc.property(batch, (claims) => {
        expect(batchParallelizable(claims)).toBe(partitionParallelGroups(claims).length <= 1);
      }),
    );
  });

  it('batchParallelizable holds iff no pair conflicts', () => {
    fc.assert(
      fc.property(fc.array(claim, { maxLength: 6 }), (claims) => {
        const anyPair = claims.some((a, i) => claims.slice(i + 1).some((b) => claimsConflict(a, b)));
        expect(batchParallelizable(claims)).toBe(!anyPair);
      }),
    );
  });
});
