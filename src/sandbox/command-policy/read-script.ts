/*
 * From the shell grammar's syntax tree to a Script (src/sandbox/command-policy/shell-script.ts).
 * The grammar decides what is a command, a word, a quote or a redirection; this file only names
 * what it found, undoes quoting inside the tokens the grammar delimited (backslashes, ANSI-C
 * escapes) and smooths over a few of the grammar's shapes (a pipeline or a list carried inside a
 * here-document redirection; adjacent tokens bash reads as one word).
 */
import { parseBash, type SyntaxNode } from './bash-grammar.js';
import type {
  Assignment,
  Group,
  HereDocument,
  Loop,
  Pipeline,
  Redirect,
  Script,
  ShellNode,
  SimpleCommand,
  Word,
  WordPart,
} from './shell-script.js';

export interface ReadScript {
  readonly script: Script;
  /** The grammar could not parse the text: bash would refuse it or read it differently. */
  readonly unparseable: boolean;
  /** Syntax nested deeper than the reader follows was skipped. */
  readonly truncated: boolean;
}

export function readScript(source: string): ReadScript {
  const parsed = parseBash(source);
  const reader = new ScriptReader();
  const script = reader.statements(parsed.root.children);
  return {
    script,
    unparseable: parsed.hasError || misreadsNewline(parsed.root),
    truncated: parsed.truncated || reader.truncated,
  };
}

/**
 * An unquoted newline always ends a command in bash, but tree-sitter-bash lexes a newline
 * followed by a backslash (`ls⏎\rm -rf /`) into the next word, and lets a redirection's target
 * follow on the next line (`>>⏎bash`): where it did, the grammar read the line otherwise than
 * bash will.
 */
function misreadsNewline(node: SyntaxNode): boolean {
  if (node.type === 'word' && /(?:^|[^\\])\n/.test(node.text)) return true;
  if (node.type === 'file_redirect') {
    // It also takes the words after a target (`> out a b`) as more targets; bash passes them to the command.
    // A number after the target is the descriptor of the next redirection (`>& f 0>&1`), not a word.
    const targets = node.children.filter((c) => c.field === 'destination');
    const operator = node.children.find((c) => !c.named && c.field !== 'descriptor');
    const first = targets[0];
    if (targets.slice(1).some((target, i) => target.type !== 'number' && target.start !== targets[i]?.end)) return true;
    if (operator && first && node.text.slice(operator.end - node.start, first.start - node.start).includes('\n'))
      return true;
  }
  return node.children.some(misreadsNewline);
}

/** The text with the grammar's known misreadings avoided, meaning unchanged outside quotes: a blank before a backslash that starts a line. */
export function avoidingMisreadings(source: string): string {
  return source.replace(/\n(?=\\)/g, '\n ');
}

/** Node types that are commands or compound commands. */
const STATEMENTS = new Set([
  'command',
  'pipeline',
  'list',
  'redirected_statement',
  'subshell',
  'compound_statement',
  'if_statement',
  'while_statement',
  'for_statement',
  'c_style_for_statement',
  'case_statement',
  'function_definition',
  'negated_command',
  'variable_assignment',
  'variable_assignments',
  'declaration_command',
  'unset_command',
  'test_command',
  'ERROR',
]);

/** Node types inside a compound command that hold more of its statements. */
const CLAUSES = new Set(['elif_clause', 'else_clause', 'do_group', 'case_item']);

const WORDS = new Set([
  'word',
  'string',
  'raw_string',
  'ansi_c_string',
  'translated_string',
  'concatenation',
  'simple_expansion',
  'expansion',
  'command_substitution',
  'process_substitution',
  'arithmetic_expansion',
  'number',
  'brace_expression',
  'extglob_pattern',
  'regex',
  'test_operator',
  'variable_name',
  'special_variable_name',
  'command_name',
  '$',
]);

const UNBOUNDED_CONDITIONS = new Set(['true', ':']);

class ScriptReader {
  truncated = false;
  /** Substitution depth: each level re-enters `statements`. */
  private depth = 0;

  statements(nodes: readonly SyntaxNode[]): Script {
    const pipelines: Pipeline[] = [];
    for (const node of nodes) {
      if (node.type === '&' && !node.named) {
        const last = pipelines.pop();
        if (last) pipelines.push({ ...last, background: true });
        continue;
      }
      if (STATEMENTS.has(node.type)) pipelines.push(...this.statement(node));
      else if (CLAUSES.has(node.type)) pipelines.push(...this.statements(node.children).pipelines);
    }
    return { pipelines };
  }

  /** One statement: a list becomes several pipelines; anything else, one. */
  private statement(node: SyntaxNode): Pipeline[] {
    switch (node.type) {
      case 'list':
        return node.children.filter((c) => STATEMENTS.has(c.type)).flatMap((c) => this.statement(c));
      case 'pipeline':
        return [
          {
            nodes: node.children.filter((c) => STATEMENTS.has(c.type)).flatMap((c) => this.members(c)),
            background: false,
          },
        ];
      case 'negated_command':
        return node.children.filter((c) => STATEMENTS.has(c.type)).flatMap((c) => this.statement(c));
      case 'redirected_statement':
        return this.redirected(node);
      default:
        return [{ nodes: this.members(node), background: false }];
    }
  }

  /** A pipeline member; a list inside one (`a | (b && c)` parses so only in a group) is read as a group. */
  private members(node: SyntaxNode): ShellNode[] {
    if (node.type === 'pipeline')
      return node.children.filter((c) => STATEMENTS.has(c.type)).flatMap((c) => this.members(c));
    const one = this.node(node);
    return one ? [one] : [];
  }

  private node(node: SyntaxNode): ShellNode | undefined {
    switch (node.type) {
      case 'command':
        return this.command(node);
      case 'variable_assignment':
        return { kind: 'simple', assignments: [this.assignment(node)], words: [], redirects: [] };
      case 'variable_assignments':
        return {
          kind: 'simple',
          assignments: node.children.filter((c) => c.type === 'variable_assignment').map((c) => this.assignment(c)),
          words: [],
          redirects: [],
        };
      case 'declaration_command':
      case 'unset_command':
        return this.declaration(node);
      case 'test_command':
        return this.testCommand(node);
      case 'subshell':
        return this.group(node, { subshell: true });
      case 'compound_statement':
        return node.children[0]?.type === '((' ? this.arithmeticCommand(node) : this.group(node, {});
      case 'if_statement':
      case 'case_statement':
        return this.group(node, { header: this.headerWords(node) });
      case 'while_statement':
        return this.group(node, { loop: this.whileLoop(node) });
      case 'for_statement':
        return this.group(node, { header: this.headerWords(node), loop: this.forLoop(node) });
      case 'c_style_for_statement':
        return this.group(node, {
          loop: { kind: 'for', unbounded: !node.children.some((c) => c.field === 'condition') },
        });
      case 'function_definition':
        return this.functionDefinition(node);
      case 'negated_command':
      case 'list':
      case 'pipeline':
      case 'redirected_statement':
        return { kind: 'group', body: { pipelines: this.statement(node) }, redirects: [], subshell: false, header: [] };
      case 'ERROR':
        return this.errorNode(node);
      default:
        return undefined;
    }
  }

  private command(node: SyntaxNode): SimpleCommand {
    const assignments: Assignment[] = [];
    const redirects: Redirect[] = [];
    const wordNodes: SyntaxNode[] = [];
    for (const child of node.children) {
      if (child.type === 'variable_assignment') assignments.push(this.assignment(child));
      else if (child.field === 'redirect' || child.type === 'file_redirect' || child.type === 'herestring_redirect')
        redirects.push(...this.redirect(child));
      else if (child.type === 'command_name') wordNodes.push(...child.children);
      else if (WORDS.has(child.type)) wordNodes.push(child);
    }
    return { kind: 'simple', assignments, words: this.words(wordNodes), redirects };
  }

  /** `export A=1 B`, `local x`, `unset A`: the keyword and its operands; the assignments apart. */
  private declaration(node: SyntaxNode): SimpleCommand {
    const assignments: Assignment[] = [];
    const wordNodes: SyntaxNode[] = [];
    for (const child of node.children) {
      if (child.type === 'variable_assignment') assignments.push(this.assignment(child));
      else if (!child.named && /^[a-z]+$/.test(child.type)) wordNodes.push(child);
      else if (WORDS.has(child.type)) wordNodes.push(child);
    }
    return { kind: 'simple', assignments, words: this.words(wordNodes), redirects: [] };
  }

  /** `[[ -f x ]]`, `[ -d y ]`: a command named `[[` or `[` whose words are the expression's. */
  private testCommand(node: SyntaxNode): SimpleCommand {
    const leaves: SyntaxNode[] = [];
    const collect = (n: SyntaxNode): void => {
      for (const child of n.children) {
        if (WORDS.has(child.type)) leaves.push(child);
        else if (child.children.length > 0) collect(child);
        else if (!child.named && !['[[', ']]', '[', ']'].includes(child.type)) leaves.push(child);
      }
    };
    collect(node);
    const opener = node.children[0]?.type ?? '[[';
    return {
      kind: 'simple',
      assignments: [],
      words: [textWord(opener), ...leaves.map((leaf) => this.word([leaf]))],
      redirects: [],
    };
  }

  /** `(( i++ ))`: arithmetic only, save for the substitutions inside it. */
  private arithmeticCommand(node: SyntaxNode): SimpleCommand {
    const part: WordPart = { kind: 'arithmetic', raw: node.text, quoted: false, scripts: this.nestedScripts(node) };
    return { kind: 'simple', assignments: [], words: [{ parts: [part], raw: node.text }], redirects: [] };
  }

  private group(node: SyntaxNode, shape: { subshell?: boolean; header?: Word[]; loop?: Loop }): Group {
    const body = this.statements(node.children.filter((c) => c.field !== 'value'));
    return {
      kind: 'group',
      body,
      redirects: [],
      subshell: shape.subshell ?? false,
      header: shape.header ?? [],
      ...(shape.loop ? { loop: shape.loop } : {}),
    };
  }

  /** A `for` list, a `case` subject and its patterns. */
  private headerWords(node: SyntaxNode): Word[] {
    const words: Word[] = [];
    for (const child of node.children) {
      if (child.field === 'value' && WORDS.has(child.type)) words.push(this.word([child]));
      if (child.type === 'case_item') words.push(...this.headerWords(child));
    }
    return words;
  }

  private forLoop(node: SyntaxNode): Loop {
    const variable = node.children.find((c) => c.field === 'variable')?.text;
    return {
      kind: node.children[0]?.type === 'select' ? 'select' : 'for',
      unbounded: false,
      ...(variable ? { variable } : {}),
    };
  }

  private whileLoop(node: SyntaxNode): Loop {
    const kind = node.children[0]?.type === 'until' ? 'until' : 'while';
    const condition = node.children.filter((c) => c.field === 'condition' && STATEMENTS.has(c.type));
    const only = condition.length === 1 && condition[0]?.type === 'command' ? this.command(condition[0]) : undefined;
    const program = only && only.words.length === 1 ? plainText(only.words[0]) : undefined;
    const unbounded =
      program !== undefined && (kind === 'while' ? UNBOUNDED_CONDITIONS.has(program) : program === 'false');
    return { kind, unbounded };
  }

  private functionDefinition(node: SyntaxNode): ShellNode | undefined {
    const name = node.children.find((c) => c.field === 'name')?.text ?? '';
    const bodyNode = node.children.find((c) => c.field === 'body');
    const body = bodyNode ? this.node(bodyNode) : undefined;
    return body ? { kind: 'function', name, body } : undefined;
  }

  /** A statement with redirections; a here-document may carry the rest of a pipeline or a list. */
  private redirected(node: SyntaxNode): Pipeline[] {
    const redirects: Redirect[] = [];
    const carried: SyntaxNode[] = [];
    let bodyNode: SyntaxNode | undefined;
    for (const child of node.children) {
      if (child.field === 'body') bodyNode = child;
      else if (child.type.endsWith('_redirect')) {
        redirects.push(...this.redirect(child));
        if (child.type === 'heredoc_redirect') carried.push(...child.children.filter((c) => STATEMENTS.has(c.type)));
      }
    }
    const inner = bodyNode
      ? this.statement(bodyNode)
      : [
          {
            nodes: [{ kind: 'simple', assignments: [], words: [], redirects: [] } as SimpleCommand],
            background: false,
          },
        ];
    const withRedirects = inner.map((pipeline): Pipeline => ({
      ...pipeline,
      nodes: pipeline.nodes.map((n) => withRedirectsOn(n, redirects)),
    }));
    const pipeOn = carried.find((c) => c.type === 'pipeline');
    if (pipeOn && withRedirects.length > 0) {
      const last = withRedirects.pop() as Pipeline;
      const rest = pipeOn.children.filter((c) => STATEMENTS.has(c.type)).flatMap((c) => this.members(c));
      withRedirects.push({ ...last, nodes: [...last.nodes, ...rest] });
    }
    for (const more of carried) if (more !== pipeOn) withRedirects.push(...this.statement(more));
    return withRedirects;
  }

  private redirect(node: SyntaxNode): Redirect[] {
    const fd = node.children.find((c) => c.field === 'descriptor')?.text;
    const withFd = fd === undefined ? {} : { fd };
    if (node.type === 'heredoc_redirect') {
      // `cat <<EOF > out`: the grammar hangs redirections after a here-document inside it.
      const after = node.children.filter((c) => c.type.endsWith('_redirect')).flatMap((c) => this.redirect(c));
      return [
        { op: node.children.find((c) => !c.named)?.type ?? '<<', ...withFd, hereDocument: this.hereDocument(node) },
        ...after,
      ];
    }
    if (node.type === 'herestring_redirect') {
      return [{ op: '<<<', ...withFd, target: this.word(node.children.filter((c) => WORDS.has(c.type))) }];
    }
    const op = node.children.find((c) => !c.named && c.field !== 'descriptor')?.type ?? '>';
    const targetNodes = adjacentRun(
      node.children.filter(
        (c) => c.field === 'destination' || (c.named && WORDS.has(c.type) && c.field !== 'descriptor'),
      ),
    );
    return [targetNodes.length > 0 ? { op, ...withFd, target: this.word(targetNodes) } : { op, ...withFd }];
  }

  private hereDocument(node: SyntaxNode): HereDocument {
    const start = node.children.find((c) => c.type === 'heredoc_start')?.text ?? '';
    const bodyNode = node.children.find((c) => c.type === 'heredoc_body');
    const stripTabs = node.children.some((c) => c.type === '<<-');
    const rawBody = bodyNode?.text ?? '';
    const body = stripTabs ? rawBody.replace(/^\t+/gm, '') : rawBody;
    const expands = !/['"\\]/.test(start);
    return { body, expands, parts: expands && bodyNode ? this.hereDocumentParts(bodyNode) : [] };
  }

  /** An expanding here-document's body: its expansions and substitutions, backticks too (the grammar leaves those as text). */
  private hereDocumentParts(body: SyntaxNode): WordPart[] {
    const parts: WordPart[] = [];
    for (const child of body.children) {
      if (child.type !== 'heredoc_content') {
        parts.push(...this.parts(child, true));
        continue;
      }
      for (const match of child.text.matchAll(/`((?:[^`\\]|\\.)*)`/g)) {
        parts.push({
          kind: 'substitution',
          raw: match[0],
          quoted: true,
          script: this.nestedText((match[1] ?? '').replace(/\\([`\\$])/g, '$1')),
        });
      }
      parts.push({ kind: 'text', value: child.text, quoted: true });
    }
    return parts;
  }

  private assignment(node: SyntaxNode): Assignment {
    const name = node.children.find((c) => c.field === 'name')?.text ?? node.children[0]?.text ?? '';
    const valueNodes = node.children.filter((c) => c.field === 'value');
    const array = valueNodes.find((c) => c.type === 'array');
    if (array) return { name, array: array.children.filter((c) => WORDS.has(c.type)).map((c) => this.word([c])) };
    return valueNodes.length > 0 ? { name, value: this.word(valueNodes) } : { name };
  }

  /** Argument nodes with nothing between them are one word to bash (`$"…"` comes as two tokens). */
  private words(nodes: readonly SyntaxNode[]): Word[] {
    const words: Word[] = [];
    let run: SyntaxNode[] = [];
    for (const node of nodes) {
      const previous = run.at(-1);
      if (previous && previous.end !== node.start) {
        words.push(this.word(run));
        run = [];
      }
      run.push(node);
    }
    if (run.length > 0) words.push(this.word(run));
    return words;
  }

  private word(nodes: readonly SyntaxNode[]): Word {
    // `$"text"` (a translated string) comes as a `$` token and a string: bash reads it as the string.
    const translated = nodes.filter(
      (node, i) => !(node.type === '$' && nodes[i + 1]?.type === 'string' && nodes[i + 1]?.start === node.end),
    );
    const parts = translated.flatMap((node) => this.parts(node, false));
    const first = nodes[0];
    const last = nodes.at(-1);
    const raw = first && last ? nodes.map((n) => n.text).join('') : '';
    return { parts: mergeText(parts), raw };
  }

  private parts(node: SyntaxNode, quoted: boolean): WordPart[] {
    switch (node.type) {
      case 'word':
        return [{ kind: 'text', value: quoted ? node.text : unescapeUnquoted(node.text), quoted }];
      case 'raw_string':
        return [{ kind: 'text', value: node.text.slice(1, -1), quoted: true }];
      case 'ansi_c_string':
        return [{ kind: 'text', value: decodeAnsiC(node.text.slice(2, -1)), quoted: true }];
      case 'string':
      case 'translated_string':
        return node.children.flatMap((child) =>
          child.type === 'string_content'
            ? [{ kind: 'text' as const, value: unescapeDoubleQuoted(child.text), quoted: true }]
            : child.named
              ? this.parts(child, true)
              : [],
        );
      case 'concatenation':
      case 'command_name':
        return node.children.flatMap((child) => this.parts(child, quoted));
      case 'simple_expansion':
      case 'expansion':
        return [this.parameter(node, quoted)];
      case 'command_substitution':
        return [{ kind: 'substitution', raw: node.text, quoted, script: this.nested(node.children) }];
      case 'process_substitution':
        return [{ kind: 'process', raw: node.text, script: this.nested(node.children) }];
      case 'arithmetic_expansion':
        return [{ kind: 'arithmetic', raw: node.text, quoted, scripts: this.nestedScripts(node) }];
      case '"':
        return [];
      default:
        // Numbers, patterns, brace ranges, stray tokens: their text; any substitution inside still runs.
        return [
          { kind: 'text', value: node.text, quoted },
          ...this.nestedScripts(node).map((script): WordPart => ({ kind: 'process', raw: '', script })),
        ];
    }
  }

  /** `$x`, `${x…}`; for `-`, `=`, `+`, `?` forms, the operand as a word. */
  private parameter(node: SyntaxNode, quoted: boolean): WordPart {
    const operatorAt = node.children.findIndex((c) => c.field === 'operator' && /^:?[-=+?]$/.test(c.type));
    const operandNodes = operatorAt < 0 ? [] : node.children.slice(operatorAt + 1).filter((c) => c.type !== '}');
    const operand = operandNodes.length > 0 ? { operand: this.word(operandNodes) } : {};
    return { kind: 'parameter', raw: node.text, quoted, ...operand, scripts: this.nestedScripts(node) };
  }

  /** The scripts of every substitution below `node`. */
  private nestedScripts(node: SyntaxNode): Script[] {
    const scripts: Script[] = [];
    for (const child of node.children) {
      if (child.type === 'command_substitution' || child.type === 'process_substitution')
        scripts.push(this.nested(child.children));
      else scripts.push(...this.nestedScripts(child));
    }
    return scripts;
  }

  private nested(nodes: readonly SyntaxNode[]): Script {
    this.depth++;
    try {
      return this.statements(nodes);
    } finally {
      this.depth--;
    }
  }

  /** Shell text found as text (backticks in a here-document): read by the grammar too. */
  private nestedText(text: string): Script {
    const inner = readScript(text);
    this.truncated ||= inner.truncated;
    return inner.script;
  }

  /** What the grammar could not place: its statements, or its words as a command. */
  private errorNode(node: SyntaxNode): ShellNode | undefined {
    const statements = node.children.filter((c) => STATEMENTS.has(c.type));
    if (statements.length > 0)
      return { kind: 'group', body: this.statements(node.children), redirects: [], subshell: false, header: [] };
    const words = node.children.filter((c) => WORDS.has(c.type) || (!c.named && c.type === '{'));
    if (words.length === 0) return undefined;
    // `{rm,-rf,/}` fails to parse; read the words as one run so brace expansion sees them whole.
    return {
      kind: 'simple',
      assignments: [],
      words: [{ parts: [{ kind: 'text', value: node.text, quoted: false }], raw: node.text }],
      redirects: [],
    };
  }
}

/** The first node and those that follow it with nothing between: one word to bash. */
function adjacentRun(nodes: readonly SyntaxNode[]): SyntaxNode[] {
  const run: SyntaxNode[] = [];
  for (const node of nodes) {
    const last = run.at(-1);
    if (last && last.end !== node.start) break;
    run.push(node);
  }
  return run;
}

function withRedirectsOn(node: ShellNode, redirects: readonly Redirect[]): ShellNode {
  if (redirects.length === 0) return node;
  if (node.kind === 'function') return node;
  return { ...node, redirects: [...node.redirects, ...redirects] };
}

function textWord(text: string): Word {
  return { parts: [{ kind: 'text', value: text, quoted: false }], raw: text };
}

/** The word's text when it is only literal text. */
function plainText(word: Word | undefined): string | undefined {
  if (!word || !word.parts.every((p) => p.kind === 'text')) return undefined;
  return word.parts.map((p) => (p.kind === 'text' ? p.value : '')).join('');
}

function mergeText(parts: WordPart[]): WordPart[] {
  const merged: WordPart[] = [];
  for (const part of parts) {
    const last = merged.at(-1);
    if (part.kind === 'text' && last?.kind === 'text' && last.quoted === part.quoted)
      merged[merged.length - 1] = { ...last, value: last.value + part.value };
    else if (!(part.kind === 'text' && part.value === '' && part.quoted === false)) merged.push(part);
  }
  return merged;
}

/** Outside quotes a backslash keeps the next character literal; before a newline it joins lines. */
function unescapeUnquoted(text: string): string {
  return text.replace(/\\(\n|.)/gs, (_m, c: string) => (c === '\n' ? '' : c));
}

/** Inside double quotes a backslash escapes only `$`, backquote, `"`, `\` and newline. */
function unescapeDoubleQuoted(text: string): string {
  return text.replace(/\\([$`"\\\n])/g, (_m, c: string) => (c === '\n' ? '' : c));
}

const ANSI_C_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  E: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '?': '?',
};

/** `$'…'`: `\x72`, `\u00e9`, `\162`, `\cA`, `\n`… */
function decodeAnsiC(text: string): string {
  return text.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (match, escape: string) => {
      const head = escape.charAt(0);
      if (head === 'x' || head === 'u' || head === 'U') {
        const point = Number.parseInt(escape.slice(1), 16);
        return point <= 0x10ffff ? String.fromCodePoint(point) : '';
      }
      if (/[0-7]/.test(head)) return String.fromCharCode(Number.parseInt(escape, 8) & 0xff);
      if (head === 'c') return String.fromCharCode(escape.charCodeAt(1) & 0x1f);
      return ANSI_C_ESCAPES[head] ?? match;
    },
  );
}
