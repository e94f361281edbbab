import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { actionFingerprint } from '../../src/approval/index.js';

describe('actionFingerprint', () => {
  it('is the hex sha256 of the tool name, a NUL and the canonical JSON of the arguments', () => {
    const expected = createHash('sha256').update('bash\u0000{"command":"ls","cwd":"src"}').digest('hex');
    expect(actionFingerprint('bash', { cwd: 'src', command: 'ls' })).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not depend on key order, at any depth', () => {
    expect(actionFingerprint('t', { a: 1, b: { c: [1, { d: 2, e: 3 }], f: null } })).toBe(
      actionFingerprint('t', { b: { f: null, c: [1, { e: 3, d: 2 }] }, a: 1 }),
    );
  });

  it('differs for different arguments, array order or tool', () => {
    const base = actionFingerprint('file_write', { path: 'a', content: 'x' });
    expect(actionFingerprint('file_write', { path: 'a', content: 'y' })).not.toBe(base);
    expect(actionFingerprint('file_edit', { path: 'a', content: 'x' })).not.toBe(base);
    expect(actionFingerprint('t', [1, 2])).not.toBe(actionFingerprint('t', [2, 1]));
  });

  it("property: any reordering of an object's keys gives the same fingerprint", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), (record, tool) => {
        const reversed = Object.fromEntries(Object.entries(record).reverse());
        expect(actionFingerprint(tool, reversed)).toBe(actionFingerprint(tool, record));
      }),
    );
  });
});
