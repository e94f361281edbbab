/*
 * jsonSafe: whatever goes in, the copy stringifies without throwing and stays within its
 * caps; plain data within the caps comes out unchanged.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonSafe } from '../../src/gateway/json-safe.js';
import { toJson } from '../../src/gateway/protocol.js';

const limits = { depth: 4, items: 5, keys: 5, chars: 20 };

describe('jsonSafe', () => {
  it('any value: the copy stringifies, and is small', () => {
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withMap: true, withSet: true, withDate: true, withTypedArray: true, withSparseArray: true }), (value) => {
        const text = JSON.stringify(jsonSafe(value, limits)) ?? '';
        // depth 4, 5 items or keys per level, 20 characters per string (and key).
        expect(text.length).toBeLessThan(5 ** 4 * 60);
      }),
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
