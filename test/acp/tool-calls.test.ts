/* How a tool call looks in the editor: title, locations from its claim, diffs from its arguments, result content. */
import { describe, expect, it } from 'vitest';
import { resultContent, toolCallView, type ToolCallFacts } from '../../src/acp/tool-calls.js';
import { Claims } from '../../src/concurrency/index.js';

const W = '/w';
const facts = (tool: string, args: unknown, claim = Claims.global()): ToolCallFacts => ({
  tool,
  args,
  claim,
  workspace: W,
});
const text = (value: string) => ({ type: 'content', content: { type: 'text', text: value } });

describe('toolCallView', () => {
  it.each([
    [facts('file_read', { path: 'a.txt' }), 'Read a.txt'],
    [facts('file_read', { path: 'a.txt', offset: 10, limit: 5 }), 'Read a.txt (lines 10–14)'],
    [facts('file_read', { path: 'a.txt', offset: 10 }), 'Read a.txt (lines 10–end)'],
    [facts('file_write', { path: 'n.txt', content: 'x' }), 'Write n.txt'],
    [facts('file_edit', { path: 'c.txt', old: 'a', new: 'b' }), 'Edit c.txt'],
    [
      facts('apply_patch', { patch: '*** Begin Patch\n*** Add File: x.ts\n+x\n*** Delete File: y.ts\n*** End Patch' }),
      'Patch x.ts, y.ts',
    ],
    [facts('file_ops', { operation: 'move', path: 'a', destination: 'b' }), 'Move a to b'],
    [facts('file_ops', { operation: 'search', path: 'src', pattern: 'TODO' }), 'Search src for TODO'],
    [facts('file_ops', { operation: 'mkdir', path: 'd' }), 'Create directory d'],
    [facts('bash', { command: 'npm test' }), '`npm test`'],
    [
      facts('bash', { command: 'curl -H "Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789" x' }),
      expect.not.stringContaining('abcdefghijklmnop'),
    ],
    [facts('node_invoke', { node: 'gpu-1', command: 'nvidia-smi' }), 'On gpu-1: `nvidia-smi`'],
    [facts('session_send', { session: 'review', message: 'look' }), 'Delegate to session review'],
    [facts('fs__read_file', { path: 'a.txt' }), 'fs__read_file a.txt'],
    [facts('file_edit', { path: 42 }), 'file_edit'],
  ])('%j is titled %s', (call, title) => {
    expect(toolCallView(call).title).toEqual(title);
  });

  it('takes its locations from the claim: the paths read or written, a line range at its first line', () => {
    expect(toolCallView(facts('file_read', { path: 'a.txt' }, Claims.shared(['/w/a.txt']))).locations).toEqual([
      { path: '/w/a.txt' },
    ]);
    expect(
      toolCallView(facts('file_read', { path: 'a.txt', offset: 7 }, Claims.shared(['/w/a.txt']))).locations,
    ).toEqual([{ path: '/w/a.txt', line: 7 }]);
    expect(
      toolCallView(
        facts('file_ops', { operation: 'move', path: 'a', destination: 'b' }, Claims.paths(['/w/b', '/w/a'])),
      ).locations,
    ).toEqual([{ path: '/w/a' }, { path: '/w/b' }]);
    expect(toolCallView(facts('bash', { command: 'ls' }, Claims.global())).locations).toEqual([]);
  });

  it('shows file edits as diffs with absolute paths: edit old and new, write new content, each patched file', () => {
    expect(toolCallView(facts('file_edit', { path: 'src/c.ts', old: 'let', new: 'const' })).content).toEqual([
      { type: 'diff', path: '/w/src/c.ts', oldText: 'let', newText: 'const' },
    ]);
    expect(toolCallView(facts('file_write', { path: '/w/n.txt', content: 'new\n' })).content).toEqual([
      { type: 'diff', path: '/w/n.txt', oldText: null, newText: 'new\n' },
    ]);
    const patch = [
      '*** Begin Patch',
      '*** Add File: added.ts',
      '+one',
      '*** Update File: old.ts',
      '*** Move to: new.ts',
      '@@',
      ' keep',
      '-gone',
      '+here',
      '@@',
      '-x',
      '+y',
      '*** Delete File: dead.ts',
      '*** End Patch',
    ].join('\n');
    expect(toolCallView(facts('apply_patch', { patch })).content).toEqual([
      { type: 'diff', path: '/w/added.ts', oldText: null, newText: 'one\n' },
      { type: 'diff', path: '/w/new.ts', oldText: 'keep\ngone\n⋯\nx', newText: 'keep\nhere\n⋯\ny' },
    ]);
    expect(toolCallView(facts('file_read', { path: 'a' })).content).toEqual([]);
  });
});

describe('resultContent', () => {
  it.each([
    [
      'a failure, as its code and message',
      facts('file_edit', { path: 'c', old: 'a', new: 'b' }),
      { ok: false, error: { code: 'edit_failed', message: 'old text not found' } },
      [text('edit_failed: old text not found')],
    ],
    [
      'an edit, as its diff',
      facts('file_edit', { path: 'c', old: 'a', new: 'b' }),
      { ok: true, output: { path: 'c', replacements: 1 } },
      [{ type: 'diff', path: '/w/c', oldText: 'a', newText: 'b' }],
    ],
    [
      'a read, as the text in a code block',
      facts('file_read', { path: 'a' }),
      { ok: true, output: { path: 'a', content: 'x\n', totalLines: 1 } },
      [text('```\nx\n```')],
    ],
    [
      'a command, as its output and a non-zero exit code',
      facts('bash', { command: 'false' }),
      { ok: true, output: { exitCode: 1, output: 'no' } },
      [text('```\nno\n```\nexit code 1')],
    ],
    [
      'a command that succeeded, as its output',
      facts('bash', { command: 'true' }),
      { ok: true, output: { exitCode: 0, output: '' } },
      [text('```\n\n```')],
    ],
    ['an MCP tool text, as it is', facts('fs__read_file', {}), { ok: true, output: 'hello' }, [text('hello')]],
    [
      'anything else, as JSON',
      facts('file_ops', { operation: 'stats', path: 'a' }),
      { ok: true, output: { size: 1 } },
      [text('```json\n{\n  "size": 1\n}\n```')],
    ],
    ['nothing, as nothing', facts('hold', {}), { ok: true, output: '' }, []],
  ])('shows %s', (_what, call, result, content) => {
    expect(resultContent(call, result)).toEqual(content);
  });
});
