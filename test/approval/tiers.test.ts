import { describe, expect, it } from 'vitest';
import {
  decideApproval,
  matchOverride,
  type ApprovalInput,
  type ApprovalTier,
  type ToolOverride,
} from '../../src/approval/index.js';

/** The kinds of call the decision distinguishes: a tool's profile plus what the call does. */
const kinds = {
  readOnly: { tool: { name: 'file_read', readOnly: true, idempotent: true } },
  idempotent: { tool: { name: 'file_write', idempotent: true } },
  write: { tool: { name: 'file_edit' } },
  destructive: { tool: { name: 'mcp_fs__delete', destructive: true } },
  idempotentDestructive: { tool: { name: 'mcp_kv__put', idempotent: true, destructive: true } },
  confirm: { tool: { name: 'mcp_db__drop', destructive: true, requiresConfirmation: true } },
  readOnlyConfirm: { tool: { name: 'mcp_vault__read', readOnly: true, requiresConfirmation: true } },
  fileOpsDelete: { tool: { name: 'file_ops' }, destructiveOperation: true },
  fileOpsList: { tool: { name: 'file_ops' }, destructiveOperation: false },
  bash: { tool: { name: 'bash' }, commandVerdict: { action: 'allow' } },
  bashWarn: { tool: { name: 'bash' }, commandVerdict: { action: 'warn', rule: 'sudo', reason: 'runs as root' } },
  bashBlock: {
    tool: { name: 'bash' },
    commandVerdict: { action: 'block', rule: 'pipe_to_shell', reason: 'downloads into a shell' },
  },
  bashFloor: {
    tool: { name: 'bash' },
    commandVerdict: { action: 'block', rule: 'rm_root', reason: 'deletes the filesystem root', floor: true },
  },
} satisfies Record<string, Omit<ApprovalInput, 'tier' | 'overrides'>>;

type Kind = keyof typeof kinds;
type Expected = `${'allow' | 'ask' | 'deny'} by ${'tier' | 'override' | 'confirmation' | 'command_policy'}`;

// tier | call kind | [approval.tools] entry for the tool | decision by layer
const table: [ApprovalTier, Kind, ToolOverride | '-', Expected][] = [
  // plan: every tool that is not read-only is denied
  ['plan', 'readOnly', '-', 'allow by tier'],
  ['plan', 'idempotent', '-', 'deny by tier'],
  ['plan', 'write', '-', 'deny by tier'],
  ['plan', 'destructive', '-', 'deny by tier'],
  ['plan', 'idempotentDestructive', '-', 'deny by tier'],
  ['plan', 'confirm', '-', 'deny by tier'],
  ['plan', 'readOnlyConfirm', '-', 'ask by confirmation'],
  ['plan', 'fileOpsDelete', '-', 'deny by tier'],
  ['plan', 'fileOpsList', '-', 'deny by tier'],
  ['plan', 'bash', '-', 'deny by tier'],
  ['plan', 'bashWarn', '-', 'deny by tier'],
  ['plan', 'bashBlock', '-', 'deny by command_policy'],
  ['plan', 'bashFloor', '-', 'deny by command_policy'],
  // ask: before every tool that can change something, idempotent or not (issue 24: file_write ran unasked)
  ['ask', 'readOnly', '-', 'allow by tier'],
  ['ask', 'idempotent', '-', 'ask by tier'],
  ['ask', 'write', '-', 'ask by tier'],
  ['ask', 'destructive', '-', 'ask by tier'],
  ['ask', 'idempotentDestructive', '-', 'ask by tier'],
  ['ask', 'confirm', '-', 'ask by tier'],
  ['ask', 'readOnlyConfirm', '-', 'ask by confirmation'],
  ['ask', 'fileOpsDelete', '-', 'ask by tier'],
  ['ask', 'fileOpsList', '-', 'ask by tier'],
  ['ask', 'bash', '-', 'ask by tier'],
  ['ask', 'bashWarn', '-', 'ask by tier'],
  ['ask', 'bashBlock', '-', 'deny by command_policy'],
  ['ask', 'bashFloor', '-', 'deny by command_policy'],
  // auto (default): before destructive tools, file_ops delete/move and commands the policy warns about
  ['auto', 'readOnly', '-', 'allow by tier'],
  ['auto', 'idempotent', '-', 'allow by tier'],
  ['auto', 'write', '-', 'allow by tier'],
  ['auto', 'destructive', '-', 'ask by tier'],
  ['auto', 'idempotentDestructive', '-', 'ask by tier'],
  ['auto', 'confirm', '-', 'ask by tier'],
  ['auto', 'readOnlyConfirm', '-', 'ask by confirmation'],
  ['auto', 'fileOpsDelete', '-', 'ask by tier'],
  ['auto', 'fileOpsList', '-', 'allow by tier'],
  ['auto', 'bash', '-', 'allow by tier'],
  ['auto', 'bashWarn', '-', 'ask by tier'],
  ['auto', 'bashBlock', '-', 'deny by command_policy'],
  ['auto', 'bashFloor', '-', 'deny by command_policy'],
  // full: asks nothing — but the floors hold
  ['full', 'readOnly', '-', 'allow by tier'],
  ['full', 'idempotent', '-', 'allow by tier'],
  ['full', 'write', '-', 'allow by tier'],
  ['full', 'destructive', '-', 'allow by tier'],
  ['full', 'idempotentDestructive', '-', 'allow by tier'],
  ['full', 'confirm', '-', 'ask by confirmation'],
  ['full', 'readOnlyConfirm', '-', 'ask by confirmation'],
  ['full', 'fileOpsDelete', '-', 'allow by tier'],
  ['full', 'fileOpsList', '-', 'allow by tier'],
  ['full', 'bash', '-', 'allow by tier'],
  ['full', 'bashWarn', '-', 'allow by tier'],
  ['full', 'bashBlock', '-', 'deny by command_policy'],
  ['full', 'bashFloor', '-', 'deny by command_policy'],
  // overrides: above the tier ...
  ['plan', 'write', 'allow', 'allow by override'],
  ['plan', 'bash', 'ask', 'ask by override'],
  ['plan', 'readOnly', 'deny', 'deny by override'],
  ['ask', 'write', 'allow', 'allow by override'],
  ['ask', 'idempotent', 'ask', 'ask by override'],
  ['auto', 'write', 'ask', 'ask by override'],
  ['auto', 'destructive', 'allow', 'allow by override'],
  ['auto', 'fileOpsDelete', 'allow', 'allow by override'],
  ['auto', 'bashWarn', 'allow', 'allow by override'],
  ['full', 'write', 'deny', 'deny by override'],
  ['full', 'bash', 'ask', 'ask by override'],
  // ... below the floors: a block stays a block, requiresConfirmation stays at least ask
  ['auto', 'bashBlock', 'allow', 'deny by command_policy'],
  ['full', 'bashFloor', 'allow', 'deny by command_policy'],
  ['full', 'confirm', 'allow', 'ask by confirmation'],
  ['auto', 'readOnlyConfirm', 'allow', 'ask by confirmation'],
  ['full', 'confirm', 'deny', 'deny by override'],
  ['full', 'confirm', 'ask', 'ask by override'],
];

describe('decideApproval: tier × call kind × override', () => {
  it('has a row for every tier and call kind', () => {
    for (const tier of ['plan', 'ask', 'auto', 'full'] as const) {
      for (const kind of Object.keys(kinds)) {
        expect(
          table.some(([t, k, o]) => t === tier && k === kind && o === '-'),
          `${tier} × ${kind}`,
        ).toBe(true);
      }
    }
    expect(table.length).toBeGreaterThanOrEqual(40);
  });

  it.each(table)('%s × %s × override %s → %s', (tier, kind, override, expected) => {
    const call = kinds[kind];
    const overrides = override === '-' ? {} : { [call.tool.name]: override };
    const ruling = decideApproval({ tier, overrides, ...call });
    expect(`${ruling.decision} by ${ruling.source}`).toBe(expected);
    expect(ruling.reason).not.toBe('');
  });
});

describe('decideApproval: reasons', () => {
  it('a block names the rule and its reason', () => {
    const ruling = decideApproval({ tier: 'full', overrides: {}, ...kinds.bashBlock });
    expect(ruling.reason).toBe('blocked by pipe_to_shell: downloads into a shell');
  });

  it('a floor match blocks even when the verdict calls itself a warning', () => {
    const ruling = decideApproval({
      tier: 'full',
      overrides: {},
      tool: { name: 'bash' },
      commandVerdict: { action: 'warn', rule: 'fork_bomb', floor: true },
    });
    expect(ruling).toMatchObject({ decision: 'deny', source: 'command_policy' });
    expect(ruling.reason).toContain('fork_bomb');
  });

  it('a warning names the rule', () => {
    expect(decideApproval({ tier: 'auto', overrides: {}, ...kinds.bashWarn }).reason).toContain('sudo');
  });

  it('an override names its key', () => {
    const ruling = decideApproval({
      tier: 'auto',
      overrides: { 'mcp_*': 'deny' },
      tool: { name: 'mcp_fs__read', readOnly: true },
    });
    expect(ruling).toEqual({ decision: 'deny', reason: '[approval.tools] "mcp_*" = "deny"', source: 'override' });
  });

  it('the tier names itself', () => {
    expect(decideApproval({ tier: 'plan', overrides: {}, ...kinds.write }).reason).toBe(
      'tier "plan" denies file_edit: it is not read-only',
    );
  });
});

describe('matchOverride: exact name, then the most specific glob', () => {
  const cases: [string, Record<string, ToolOverride>, string, string | undefined][] = [
    [
      'exact name beats any glob',
      { 'mcp_*': 'deny', mcp_fs__read: 'allow', 'mcp_fs__*': 'ask' },
      'mcp_fs__read',
      'mcp_fs__read',
    ],
    ['the longest matching glob wins', { 'mcp_*': 'deny', 'mcp_fs__*': 'allow' }, 'mcp_fs__read', 'mcp_fs__*'],
    ['... whatever the key order', { 'mcp_fs__*': 'allow', 'mcp_*': 'deny' }, 'mcp_fs__read', 'mcp_fs__*'],
    [
      'a longer glob that does not match is skipped',
      { 'mcp_git__*': 'allow', 'mcp_*': 'deny' },
      'mcp_fs__read',
      'mcp_*',
    ],
    ['equal length: fewer wildcards wins', { 'mcp_?s__*': 'deny', 'mcp_fs__*': 'allow' }, 'mcp_fs__read', 'mcp_fs__*'],
    ['equal length and wildcards: alphabetical', { 'ab*': 'deny', 'a*c': 'allow' }, 'abc', 'a*c'],
    ['* matches an empty run', { 'bash*': 'ask' }, 'bash', 'bash*'],
    ['? matches exactly one character', { 'file_?': 'ask' }, 'file_ops', undefined],
    ['? matches one character', { 'file_op?': 'ask' }, 'file_ops', 'file_op?'],
    ['a key without wildcards is exact only', { bas: 'deny' }, 'bash', undefined],
    ['regex characters are literal', { 'mcp.x*': 'deny' }, 'mcpAx1', undefined],
    ['regex characters match themselves', { 'mcp.x*': 'deny' }, 'mcp.x1', 'mcp.x*'],
    ['globs are anchored at both ends', { 'fs__*': 'deny' }, 'mcp_fs__read', undefined],
    ['a leading * reaches inside', { '*fs__*': 'deny' }, 'mcp_fs__read', '*fs__*'],
    ['inherited property names are not overrides', {}, 'constructor', undefined],
    ['no overrides, no match', {}, 'bash', undefined],
  ];
  it.each(cases)('%s', (_, overrides, name, key) => {
    expect(matchOverride(overrides, name)?.key).toBe(key);
  });

  it('a glob override applies above the tier and below the floors', () => {
    const overrides: Record<string, ToolOverride> = { 'mcp_*': 'allow' };
    expect(decideApproval({ tier: 'plan', overrides, tool: { name: 'mcp_fs__write' } }).decision).toBe('allow');
    expect(
      decideApproval({ tier: 'plan', overrides, tool: { name: 'mcp_db__drop', requiresConfirmation: true } }).decision,
    ).toBe('ask');
  });
});
