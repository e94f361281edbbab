import { describe, it, expect } from 'vitest';
import { Claims, normalizeClaim, describeClaim } from '../../src/concurrency/index.js';
import type { Claim } from '../../src/concurrency/index.js';

const GLOBAL: Claim = { kind: 'exclusive', scope: { kind: 'global' } };

describe('Claims constructors', () => {
  const cases: [description: string, build: () => Claim, expected: Claim][] = [
    ['shared without reads', () => Claims.shared(), { kind: 'shared' }],
    [
      'shared reads are normalized, deduped and sorted',
      () => Claims.shared(['/w/b', '/w/./a', '/w/a/', '\\w\\b']),
      { kind: 'shared', reads: ['/w/a', '/w/b'] },
    ],
    ['shared with an empty reads list is plain shared', () => Claims.shared([]), { kind: 'shared' }],
    ['shared with a blank read is plain shared', () => Claims.shared(['/w/a', '  ']), { kind: 'shared' }],
    ['shared with a missing read is plain shared', () => Claims.shared(['/w/a', undefined]), { kind: 'shared' }],
    ['global', () => Claims.global(), GLOBAL],
    [
      'paths are normalized, deduped and sorted',
      () => Claims.paths(['src/b.ts', './src/a.ts', 'src\\b.ts', '/w/z']),
      { kind: 'exclusive', scope: { kind: 'paths', paths: ['/w/z', 'src/a.ts', 'src/b.ts'] } },
    ],
    [
      'paths sort in code-unit order',
      () => Claims.paths(['/w/b', '/w/B', '/w/a']),
      { kind: 'exclusive', scope: { kind: 'paths', paths: ['/w/B', '/w/a', '/w/b'] } },
    ],
    [
      'blank paths are dropped',
      () => Claims.paths(['', '/w/a', ' ', null]),
      { kind: 'exclusive', scope: { kind: 'paths', paths: ['/w/a'] } },
    ],
    ['no paths is global', () => Claims.paths([]), GLOBAL],
    ['only blank paths is global', () => Claims.paths(['', '  ', undefined]), GLOBAL],
    [
      'nodes are trimmed, deduped and sorted',
      () => Claims.nodes([' n2', 'n1 ', 'n2', '']),
      { kind: 'exclusive', scope: { kind: 'nodes', nodes: ['n1', 'n2'] } },
    ],
    ['no nodes is global', () => Claims.nodes(['  ']), GLOBAL],
    [
      'sessions are trimmed, deduped and sorted',
      () => Claims.sessions(['s2', ' s1', 's1']),
      { kind: 'exclusive', scope: { kind: 'sessions', sessions: ['s1', 's2'] } },
    ],
    ['no sessions is global', () => Claims.sessions([]), GLOBAL],
    [
      'any iterable is accepted',
      () => Claims.nodes(new Set(['n1'])),
      { kind: 'exclusive', scope: { kind: 'nodes', nodes: ['n1'] } },
    ],
  ];

  it.each(cases)('%s', (_description, build, expected) => {
    expect(build()).toStrictEqual(expected);
  });
});

describe('normalizeClaim', () => {
  const cases: [description: string, input: Claim, expected: Claim][] = [
    [
      'normalizes hand-written paths',
      { kind: 'exclusive', scope: { kind: 'paths', paths: ['./b', 'a/'] } },
      Claims.paths(['a', 'b']),
    ],
    ['an empty paths scope becomes global', { kind: 'exclusive', scope: { kind: 'paths', paths: [] } }, GLOBAL],
    ['empty reads become plain shared', { kind: 'shared', reads: [] }, { kind: 'shared' }],
    ['trims node ids', { kind: 'exclusive', scope: { kind: 'nodes', nodes: [' n1'] } }, Claims.nodes(['n1'])],
    ['keeps global', GLOBAL, GLOBAL],
  ];

  it.each(cases)('%s', (_description, input, expected) => {
    expect(normalizeClaim(input)).toStrictEqual(expected);
  });

  it('turns a shape it does not know into global', () => {
    const unknown = JSON.parse('{"kind":"exclusive","scope":{"kind":"galaxy"}}') as Claim;
    expect(normalizeClaim(unknown)).toStrictEqual(GLOBAL);
  });
});

describe('describeClaim', () => {
  const cases: [claim: Claim, label: string][] = [
    [Claims.shared(), 'shared'],
    [Claims.shared(['/w/a']), 'shared reads [/w/a]'],
    [Claims.global(), 'global'],
    [Claims.paths(['/w/b', '/w/a']), 'paths [/w/a, /w/b]'],
    [Claims.nodes(['n1']), 'nodes [n1]'],
    [Claims.sessions(['s1']), 'sessions [s1]'],
    [Claims.paths(['/1', '/2', '/3', '/4', '/5', '/6']), 'paths [/1, /2, /3, /4, … +2 more]'],
  ];

  it.each(cases)('%j -> %s', (claim, label) => {
    expect(describeClaim(claim)).toBe(label);
  });
});
