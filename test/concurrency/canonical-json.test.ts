import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { canonicalJson } from '../../src/concurrency/index.js';

describe('canonicalJson', () => {
  it('does not depend on key order', () => {
    expect(canonicalJson({ b: 1, a: 2 })).toBe(canonicalJson({ a: 2, b: 1 }));
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
  });

  it('sorts nested objects, including objects inside arrays', () => {
    expect(canonicalJson({ z: { y: 1, x: [{ d: 1, c: 2 }] }, a: null })).toBe(
      '{"a":null,"z":{"x":[{"c":2,"d":1}],"y":1}}',
    );
  });

  it('sorts keys in code-unit order, integer-like keys included', () => {
    expect(canonicalJson({ b: 0, 10: 0, 2: 0, B: 0 })).toBe('{"10":0,"2":0,"B":0,"b":0}');
  });

  it('drops undefined members and renders undefined array items as null', () => {
    expect(canonicalJson({ a: undefined, b: 1, f: () => 1 })).toBe('{"b":1}');
    expect(canonicalJson([1, undefined, 3])).toBe('[1,null,3]');
  });

  it('keeps array order', () => {
    expect(canonicalJson([3, 1, 2])).toBe('[3,1,2]');
    expect(canonicalJson([3, 1, 2])).not.toBe(canonicalJson([1, 2, 3]));
  });

  it('renders scalars as JSON.stringify does', () => {
    expect(canonicalJson('a"b')).toBe('"a\\"b"');
    expect(canonicalJson(NaN)).toBe('null');
    expect(canonicalJson(true)).toBe('true');
    expect(canonicalJson(undefined)).toBe('null');
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"');
  });

  it('rejects cycles instead of overflowing the stack', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cycle/);
  });

  it('parses back to the value JSON.stringify would give, for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value);
        expect(JSON.parse(text)).toStrictEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});
