/*
 * The approval decision for one call (README, "Approval, command policy and the sandbox", which
 * gives the order per call): floors first (a command the policy blocks is refused; a tool's own
 * requiresConfirmation is at least "ask"), then the per-tool override from [approval.tools], then
 * the execution tier. Pure: the caller reads the config at decision time, so a reload applies to
 * the next call.
 */

import type { CommandVerdict } from '../sandbox/index.js';

export type ApprovalTier = 'plan' | 'ask' | 'auto' | 'full';
export type ToolOverride = 'allow' | 'ask' | 'deny';

/** A tool's effect profile, as far as approval cares (README, "Builtin tools"). */
export interface ToolEffects {
  name: string;
  readOnly?: boolean;
  /** Running it twice equals running it once (replay, dedup); says nothing about harm, so no tier lets it through. */
  idempotent?: boolean;
  destructive?: boolean;
  requiresConfirmation?: boolean;
}

export interface ApprovalInput {
  tier: ApprovalTier;
  /** [approval.tools]: exact tool names or globs (`*` any run, `?` one character). */
  overrides: Readonly<Record<string, ToolOverride>>;
  tool: ToolEffects;
  /** This call is destructive although the tool is not always (file_ops delete/move). */
  destructiveOperation?: boolean;
  /** What the command policy (src/sandbox's evaluateCommand) said about the call's command. */
  commandVerdict?: CommandVerdict;
}

/**
 * Which layer decided: `command_policy` means the command policy blocked the call — it fails
 * as `command_blocked` before anyone is asked; `confirmation` means the tool's
 * requiresConfirmation floor raised an allow to ask.
 */
export type DecisionSource = 'command_policy' | 'confirmation' | 'override' | 'tier';

export interface ApprovalRuling {
  decision: 'allow' | 'ask' | 'deny';
  reason: string;
  source: DecisionSource;
}

export function decideApproval(input: ApprovalInput): ApprovalRuling {
  const { tool, commandVerdict } = input;
  const blocked = commandBlockReason(commandVerdict);
  if (blocked !== undefined) return { decision: 'deny', reason: blocked, source: 'command_policy' };
  const override = matchOverride(input.overrides, tool.name);
  const base: ApprovalRuling = override
    ? {
        decision: override.value,
        reason: `[approval.tools] "${override.key}" = "${override.value}"`,
        source: 'override',
      }
    : tierDecision(input);
  if (tool.requiresConfirmation === true && base.decision === 'allow') {
    return {
      decision: 'ask',
      reason: `${tool.name} requires confirmation (a floor no tier or override lifts)`,
      source: 'confirmation',
    };
  }
  return base;
}

/** `blocked by <rule>: <reason>` when the verdict refuses the command (a floor or a block rule). */
export function commandBlockReason(verdict: CommandVerdict | undefined): string | undefined {
  if (!verdict || (verdict.action !== 'block' && verdict.floor !== true)) return undefined;
  return `blocked by ${verdict.rule ?? 'the command policy'}: ${verdict.reason ?? 'the command matches a blocked pattern'}`;
}

function tierDecision({ tier, tool, destructiveOperation, commandVerdict }: ApprovalInput): ApprovalRuling {
  const destructive = tool.destructive === true || destructiveOperation === true;
  // A tool that says both read-only and destructive is taken at its worst.
  const readOnly = tool.readOnly === true && !destructive;
  const warned = commandVerdict?.action === 'warn';
  const decided = (decision: ApprovalRuling['decision'], why: string): ApprovalRuling => ({
    decision,
    reason: `tier "${tier}" ${decision === 'allow' ? 'allows' : decision === 'ask' ? 'asks before' : 'denies'} ${tool.name}: ${why}`,
    source: 'tier',
  });
  const warning = () =>
    `the command policy warns (${commandVerdict?.rule ?? 'rule'}${commandVerdict?.reason ? `: ${commandVerdict.reason}` : ''})`;
  const destructiveWhy = () => (tool.destructive === true ? 'it is destructive' : 'this operation is destructive');
  switch (tier) {
    case 'plan':
      return readOnly
        ? decided('allow', 'it is read-only')
        : decided('deny', destructive ? destructiveWhy() : 'it is not read-only');
    case 'ask':
      if (destructive) return decided('ask', destructiveWhy());
      if (warned) return decided('ask', warning());
      if (readOnly) return decided('allow', 'it is read-only');
      // Idempotent is not harmless: a first file_write still replaces the file.
      return decided(
        'ask',
        tool.idempotent === true
          ? 'it is not read-only (idempotent, but it still changes something)'
          : 'it is not read-only',
      );
    case 'auto':
      if (destructive) return decided('ask', destructiveWhy());
      if (warned) return decided('ask', warning());
      return decided('allow', 'it is not destructive');
    case 'full':
      return decided('allow', 'tier "full" asks nothing');
  }
}

/**
 * The override for a tool name: the exact key first; otherwise, of the glob keys that match,
 * the most specific — the longest pattern, then the one with fewer wildcards, then the
 * alphabetically first — so the result never depends on the order of keys in the file.
 */
export function matchOverride(
  overrides: Readonly<Record<string, ToolOverride>>,
  name: string,
): { key: string; value: ToolOverride } | undefined {
  const exact = Object.hasOwn(overrides, name) ? overrides[name] : undefined;
  if (exact !== undefined) return { key: name, value: exact };
  let best: string | undefined;
  for (const key of Object.keys(overrides)) {
    if (!isGlob(key) || !globMatches(key, name)) continue;
    if (best === undefined || moreSpecific(key, best)) best = key;
  }
  return best === undefined ? undefined : { key: best, value: overrides[best]! };
}

function isGlob(key: string): boolean {
  return key.includes('*') || key.includes('?');
}

function wildcards(key: string): number {
  return key.replace(/[^*?]/g, '').length;
}

function moreSpecific(a: string, b: string): boolean {
  if (a.length !== b.length) return a.length > b.length;
  if (wildcards(a) !== wildcards(b)) return wildcards(a) < wildcards(b);
  return a < b;
}

/** `*` matches any run of characters (also none), `?` exactly one; the rest is literal. */
export function globMatches(pattern: string, name: string): boolean {
  const source = [...pattern]
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, 's').test(name);
}
