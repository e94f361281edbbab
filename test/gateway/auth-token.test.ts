/*
 * A generated gateway token is pasted after a flag (`--token "$(cat .switchyard/token)"`),
 * so it must never start with `-`, which a command line reads as another option.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateToken } from '../../src/gateway/auth-token.js';

/** Random bytes whose first draws encode to a token starting with `-` (base64url 62 = 0b111110). */
function dashFirst(draws: number): (size: number) => Buffer {
  let left = draws;
  return (size) => {
    const bytes = randomBytes(size);
    if (left-- > 0) bytes[0] = 0xf8;
    return bytes;
  };
}

describe('generateToken', () => {
  it('draws again while the token would start with "-"', () => {
    expect(Buffer.from([0xf8, 0, 0]).toString('base64url')).toMatch(/^-/);
    const token = generateToken(dashFirst(3));
    expect(token).not.toMatch(/^-/);
    expect(token).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
  });

  it('never starts with "-" with the real random source', () => {
    // One token in 64 would start with "-" without the rule.
    const tokens = Array.from({ length: 2000 }, () => generateToken());
    expect(tokens.filter((token) => token.startsWith('-'))).toEqual([]);
    expect(new Set(tokens).size).toBe(tokens.length);
  });
});
