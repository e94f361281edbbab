import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { claimsConflict } from '../../src/concurrency/index.js';
import { GroupFootprint } from '../../src/concurrency/group-footprint.js';
import { PathOverlapIndex, PathShapes } from '../../src/concurrency/path-overlap-index.js';
import { normalizedPathsOverlap } from '../../src/concurrency/paths-overlap.js';
import { claim } from './arbitraries.js';

// The indexes scan small sets and switch to ancestor lookups past a threshold; both modes must
// give exactly the answers of the pairwise rules, so each property runs at several thresholds.
const thresholds = [0, 1, 3, 8];

describe.each(thresholds)('with ancestor lookups past %i paths', (scanUpTo) => {
  it('PathOverlapIndex answers as scanning with normalizedPathsOverlap', () => {
    const pathSet = fc.array(
      fc.constantFrom(
        '/',
        '/w',
        '/w/a',
        '/w/a/b',
        '/w/ab',
        '/x',
        'src',
        'src/a',
        'src/ab',
        '.',
        '..',
        '../a',
        '../..',
        '../../a',
      ),
      { maxLength: 12 },
    );
    fc.assert(
      fc.property(pathSet, pathSet, (members, queries) => {
        const index = new PathOverlapIndex(new PathShapes(), scanUpTo);
        for (const member of members) index.add(member);
        for (const query of queries) {
          expect(index.overlapsAny(query)).toBe(members.some((member) => normalizedPathsOverlap(member, query)));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('GroupFootprint answers as claimsConflict against every member', () => {
    fc.assert(
      fc.property(fc.array(claim, { maxLength: 16 }), claim, (members, next) => {
        const group = new GroupFootprint(new PathShapes(), scanUpTo);
        for (const member of members) group.add(member);
        expect(group.conflictsWith(next)).toBe(members.some((member) => claimsConflict(member, next)));
      }),
      { numRuns: 1000 },
    );
  });
});
