/*
 * Session modes: the approval tiers (README "Approval, command policy and the sandbox") as the
 * ACP session modes an editor offers in its mode picker. A prompt runs under the mode its
 * session is in when it is sent (RunRequest.approvalTier); the floors hold in every mode.
 */
import type { SessionMode, SessionModeState } from '@agentclientprotocol/sdk';
import type { ApprovalTier } from '../approval/index.js';

export const SESSION_MODES: readonly (SessionMode & { id: ApprovalTier })[] = [
  { id: 'plan', name: 'Plan', description: 'Read-only: every tool that could change something is refused.' },
  { id: 'ask', name: 'Ask', description: 'Asks before every tool that is not read-only.' },
  {
    id: 'auto',
    name: 'Auto',
    description: 'Asks before destructive tools and commands the command policy warns about.',
  },
  {
    id: 'full',
    name: 'Full',
    description: 'Asks nothing, except before tools that require confirmation; blocked commands stay refused.',
  },
];

export function isApprovalTier(modeId: string): modeId is ApprovalTier {
  return SESSION_MODES.some((mode) => mode.id === modeId);
}

export function sessionModeState(current: ApprovalTier): SessionModeState {
  return { currentModeId: current, availableModes: SESSION_MODES.map((mode) => ({ ...mode })) };
}
