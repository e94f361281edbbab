/*
 * The README's tier table is a tested table: every row names calls, and each of them, admitted
 * by a real ToolService with the real builtins (their annotations, destructiveFor, the command
 * policy), must get the decision the row gives under each tier. A row the code contradicts, a
 * row without calls here, or a builtin no row covers fails. Issue 24: under `ask`, file_write
 * ran unasked because the tier took idempotent for read-only.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import type { ApprovalTier } from '../../src/approval/index.js';
import { profileFromAnnotations } from '../../src/tools/mcp/tool-profile.js';
import { builtinTools } from '../../src/tools/builtins/index.js';
import { defineTool, type AnyTool } from '../../src/tools/tool.js';
import { ToolService } from '../../src/tools/tool-service.js';

const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));
const START = '<!-- tier-table:start';
const END = '<!-- tier-table:end -->';
const TIERS: readonly ApprovalTier[] = ['plan', 'ask', 'auto', 'full'];

const mcpTool = (name: string, annotations: Parameters<typeof profileFromAnnotations>[0]): AnyTool =>
  defineTool({
    name,
    description: name,
    input: z.object({}).passthrough(),
    ...profileFromAnnotations(annotations),
    execute: async () => 'ok',
  });
const mcpTools = [
  mcpTool('mcp_fs__delete', {}),
  mcpTool('mcp_fs__delete_marked', { destructiveHint: true }),
  mcpTool('mcp_kv__put', { idempotentHint: true, destructiveHint: true }),
  mcpTool('mcp_vault__read', { readOnlyHint: true }),
];
const confirmedRead = defineTool({
  name: 'vault_read',
  description: 'r',
  input: z.object({}),
  readOnly: true,
  requiresConfirmation: true,
  execute: async () => 'ok',
});
const tools = new Map<string, AnyTool>([...builtinTools, ...mcpTools, confirmedRead].map((tool) => [tool.name, tool]));

type Call = { name: string; args: unknown };
const bash = (command: string): Call => ({ name: 'bash', args: { command } });
const fileOps = (operation: string, extra: object = {}): Call => ({
  name: 'file_ops',
  args: { operation, path: 'a', ...extra },
});

/** The calls each row of the README table stands for, by its first cell. */
const rowCalls: Record<string, Call[]> = {
  'a read-only tool (`file_read`)': [
    { name: 'file_read', args: { path: 'a' } },
    { name: 'mcp_vault__read', args: {} },
  ],
  'an idempotent tool that writes (`file_write`)': [{ name: 'file_write', args: { path: 'a', content: 'x' } }],
  'another tool that can change something (`file_edit`, `apply_patch`, `file_ops` mkdir/copy/list, `node_invoke`, `session_send`)':
    [
      { name: 'file_edit', args: { path: 'a', old: 'x', new: 'y' } },
      { name: 'apply_patch', args: { patch: '*** Begin Patch\n*** Add File: a\n+x\n*** End Patch' } },
      fileOps('mkdir'),
      fileOps('copy', { destination: 'b' }),
      fileOps('list'),
      { name: 'node_invoke', args: { node: 'n', command: 'ls' } },
      { name: 'session_send', args: { session: 's2', message: 'hi' } },
    ],
  'a `bash` command': [bash('npm test'), bash('ls')],
  'a `bash` command the policy marks `warn`': [bash('sudo apt install x')],
  'a destructive call (`file_ops` delete/move, an MCP tool without `destructiveHint: false`)': [
    fileOps('delete'),
    fileOps('move', { destination: 'b' }),
    { name: 'mcp_fs__delete', args: {} },
  ],
  'a tool that requires confirmation (MCP `destructiveHint: true`)': [
    { name: 'mcp_fs__delete_marked', args: {} },
    { name: 'mcp_kv__put', args: {} },
  ],
  'a read-only tool that requires confirmation': [{ name: 'vault_read', args: {} }],
  'a `bash` command the policy blocks': [bash('rm -rf /'), bash(':(){ :|:& };:')],
};

interface Row {
  call: string;
  decisions: Record<ApprovalTier, string>;
}

async function readmeRows(): Promise<Row[]> {
  const readme = await readFile(readmePath, 'utf8');
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  expect(start, `README.md lacks ${START} … ${END}`).toBeGreaterThanOrEqual(0);
  const lines = readme
    .slice(readme.indexOf('\n', start) + 1, end)
    .trim()
    .split('\n');
  const header = cells(lines[0] ?? '');
  expect(header.slice(1).map((cell) => cell.match(/`(\w+)`/)?.[1])).toEqual(TIERS);
  return lines.slice(2).map((line) => {
    const [call = '', ...decisions] = cells(line);
    return {
      call,
      decisions: Object.fromEntries(TIERS.map((tier, i) => [tier, decisions[i]])) as Record<ApprovalTier, string>,
    };
  });
}

function cells(line: string): string[] {
  return line
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim());
}

/** What a ToolService under `tier` decides for `call`: allow, ask or deny. */
function decision(tier: ApprovalTier, call: Call): string {
  const service = new ToolService({
    tools,
    runId: 'r',
    sessionId: 's',
    workspace: '/w',
    sandbox: { backend: 'bwrap', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
    unattended: false,
    warn: () => undefined,
    approvalConfig: () => ({ tier, tools: {} }),
    // The default [sandbox.command_policy]: tunable rules warn, the floor blocks.
    commandPolicy: () => ({}),
  });
  const admitted = service.admit({ id: 'c', ...call });
  if (admitted.invalid?.code === 'command_blocked') return 'deny';
  expect(admitted.invalid, `${call.name} ${JSON.stringify(call.args)}`).toBeUndefined();
  return admitted.approval?.decision ?? 'none';
}

describe('the README tier table', () => {
  it('names exactly the rows this test has calls for', async () => {
    expect((await readmeRows()).map((row) => row.call).sort()).toEqual(Object.keys(rowCalls).sort());
  });

  it('covers every builtin tool', () => {
    const covered = new Set(
      Object.values(rowCalls)
        .flat()
        .map((call) => call.name),
    );
    expect(builtinTools.map((tool) => tool.name).filter((name) => !covered.has(name))).toEqual([]);
  });

  it('is what the code decides, for every call of every row under every tier', async () => {
    const disagreements: string[] = [];
    for (const row of await readmeRows()) {
      for (const call of rowCalls[row.call] ?? []) {
        for (const tier of TIERS) {
          const actual = decision(tier, call);
          if (actual !== row.decisions[tier])
            disagreements.push(
              `${tier} × ${call.name} ${JSON.stringify(call.args)}: README says ${row.decisions[tier]}, code says ${actual}`,
            );
        }
      }
    }
    expect(disagreements).toEqual([]);
  });

  it('under ask, every builtin that is not read-only asks (idempotent or not)', () => {
    for (const tool of builtinTools) {
      const calls = Object.values(rowCalls)
        .flat()
        .filter((call) => call.name === tool.name);
      for (const call of calls) {
        const expected = tool.readOnly === true ? 'allow' : 'ask';
        if (rowCalls['a `bash` command the policy blocks']?.includes(call)) continue;
        expect(decision('ask', call), `${tool.name} ${JSON.stringify(call.args)}`).toBe(expected);
      }
    }
  });
});
