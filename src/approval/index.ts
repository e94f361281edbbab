export { commandBlockReason, decideApproval, globMatches, matchOverride } from './tiers.js';
export type {
  ApprovalInput,
  ApprovalRuling,
  ApprovalTier,
  DecisionSource,
  ToolEffects,
  ToolOverride,
} from './tiers.js';
export { actionFingerprint } from './fingerprint.js';
export { SessionGrants } from './grants.js';
export type { SessionGrantsData, SessionGrantsOptions } from './grants.js';
export { REDACTED, SECRET_KEY, redactText, redactValue } from './redact.js';
export { SUMMARY_VALUE_LIMIT, summarizeAction, truncate } from './summary.js';
export type { ActionDescription, ActionSummary, SummaryExtra } from './summary.js';
export { ApprovalDecisionSchema, ApprovalGate } from './gate.js';
export type {
  ApprovalDecision,
  ApprovalGateOptions,
  ApprovalGateRequest,
  ApprovalNotice,
  ApprovalRequest,
  ApprovalResolution,
  ApprovalResolvedBy,
} from './gate.js';
