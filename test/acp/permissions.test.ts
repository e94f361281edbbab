/* The permission mapping: what each answer of the editor decides, and what "reject always" remembers. */
import { describe, expect, it } from 'vitest';
import type { RequestPermissionResponse } from '@agentclientprotocol/sdk';
import { decisionOf, PERMISSION_OPTIONS, RejectedActions } from '../../src/acp/permissions.js';

const selected = (optionId: string): RequestPermissionResponse => ({ outcome: { outcome: 'selected', optionId } });

describe('decisionOf', () => {
  it.each([
    [selected('allow_once'), 'allow_once', false],
    [selected('allow_always'), 'allow_session', false],
    [selected('reject_once'), 'deny', false],
    [selected('reject_always'), 'deny', true],
    [selected('something_else'), 'deny', false],
    [{ outcome: { outcome: 'cancelled' } } as RequestPermissionResponse, 'deny', false],
  ] as const)('%j decides %s (remember the rejection: %s)', (response, decision, rememberRejection) => {
    expect(decisionOf(response)).toEqual({ decision, rememberRejection });
  });

  it('offers one option of each ACP kind, each with the id of its kind', () => {
    expect(PERMISSION_OPTIONS.map((o) => [o.optionId, o.kind])).toEqual([
      ['allow_once', 'allow_once'],
      ['allow_always', 'allow_always'],
      ['reject_once', 'reject_once'],
      ['reject_always', 'reject_always'],
    ]);
  });
});

describe('RejectedActions', () => {
  it('remembers the exact call: same tool and arguments in any key order, nothing else', () => {
    const rejected = new RejectedActions();
    rejected.add('file_edit', { path: 'c.txt', old: 'a', new: 'b' });
    expect(rejected.has('file_edit', { new: 'b', old: 'a', path: 'c.txt' })).toBe(true);
    expect(rejected.has('file_edit', { path: 'c.txt', old: 'a', new: 'c' })).toBe(false);
    expect(rejected.has('file_write', { path: 'c.txt', old: 'a', new: 'b' })).toBe(false);
  });
});
