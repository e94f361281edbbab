/*
 * jsonSafe: whatever goes in, the copy stringifies without throwing and stays within its
 * caps; plain data within the caps comes out unchanged. jsonSafeText writes the same text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonSafe, jsonSafeText } from '../../src/gateway/json-safe.js';
import { toJson } from '../../src/gateway/protocol.js';

const limits = { depth: 4, items: 5, keys: 5, chars: 20 };

describe('jsonSafe', () => {
  it('any value: the copy stringifies, and is small', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withMap: true,
          withSet: true,
          withDate: true,
          withTypedArray: true,
          withSparseArray: true,
        }),
        (value) => {
          const text = JSON.stringify(jsonSafe(value, limits)) ?? '';
          // depth 4, 5 items or keys per level, 20 characters per string (and key).
          expect(text.length).toBeLessThan(5 ** 4 * 60);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('plain JSON within the caps comes out as it went in', () => {
    const small = fc.jsonValue({ maxDepth: 2 }).filter((v) => JSON.stringify(v).length < 100);
    fc.assert(
      fc.property(small, (value) => {
        const generous = { depth: 10, items: 100, keys: 100, chars: 1000 };
        expect(JSON.stringify(jsonSafe(value, generous))).toBe(JSON.stringify(value));
      }),
    );
  });

  it('jsonSafeText writes what JSON.stringify makes of the copy, for any value and any caps', () => {
    const anything = fc.anything({
      withBigInt: true,
      withMap: true,
      withSet: true,
      withDate: true,
      withTypedArray: true,
      withSparseArray: true,
      withNullPrototype: true,
    });
    const caps = fc.record({ depth: fc.nat(5), items: fc.nat(6), keys: fc.nat(6), chars: fc.nat(30) });
    // Actor references and the like: whatever `special` stands in for is written as its stand-in.
    const special = (value: object) => (value instanceof Uint8Array ? { '@bytes': value.length } : undefined);
    fc.assert(
      fc.property(anything, caps, (value, limits) => {
        const text = jsonSafeText(value, limits, special);
        const expected = JSON.stringify(jsonSafe(value, limits, special));
        if (expected === undefined) expect(text).toBeUndefined();
        // Parsed: a key met twice (clipped alike) is kept once either way.
        else expect(JSON.parse(text!)).toEqual(JSON.parse(expected));
      }),
      { numRuns: 1000 },
    );
    const cyclic: Record<string, unknown> = { name: 'loop', list: [1, 2, 3] };
    cyclic['self'] = cyclic;
    expect(
      jsonSafeText({ cyclic, at: new Date(0), n: -0, inf: Infinity }, { depth: 3, items: 2, keys: 5, chars: 6 }),
    ).toBe(
      '{"cyclic":{"name":"loop","list":[1,2,"… 1 more"],"self":"[circular]"},"at":"1970-01-01T00:00:00.000Z","n":0,"inf":"Infinity"}',
    );
  });

  it('cycles, BigInts, errors and functions become plain stand-ins', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic['self'] = cyclic;
    expect(jsonSafe({ cyclic, big: 10n, error: new Error('boom'), fn: () => 1 }, limits)).toEqual({
      cyclic: { name: 'loop', self: '[circular]' },
      big: '10',
      error: { name: 'Error', message: 'boom' },
    });
  });

  it('toJson falls back to the capped copy instead of throwing', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['again'] = cyclic;
    expect(JSON.parse(toJson({ cyclic, n: 1n }))).toEqual({ cyclic: { a: 1, again: '[circular]' }, n: '1' });
    expect(toJson({ n: 2n })).toBe('{"n":"2"}');
    expect(toJson(undefined)).toBe('null');
  });
});
