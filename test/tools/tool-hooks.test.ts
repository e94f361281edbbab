/*
 * The Tool SPI's self-description hooks, as a conformance table over every builtin: what the
 * approval gate learns from a tool about one call (is this call destructive, what does a
 * prompt show of it) comes from the tool itself, never from policy code naming builtins.
 */
import { describe, expect, it } from 'vitest';
import { decideApproval } from '../../src/approval/index.js';
import { builtinTools } from '../../src/tools/builtins/builtin-tools.js';
import type { AnyTool } from '../../src/tools/tool.js';

const tool = (name: string): AnyTool => {
  const found = builtinTools.find((t) => t.name === name);
  if (!found) throw new Error(`no builtin ${name}`);
  return found;
};

const patch = [
  '*** Begin Patch',
  '*** Add File: new.txt',
  '+hi',
  '*** Update File: a.ts',
  '*** Move to: b.ts',
  '@@',
  '-x',
  '+y',
  '*** End Patch',
].join('\n');

// [tool, input, destructive call?, lines an approval prompt shows (undefined: plain arguments only)]
const rows: [string, unknown, boolean, string[] | undefined][] = [
  ['file_ops', { operation: 'delete', path: 'a.txt' }, true, undefined],
  ['file_ops', { operation: 'move', path: 'a.txt', destination: 'b.txt' }, true, undefined],
  ['file_ops', { operation: 'copy', path: 'a.txt', destination: 'b.txt' }, false, undefined],
  ['file_ops', { operation: 'list', path: '.' }, false, undefined],
  ['apply_patch', { patch }, false, ['add new.txt', 'update a.ts -> b.ts']],
  ['apply_patch', { patch: 'not a patch' }, false, undefined],
  ['bash', { command: 'ls' }, false, undefined],
  ['file_read', { path: 'a.txt' }, false, undefined],
  ['file_write', { path: 'a.txt', content: 'x' }, false, undefined],
];

describe('tool self-description hooks', () => {
  it.each(rows)('%s %j: destructive=%s, described as %j', (name, input, destructive, lines) => {
    const t = tool(name);
    const parsed = t.input.parse(input);
    expect(t.destructiveFor?.(parsed) ?? false).toBe(destructive);
    expect(t.describe?.(parsed)?.lines).toEqual(lines);
  });

  it('every builtin that declares a hook keeps it a pure function of the input', () => {
    for (const t of builtinTools) {
      for (const hook of [t.destructiveFor, t.describe]) {
        if (hook) expect(hook.length, `${t.name}: a hook takes only the input`).toBeLessThanOrEqual(1);
      }
    }
  });

  it('a destructive call of a tool that is not always destructive is asked about under the auto tier', () => {
    const fileOps = tool('file_ops');
    const ruling = (input: unknown) =>
      decideApproval({
        tier: 'auto',
        overrides: {},
        tool: fileOps,
        destructiveOperation: fileOps.destructiveFor!(fileOps.input.parse(input)),
      });
    expect(ruling({ operation: 'delete', path: 'a.txt' }).decision).toBe('ask');
    expect(ruling({ operation: 'copy', path: 'a.txt', destination: 'b.txt' }).decision).toBe('allow');
  });
});
