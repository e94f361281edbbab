import { describe, expect, it } from 'vitest';
import { SessionGrants } from '../../src/approval/index.js';

describe('SessionGrants', () => {
  it('remembers fingerprints per session', () => {
    const grants = new SessionGrants();
    expect(grants.add('s1', 'fp-a')).toBe(true);
    expect(grants.has('s1', 'fp-a')).toBe(true);
    expect(grants.has('s1', 'fp-b')).toBe(false);
    expect(grants.has('s2', 'fp-a')).toBe(false);
  });

  it("reports each change with all of the session's fingerprints, and nothing for a repeat", () => {
    const changes: [string, string[]][] = [];
    const grants = new SessionGrants({ onChange: (sessionId, fps) => changes.push([sessionId, fps]) });
    grants.add('s1', 'a');
    grants.add('s1', 'b');
    expect(grants.add('s1', 'a')).toBe(false);
    grants.add('s2', 'c');
    expect(changes).toEqual([
      ['s1', ['a']],
      ['s1', ['a', 'b']],
      ['s2', ['c']],
    ]);
  });

  it('round-trips through JSON', () => {
    const grants = new SessionGrants();
    grants.add('s1', 'a');
    grants.add('s1', 'b');
    grants.add('s2', 'c');
    const text = JSON.stringify(grants);
    expect(JSON.parse(text)).toEqual({ s1: ['a', 'b'], s2: ['c'] });
    const restored = SessionGrants.fromJSON(JSON.parse(text) as Record<string, string[]>);
    expect(restored.has('s1', 'b')).toBe(true);
    expect(restored.has('s2', 'c')).toBe(true);
    expect(restored.toJSON()).toEqual(grants.toJSON());
  });

  it('a restored set keeps reporting changes to its new listener', () => {
    const seen: string[][] = [];
    const restored = SessionGrants.fromJSON({ s1: ['a'] }, { onChange: (_, fps) => seen.push(fps) });
    restored.add('s1', 'b');
    expect(seen).toEqual([['a', 'b']]);
  });
});
