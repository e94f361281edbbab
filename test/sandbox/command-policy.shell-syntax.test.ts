import { describe, expect, it } from 'vitest';
import { parseShell, renderScript, type Script, type SimpleCommand } from '../../src/sandbox/command-policy/shell-syntax.js';

/*
 * The shell reader behind the command policy: what it makes of a command line, written back
 * without quotes. Pipelines are joined by "; " whatever joined them, groups render as ( … ).
 */

const read = (text: string): Script => parseShell(text, 16).script;

function firstCommand(script: Script): SimpleCommand {
  const node = script.pipelines[0]?.nodes[0];
  if (node?.kind !== 'simple') throw new Error(`expected a simple command, got ${node?.kind}`);
  return node;
}

describe('parseShell, rendered back', () => {
  const cases: [input: string, rendered: string][] = [
    ['echo hi', 'echo hi'],
    ['  echo   hi  ', 'echo hi'],
    [`r''m -r"f" /`, 'rm -rf /'],
    ['r\\m -rf \\/', 'rm -rf /'],
    ["echo 'a  b' \"c\\\"d\" \\$x", 'echo a  b c"d $x'],
    ["echo $'\\x41\\t\\u00e9' $\"loc\"", 'echo A\té loc'],
    ['ls \\\n-la', 'ls -la'],
    ['a && b || c; d & e', 'a; b; c; d &; e'],
    ['a\nb\n\nc', 'a; b; c'],
    ['a | b |& c', 'a | b | c'],
    ['( a; b ) > out', '( a; b ) > out'],
    ['{ a; b; } 2>&1', '( a; b ) >& 1'],
    ['f() { g | g & }; f', 'f() ( g | g & ); f'],
    ['function f { g; }', 'f() ( g )'],
    ['echo $(a; b) `c` <(d) >(e)', 'echo $(a; b) `c` <(d) >(e)'],
    ['echo "${x:-y}" $((1 + 2))', 'echo ${x:-y} $((1 + 2))'],
    ['cat <<EOF > out\nline $x\nEOF\necho after', 'cat << EOF > out; echo after'],
    ["bash <<< 'rm -rf /'", 'bash <<< rm -rf /'],
    ['ls # rm -rf /', 'ls'],
    ['# only a comment\nls', 'ls'],
    ['echo a#b', 'echo a#b'],
    ['arr=(a b) cmd', 'arr=(a b) cmd'],
    ['echo @(a|b) {a,b}', 'echo @(a|b) {a,b}'],
    ['{a,b}', '{a,b}'],
    ['echo "unterminated', 'echo unterminated'],
    ["echo 'unterminated", 'echo unterminated'],
    ['echo $(unterminated', 'echo $(unterminated'],
    [')) ;; && ||', ''],
    ['', ''],
  ];

  it.each(cases)('%j → %j', (input, rendered) => {
    expect(renderScript(read(input))).toBe(rendered);
  });
});

describe('parseShell, nested scripts', () => {
  it('reads $(…) and backticks as nested scripts, keeping the word as written', () => {
    const command = firstCommand(read('echo "$(a; b)" `c | d`'));
    expect(command.words.map((w) => w.text)).toEqual(['echo', '$(a; b)', '`c | d`']);
    expect(command.words[1]?.nested.map(renderScript)).toEqual(['a; b']);
    expect(command.words[2]?.nested.map(renderScript)).toEqual(['c | d']);
  });

  it('single quotes keep $(…) as data', () => {
    expect(firstCommand(read("echo '$(rm -rf /)'")).words[1]?.nested).toEqual([]);
  });

  it('reads an unquoted here-document body for substitutions, and a quoted one as data', () => {
    const unquoted = firstCommand(read('cat <<EOF\n$(whoami)\nEOF')).redirects[0];
    expect(unquoted?.body).toBe('$(whoami)');
    expect(unquoted?.bodyNested?.map(renderScript)).toEqual(['whoami']);
    const quoted = firstCommand(read("cat <<'EOF'\n$(whoami)\nEOF")).redirects[0];
    expect(quoted?.body).toBe('$(whoami)');
    expect(quoted?.bodyNested).toBeUndefined();
  });

  it('strips leading tabs before the delimiter of <<-', () => {
    expect(firstCommand(read('cat <<-EOF\n\tx\n\tEOF\n')).redirects[0]?.body).toBe('\tx');
  });

  it('says when nesting went deeper than it reads, and never overflows the stack', () => {
    expect(parseShell('$(a)', 16).truncated).toBe(false);
    for (const deep of ['$('.repeat(100_000), '('.repeat(100_000), '{ '.repeat(100_000), 'f() '.repeat(100_000)]) {
      expect(parseShell(deep, 16).truncated).toBe(true);
    }
  });
});
