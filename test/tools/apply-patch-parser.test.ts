import { describe, expect, it } from 'vitest';
import type { ParsePatchResult, PatchOp } from '../../src/tools/builtins/index.js';
import { applyHunks, parsePatch, patchPaths } from '../../src/tools/builtins/index.js';

const envelope = (...body: string[]): string => ['*** Begin Patch', ...body, '*** End Patch'].join('\n');
const ok = (...ops: PatchOp[]): ParsePatchResult => ({ ok: true, ops });
const error = (pattern: RegExp): RegExp => pattern;

describe('parsePatch', () => {
  const cases: [description: string, patch: string, expected: ParsePatchResult | RegExp][] = [
    [
      'add a file',
      envelope('*** Add File: src/new.ts', '+line 1', '+', '+line 3'),
      ok({ kind: 'add', path: 'src/new.ts', content: 'line 1\n\nline 3\n' }),
    ],
    ['add an empty file', envelope('*** Add File: empty.txt'), ok({ kind: 'add', path: 'empty.txt', content: '' })],
    ['delete a file', envelope('*** Delete File: old.ts'), ok({ kind: 'delete', path: 'old.ts' })],
    [
      'update with one hunk',
      envelope('*** Update File: a.ts', '@@', ' keep', '-old', '+new'),
      ok({
        kind: 'update',
        path: 'a.ts',
        hunks: [
          {
            line: 3,
            endOfFile: false,
            lines: [
              { kind: 'context', text: 'keep' },
              { kind: 'remove', text: 'old' },
              { kind: 'add', text: 'new' },
            ],
          },
        ],
      }),
    ],
    [
      'update with @@ context headers and several hunks',
      envelope(
        '*** Update File: a.ts',
        '@@ function one() {',
        '-  return 1;',
        '+  return 10;',
        '@@ function two() {',
        '-  return 2;',
        '+  return 20;',
      ),
      ok({
        kind: 'update',
        path: 'a.ts',
        hunks: [
          {
            anchor: 'function one() {',
            line: 3,
            endOfFile: false,
            lines: [
              { kind: 'remove', text: '  return 1;' },
              { kind: 'add', text: '  return 10;' },
            ],
          },
          {
            anchor: 'function two() {',
            line: 6,
            endOfFile: false,
            lines: [
              { kind: 'remove', text: '  return 2;' },
              { kind: 'add', text: '  return 20;' },
            ],
          },
        ],
      }),
    ],
    [
      'update and move',
      envelope('*** Update File: old/a.ts', '*** Move to: new/a.ts', '@@', '-x', '+y'),
      ok({
        kind: 'update',
        path: 'old/a.ts',
        moveTo: 'new/a.ts',
        hunks: [
          {
            line: 4,
            endOfFile: false,
            lines: [
              { kind: 'remove', text: 'x' },
              { kind: 'add', text: 'y' },
            ],
          },
        ],
      }),
    ],
    [
      'pure rename',
      envelope('*** Update File: a.ts', '*** Move to: b.ts'),
      ok({ kind: 'update', path: 'a.ts', moveTo: 'b.ts', hunks: [] }),
    ],
    [
      'hunk anchored at the end of the file',
      envelope('*** Update File: a.ts', '@@', ' last', '+appended', '*** End of File'),
      ok({
        kind: 'update',
        path: 'a.ts',
        hunks: [
          {
            line: 3,
            endOfFile: true,
            lines: [
              { kind: 'context', text: 'last' },
              { kind: 'add', text: 'appended' },
            ],
          },
        ],
      }),
    ],
    [
      'a blank hunk line is an empty context line',
      envelope('*** Update File: a.ts', '@@', ' a', '', '-b'),
      ok({
        kind: 'update',
        path: 'a.ts',
        hunks: [
          {
            line: 3,
            endOfFile: false,
            lines: [
              { kind: 'context', text: 'a' },
              { kind: 'context', text: '' },
              { kind: 'remove', text: 'b' },
            ],
          },
        ],
      }),
    ],
    [
      'several files, CRLF line ends and blank lines around the envelope',
      `\r\n${envelope('*** Add File: a.txt', '+a', '*** Delete File: b.txt').replaceAll('\n', '\r\n')}\r\n\r\n`,
      ok({ kind: 'add', path: 'a.txt', content: 'a\n' }, { kind: 'delete', path: 'b.txt' }),
    ],
    [
      'a path that escapes parses; the workspace check refuses it at apply time',
      envelope('*** Delete File: ../outside.txt'),
      ok({ kind: 'delete', path: '../outside.txt' }),
    ],
    [
      'an absolute path parses likewise',
      envelope('*** Add File: /etc/evil', '+x'),
      ok({ kind: 'add', path: '/etc/evil', content: 'x\n' }),
    ],
    ['empty patch', '', error(/^the patch is empty/)],
    ['only whitespace', ' \n\n', error(/^the patch is empty/)],
    [
      'missing Begin Patch',
      '*** Add File: a\n+x\n*** End Patch',
      error(/^line 1: the patch must start with "\*\*\* Begin Patch"/),
    ],
    [
      'missing End Patch',
      '*** Begin Patch\n*** Add File: a\n+x',
      error(/^line 3: the patch must end with "\*\*\* End Patch"/),
    ],
    ['Begin Patch alone', '*** Begin Patch', error(/^line 1: the patch must end with/)],
    ['no file operations', envelope(), error(/^line 2: the patch changes no files/)],
    ['unknown directive', envelope('*** Rename File: a'), error(/^line 2: unknown directive "\*\*\* Rename File: a"/)],
    ['text outside a file section', envelope('hello'), error(/^line 2: expected a file directive/)],
    [
      'add line without "+"',
      envelope('*** Add File: a.txt', '+ok', 'oops'),
      error(/^line 4: every line of Add File a\.txt must start with "\+"/),
    ],
    [
      'hunk line without prefix',
      envelope('*** Update File: a.ts', '@@', ' ok', 'oops'),
      error(/^line 5: hunk line in Update File a\.ts must start with " ", "-" or "\+", got "oops"/),
    ],
    ['update without "@@"', envelope('*** Update File: a.ts', '-x'), error(/^line 3: expected "@@" to start a hunk/)],
    [
      'update without hunks or move',
      envelope('*** Update File: a.ts'),
      error(/^line 2: Update File a\.ts has no hunks/),
    ],
    [
      'empty hunk',
      envelope('*** Update File: a.ts', '@@', '@@', '-x'),
      error(/^line 3: hunk in Update File a\.ts has no lines/),
    ],
    ['directive without a path', envelope('*** Delete File:   '), error(/^line 2: \*\*\* Delete File: needs a path/)],
    [
      'Move to without Update File',
      envelope('*** Move to: b.ts'),
      error(/^line 2: "\*\*\* Move to:" must directly follow/),
    ],
    [
      'End Patch in the middle',
      envelope('*** Delete File: a', '*** End Patch', '*** Delete File: b'),
      error(/^line 3: "\*\*\* End Patch" must be the last line/),
    ],
  ];

  it.each(cases)('%s', (_description, patch, expected) => {
    const result = parsePatch(patch);
    if (expected instanceof RegExp) {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error).toMatch(expected);
    } else {
      expect(result).toStrictEqual(expected);
    }
  });

  it('patchPaths lists every path, move targets included', () => {
    const parsed = parsePatch(
      envelope('*** Add File: a', '+x', '*** Update File: b', '*** Move to: c', '*** Delete File: d'),
    );
    expect(parsed.ok && patchPaths(parsed.ops)).toStrictEqual(['a', 'b', 'c', 'd']);
  });
});

describe('applyHunks', () => {
  const hunksOf = (...body: string[]) => {
    const parsed = parsePatch(envelope('*** Update File: f', ...body));
    if (!parsed.ok || parsed.ops[0]?.kind !== 'update')
      throw new Error(`test patch does not parse: ${JSON.stringify(parsed)}`);
    return parsed.ops[0].hunks;
  };

  const cases: [description: string, before: string, hunk: string[], after: string | RegExp][] = [
    ['replaces a line in context', 'a\nb\nc\n', ['@@', ' a', '-b', '+B', ' c'], 'a\nB\nc\n'],
    ['ignores trailing whitespace when matching', 'a  \nb\t\nc\n', ['@@', ' a', '-b', '+B'], 'a  \nB\nc\n'],
    [
      'an @@ anchor picks the occurrence after it',
      'f1\n  x\nf2\n  x\n',
      ['@@ f2', '-  x', '+  y'],
      'f1\n  x\nf2\n  y\n',
    ],
    ['hunks apply in order', 'x\nx\nx\n', ['@@', '-x', '+1', '@@', '-x', '+2'], '1\n2\nx\n'],
    ['a pure addition without anchor appends', 'a\n', ['@@', '+b'], 'a\nb\n'],
    ['a pure addition after an anchor inserts below it', 'a\nc\n', ['@@ a', '+b'], 'a\nb\nc\n'],
    ['End of File anchors at the end', 'x\ny\nx\n', ['@@', '-x', '+z', '*** End of File'], 'x\ny\nz\n'],
    ['keeps CRLF line ends', 'a\r\nb\r\n', ['@@', ' a', '-b', '+c'], 'a\r\nc\r\n'],
    ['keeps a missing final newline missing', 'a\nb', ['@@', '-b', '+c'], 'a\nc'],
    ['removing every line leaves an empty file', 'a\n', ['@@', '-a'], ''],
    ['a context mismatch fails', 'a\nb\n', ['@@', ' a', '-c'], /hunk at patch line 3 does not match[\s\S]*  a\n  c/],
    ['an anchor that matches nothing fails', 'a\n', ['@@ nowhere', '-a'], /"@@ nowhere" line/],
    [
      'End of File fails when the lines are elsewhere',
      'x\ny\n',
      ['@@', '-x', '*** End of File'],
      /at the end of the file/,
    ],
  ];

  it.each(cases)('%s', (_description, before, hunk, after) => {
    const result = applyHunks(before, hunksOf(...hunk));
    if (after instanceof RegExp) {
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error).toMatch(after);
    } else {
      expect(result).toStrictEqual({ ok: true, text: after });
    }
  });
});
