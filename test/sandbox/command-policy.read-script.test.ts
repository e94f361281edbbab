import { describe, expect, it } from 'vitest';
import { readScript } from '../../src/sandbox/command-policy/read-script.js';
import { renderScript, type Script, type SimpleCommand } from '../../src/sandbox/command-policy/shell-script.js';

/*
 * What the policy makes of the shell grammar's tree, written back without quotes. Pipelines are
 * joined by "; " whatever joined them, groups render as ( … ). The cases the hand-written reader
 * had, where they still hold, and the grammar's own shapes (here-documents carrying a pipeline).
 */

const read = (text: string): Script => readScript(text).script;

function firstCommand(script: Script): SimpleCommand {
  const node = script.pipelines[0]?.nodes[0];
  if (node?.kind !== 'simple') throw new Error(`expected a simple command, got ${node?.kind}`);
  return node;
}

describe('readScript, rendered back', () => {
  const cases: [input: string, rendered: string][] = [
    ['echo hi', 'echo hi'],
    ['  echo   hi  ', 'echo hi'],
    [`r''m -r"f" /`, 'rm -rf /'],
    ['r\\m -rf \\/', 'rm -rf /'],
    ['echo \'a  b\' "c\\"d" \\$x', 'echo a  b c"d $x'],
    ['echo $\'\\x41\\t\\u00e9\' $"loc"', 'echo A\té loc'],
    ['ls \\\n-la', 'ls -la'],
    ['a && b || c; d & e', 'a; b; c; d &; e'],
    ['a\nb\n\nc', 'a; b; c'],
    ['a | b |& c', 'a | b | c'],
    ['( a; b ) > out', '( a; b ) > out'],
    ['{ a; b; } 2>&1', '( a; b ) 2>& 1'],
    ['f() { g | g & }; f', 'f() ( g | g & ); f'],
    ['function f { g; }', 'f() ( g )'],
    ['echo $(a; b) `c` <(d) >(e)', 'echo $(a; b) `c` <(d) >(e)'],
    ['echo "${x:-y}" $((1 + 2))', 'echo ${x:-y} $((1 + 2))'],
    ["bash <<< 'rm -rf /'", 'bash <<< rm -rf /'],
    ['cat <<EOF | sh\nrm -rf /\nEOF', 'cat << | sh'],
    ['cat <<EOF && rm -rf /\nx\nEOF', 'cat <<; rm -rf /'],
    ['ls # rm -rf /', 'ls'],
    ['# only a comment\nls', 'ls'],
    ['echo a#b', 'echo a#b'],
    ['x=1 y=2 cmd', 'x=1 y=2 cmd'],
    ['if true; then rm -rf /; fi', '( true; rm -rf / )'],
    ['', ''],
  ];

  it.each(cases)('%j → %j', (input, rendered) => {
    expect(renderScript(read(input))).toBe(rendered);
  });
});

describe('readScript, nested scripts and here-documents', () => {
  it('reads $(…) and backticks as nested scripts, keeping the word as written', () => {
    const command = firstCommand(read('echo "$(a; b)" `c | d`'));
    const parts = command.words.slice(1).map((word) => word.parts[0]);
    expect(parts.map((part) => part?.kind)).toEqual(['substitution', 'substitution']);
    expect(parts.map((part) => (part?.kind === 'substitution' ? renderScript(part.script) : ''))).toEqual([
      'a; b',
      'c | d',
    ]);
  });

  it('single quotes keep $(…) as data', () => {
    expect(firstCommand(read("echo '$(rm -rf /)'")).words[1]?.parts).toEqual([
      { kind: 'text', value: '$(rm -rf /)', quoted: true },
    ]);
  });

  it('reads an unquoted here-document body for substitutions, backticks too, and a quoted one as data', () => {
    const unquoted = firstCommand(read('cat <<EOF\n$(whoami) `id`\nEOF')).redirects[0]?.hereDocument;
    expect(unquoted?.expands).toBe(true);
    expect(
      unquoted?.parts
        .filter((p) => p.kind === 'substitution')
        .map((p) => (p.kind === 'substitution' ? renderScript(p.script) : '')),
    ).toEqual(['whoami', 'id']);
    const quoted = firstCommand(read("cat <<'EOF'\n$(whoami)\nEOF")).redirects[0]?.hereDocument;
    expect(quoted).toMatchObject({ expands: false, parts: [] });
  });

  it('strips leading tabs before the delimiter of <<-', () => {
    expect(firstCommand(read('cat <<-EOF\n\tx\n\tEOF\n')).redirects[0]?.hereDocument?.body).toBe('x\n');
  });

  it('says what the grammar cannot parse, and where it reads a line otherwise than bash', () => {
    expect(readScript('ls -la').unparseable).toBe(false);
    for (const text of ['echo "unterminated', '$(', 'if true; then', 'ls\n\\rm -rf /', '>>\nrm -rf /', 'echo > a b']) {
      expect(readScript(text).unparseable).toBe(true);
    }
  });

  it('never overflows the stack, however deep the nesting', () => {
    for (const deep of ['$('.repeat(100_000), '('.repeat(100_000), '{ '.repeat(100_000)]) {
      expect(() => readScript(deep)).not.toThrow();
    }
  });
});
