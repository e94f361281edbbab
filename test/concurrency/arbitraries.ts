/** fast-check arbitraries over a small universe, so that overlaps and shared ids are frequent. */

import fc from 'fast-check';
import { Claims } from '../../src/concurrency/index.js';
import type { Claim } from '../../src/concurrency/index.js';

export const normalizedPath = fc.constantFrom(
  '/',
  '/w',
  '/w/a',
  '/w/a/b',
  '/w/ab',
  '/w/b',
  'src',
  'src/a',
  '.',
  '..',
  '../x',
  '../..',
  '../../x',
);
const node = fc.constantFrom('n1', 'n2', 'n3');
const session = fc.constantFrom('s1', 's2', 's3');

export const claim: fc.Arbitrary<Claim> = fc.oneof(
  { arbitrary: fc.constant(Claims.shared()), weight: 2 },
  {
    arbitrary: fc.array(normalizedPath, { minLength: 1, maxLength: 3 }).map((reads) => Claims.shared(reads)),
    weight: 4,
  },
  { arbitrary: fc.constant(Claims.global()), weight: 1 },
  {
    arbitrary: fc.array(normalizedPath, { minLength: 1, maxLength: 3 }).map((paths) => Claims.paths(paths)),
    weight: 4,
  },
  { arbitrary: fc.array(node, { minLength: 1, maxLength: 2 }).map((ids) => Claims.nodes(ids)), weight: 2 },
  { arbitrary: fc.array(session, { minLength: 1, maxLength: 2 }).map((keys) => Claims.sessions(keys)), weight: 1 },
);

export const batch = fc.array(claim, { maxLength: 24 });
