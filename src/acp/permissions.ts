/*
 * The permission mapping: an approval request becomes `session/request_permission` with four
 * options, and the option the person picks becomes the engine's decision. "Allow always" is
 * an `allow_session` grant: later identical calls (same tool, same arguments) in this session
 * run without asking. "Reject always" is its mirror, kept here: an identical call is refused
 * without asking. A cancelled request (the turn was cancelled) is a denial.
 */
import type { PermissionOption, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import { actionFingerprint, type ApprovalDecision } from '../approval/index.js';

export const PERMISSION_OPTIONS: readonly PermissionOption[] = [
  { optionId: 'allow_once', name: 'Allow once', kind: 'allow_once' },
  { optionId: 'allow_always', name: 'Allow always (this exact call, this session)', kind: 'allow_always' },
  { optionId: 'reject_once', name: 'Reject', kind: 'reject_once' },
  { optionId: 'reject_always', name: 'Reject always (this exact call, this session)', kind: 'reject_always' },
];

const DECISIONS: Readonly<Record<string, { decision: ApprovalDecision; rememberRejection: boolean }>> = {
  allow_once: { decision: 'allow_once', rememberRejection: false },
  allow_always: { decision: 'allow_session', rememberRejection: false },
  reject_once: { decision: 'deny', rememberRejection: false },
  reject_always: { decision: 'deny', rememberRejection: true },
};

/** The engine's decision for the client's answer; anything but a known option denies. */
export function decisionOf(response: RequestPermissionResponse): {
  decision: ApprovalDecision;
  rememberRejection: boolean;
} {
  if (response.outcome.outcome !== 'selected') return { decision: 'deny', rememberRejection: false };
  return DECISIONS[response.outcome.optionId] ?? { decision: 'deny', rememberRejection: false };
}

/** The calls a person rejected "always" in one session, by action fingerprint. */
export class RejectedActions {
  private readonly fingerprints = new Set<string>();

  add(tool: string, args: unknown): void {
    this.fingerprints.add(actionFingerprint(tool, args));
  }

  has(tool: string, args: unknown): boolean {
    return this.fingerprints.has(actionFingerprint(tool, args));
  }
}
