/*
 * Replay rules (docs/durable-runs.md): which rule replayRuleOf gives each call — the defaults
 * from a tool's profile, the builtins' choices (bash by its derived claim), MCP tools from
 * their annotations — and that whatever cannot be judged is unsafe.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../../src/tools/builtins/builtin-tools.js';
import { adaptMcpTool } from '../../src/tools/mcp/mcp-tool.js';
import { OUTCOME_UNKNOWN, outcomeUnknownError, replayRuleOf, type ReplayRule } from '../../src/tools/replay.js';
import { defineTool, type AnyTool, type Tool } from '../../src/tools/tool.js';

const ctx = { workspace: '/w', sessionId: 's1' };

const builtin = (name: string): AnyTool => {
  const found = builtinTools.find((t) => t.name === name);
  if (!found) throw new Error(`no builtin ${name}`);
  return found;
};

/** 'safe', 'unsafe' or 'probe': what the resume will do with the call. */
const kindOf = (rule: ReplayRule): string => (typeof rule === 'string' ? rule : 'probe');

const toolWith = (profile: Partial<Tool<{ n?: number }>>): AnyTool =>
  defineTool<{ n?: number }>({
    name: 't',
    description: 't',
    input: z.object({ n: z.number().optional() }),
    execute: async () => 'ran',
    ...profile,
  });

describe('replay rule defaults', () => {
  it.each([
    [{}, 'unsafe'],
    [{ readOnly: true }, 'safe'],
    [{ idempotent: true }, 'safe'],
    [{ readOnly: true, idempotent: true }, 'safe'],
    [{ destructive: true }, 'unsafe'],
    [{ readOnly: true, replay: 'unsafe' as const }, 'unsafe'],
    [{ replay: 'safe' as const }, 'safe'],
  ])('a tool declaring %j is %s', (profile, expected) => {
    expect(replayRuleOf(toolWith(profile), {}, ctx)).toBe(expected);
  });

  it('a per-call rule is chosen from the validated input', () => {
    const tool = toolWith({ replay: (input) => (input.n === 1 ? 'safe' : 'unsafe') });
    expect(replayRuleOf(tool, { n: 1 }, ctx)).toBe('safe');
    expect(replayRuleOf(tool, { n: 2 }, ctx)).toBe('unsafe');
  });

  it('fails closed: a rule function that throws, arguments that do not validate, a malformed declaration', () => {
    const throwing = toolWith({
      readOnly: true,
      replay: () => {
        throw new Error('cannot judge');
      },
    });
    expect(replayRuleOf(throwing, {}, ctx)).toBe('unsafe');
    expect(replayRuleOf(toolWith({ replay: () => 'safe' }), { n: 'not a number' }, ctx)).toBe('unsafe');
    const malformed = toolWith({ replay: { probe: 'yes' } as unknown as ReplayRule<{ n?: number }> });
    expect(replayRuleOf(malformed, {}, ctx)).toBe('unsafe');
  });

  it('a probe declaration is returned with its reconcile', () => {
    const reconcile = async () => ({ state: 'not_done' as const });
    const rule = replayRuleOf(toolWith({ replay: { probe: reconcile } }), {}, ctx);
    expect(typeof rule === 'object' && rule.probe).toBe(reconcile);
  });
});

describe('the builtins choose', () => {
  it.each([
    ['file_read', { path: 'a.txt' }, 'safe'],
    ['file_write', { path: 'a.txt', content: 'x' }, 'probe'],
    ['file_edit', { path: 'a.txt', old: 'a', new: 'b' }, 'probe'],
    ['apply_patch', { patch: '*** Begin Patch\n*** Delete File: a.txt\n*** End Patch' }, 'probe'],
    ['file_ops', { operation: 'delete', path: 'a.txt' }, 'unsafe'],
    ['session_send', { sessionId: 'other', input: 'hi' }, 'unsafe'],
  ])('%s %j: %s', (name, args, expected) => {
    expect(kindOf(replayRuleOf(builtin(name), args, ctx))).toBe(expected);
  });

  it.each([
    ['cat a.txt', 'safe'],
    ['ls -la && wc -l a.txt', 'safe'],
    ['grep -rn foo src | head -5', 'safe'],
    ['echo hi > a.txt', 'unsafe'],
    ['echo hi >> log.txt', 'unsafe'],
    ['rm -rf build', 'unsafe'],
    ['npm install', 'unsafe'],
    ['curl -X POST https://example.com', 'unsafe'],
    ['eval "$X"', 'unsafe'],
  ])('bash %j: %s (its derived claim)', (command, expected) => {
    expect(replayRuleOf(builtin('bash'), { command }, ctx)).toBe(expected);
  });

  it('bash in a cwd outside the workspace is unsafe even for a read', () => {
    expect(replayRuleOf(builtin('bash'), { command: 'cat a.txt', cwd: '../..' }, ctx)).toBe('unsafe');
  });
});

describe('MCP tools, from their annotations', () => {
  // The adapter never calls the client while a rule is judged.
  const client = {} as Client;
  it.each([
    [undefined, 'unsafe'],
    [{ readOnlyHint: true }, 'safe'],
    [{ idempotentHint: true }, 'safe'],
    [{ readOnlyHint: false, idempotentHint: true, destructiveHint: true }, 'safe'],
    [{ destructiveHint: false }, 'unsafe'],
    [{ openWorldHint: true }, 'unsafe'],
    [{ readOnlyHint: false, idempotentHint: false }, 'unsafe'],
  ])('annotations %j: %s', (annotations, expected) => {
    const tool = adaptMcpTool('srv', client, {
      name: 'op',
      inputSchema: { type: 'object' },
      ...(annotations ? { annotations } : {}),
    });
    expect(replayRuleOf(tool, {}, ctx)).toBe(expected);
  });
});

describe('outcome_unknown', () => {
  it('tells the model the call was interrupted, may or may not have taken effect, and to check first', () => {
    const error = outcomeUnknownError('bash');
    expect(error.code).toBe(OUTCOME_UNKNOWN);
    expect(error.code).toBe('outcome_unknown');
    expect(error.message).toMatch(/bash call was interrupted/);
    expect(error.message).toMatch(/may or may not have taken effect/);
    expect(error.message).toMatch(/not run again/);
    expect(error.message).toMatch(/[Cc]heck/);
  });
});
