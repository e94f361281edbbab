/*
 * A small, forgiving reader of POSIX/bash syntax for the command policy. It turns a command
 * line into pipelines of simple commands (words with quotes and escapes removed, redirections),
 * groups, function definitions, and the scripts nested in $(…), `…`, <(…), >(…) and
 * here-documents. It never throws and never runs anything: where the text is not valid shell
 * it reads on as best it can, because the policy judges what a shell might run.
 */

export interface Word {
  /** The word with quotes and escapes removed; substitutions are kept as written. */
  readonly text: string;
  /** Scripts the shell runs while expanding the word: $(…), `…`, <(…), >(…). */
  readonly nested: readonly Script[];
}

export interface Redirect {
  /** `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&`, `<`, `<&`, `<<`, `<<-` or `<<<`. */
  readonly op: string;
  /** The file, the fd, the here-string or the here-document's delimiter. */
  readonly target: Word;
  /** A here-document's body. */
  readonly body?: string;
  /** Scripts run while expanding an unquoted here-document's body. */
  readonly bodyNested?: readonly Script[];
}

export interface SimpleCommand {
  readonly kind: 'simple';
  readonly words: readonly Word[];
  readonly redirects: readonly Redirect[];
}

/** `( … )` or `{ …; }`. */
export interface Group {
  readonly kind: 'group';
  readonly body: Script;
  readonly redirects: readonly Redirect[];
}

export interface FunctionDefinition {
  readonly kind: 'function';
  readonly name: string;
  readonly body: ShellNode;
}

export type ShellNode = SimpleCommand | Group | FunctionDefinition;

export interface Pipeline {
  readonly nodes: readonly ShellNode[];
  /** Ends with `&`. */
  readonly background: boolean;
}

/** Pipelines joined by `;`, `&&`, `||`, `&` or newlines. */
export interface Script {
  readonly pipelines: readonly Pipeline[];
}

export interface ParsedShell {
  readonly script: Script;
  /** Some nesting went deeper than `maxNesting` and was skipped unread. */
  readonly truncated: boolean;
}

/** Reads `text` as shell; nesting of (), {}, $(), `` and <() beyond `maxNesting` is skipped. */
export function parseShell(text: string, maxNesting: number): ParsedShell {
  const reader = new ShellReader(text, maxNesting);
  const script = reader.script(0, '');
  return { script, truncated: reader.truncated };
}

/** The parsed script written back out without quotes: the "quotes removed" reading. */
export function renderScript(script: Script): string {
  return script.pipelines.map(renderPipeline).join('; ');
}

export function renderPipeline(pipeline: Pipeline): string {
  return pipeline.nodes.map(renderNode).join(' | ') + (pipeline.background ? ' &' : '');
}

export function renderRedirects(redirects: readonly Redirect[]): string {
  return redirects.map((r) => ` ${r.op} ${r.target.text}`).join('');
}

function renderNode(node: ShellNode): string {
  switch (node.kind) {
    case 'simple':
      return node.words.map((w) => w.text).join(' ') + renderRedirects(node.redirects);
    case 'group':
      return `( ${renderScript(node.body)} )${renderRedirects(node.redirects)}`;
    case 'function':
      return `${node.name}() ${renderNode(node.body)}`;
  }
}

type Closer = ')' | '}' | '';

interface MutableRedirect {
  op: string;
  target: Word;
  body?: string;
  bodyNested?: Script[];
}

interface PendingHeredoc {
  redirect: MutableRedirect;
  delimiter: string;
  stripTabs: boolean;
  expands: boolean;
  depth: number;
}

const BLANKS = new Set([' ', '\t']);
const WORD_END = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);
const REDIRECT_OP = /^(?:&>>|&>|\d*(?:<<<|<<-|<<|<>|<&|>&|>>|>\||<|>))/;
const BRACE_EXPANSION = /^\{[^\s{}]*(?:,|\.\.)[^\s{}]*\}/;
const EXTGLOB_OR_ARRAY = /(?:[@!+*?]|^[A-Za-z_][A-Za-z0-9_]*\+?=)$/;

class ShellReader {
  private pos = 0;
  private readonly pending: PendingHeredoc[] = [];
  truncated = false;

  constructor(
    private readonly src: string,
    private readonly maxNesting: number,
  ) {}

  private at(offset = 0): string {
    return this.src.charAt(this.pos + offset);
  }

  private get done(): boolean {
    return this.pos >= this.src.length;
  }

  script(depth: number, closer: Closer): Script {
    const pipelines: Pipeline[] = [];
    for (;;) {
      this.skipSeparatorSpace();
      if (this.done) break;
      const c = this.at();
      if (c === ')') {
        this.pos++;
        if (closer === ')') break;
        continue;
      }
      if (c === '}' && closer === '}') {
        this.pos++;
        break;
      }
      if (c === ';' || c === '&' || c === '|') {
        this.pos++;
        continue;
      }
      const before = this.pos;
      const pipeline = this.pipeline(depth, closer);
      this.skipBlanks();
      let background = false;
      if (this.at() === '&' && this.at(1) !== '&') {
        background = true;
        this.pos++;
      }
      pipelines.push({ nodes: pipeline, background });
      if (this.pos === before) this.pos++;
    }
    return { pipelines };
  }

  private pipeline(depth: number, closer: Closer): ShellNode[] {
    const nodes = [this.command(depth, closer)];
    for (;;) {
      this.skipBlanks();
      if (this.at() !== '|' || this.at(1) === '|') return nodes;
      this.pos += this.at(1) === '&' ? 2 : 1;
      this.skipSeparatorSpace();
      nodes.push(this.command(depth, closer));
    }
  }

  private command(depth: number, closer: Closer): ShellNode {
    this.skipBlanks();
    const c = this.at();
    if (c === '(') {
      this.pos++;
      const body = this.nested(depth, ')');
      return { kind: 'group', body, redirects: this.trailingRedirects(depth) };
    }
    if (c === '{' && this.opensBraceGroup()) {
      this.pos++;
      const body = this.nested(depth, '}');
      return { kind: 'group', body, redirects: this.trailingRedirects(depth) };
    }
    return this.simpleCommand(depth, closer);
  }

  private simpleCommand(depth: number, closer: Closer): ShellNode {
    const words: Word[] = [];
    const redirects: Redirect[] = [];
    for (;;) {
      this.skipBlanks();
      if (this.done) break;
      const c = this.at();
      if (c === '\n' || c === ';' || c === ')' || c === '|') break;
      if (c === '&' && this.at(1) !== '>') break;
      if (c === '}' && closer === '}' && (WORD_END.has(this.at(1)) || this.at(1) === '')) break;
      if (c === '#') {
        this.skipComment();
        break;
      }
      const name = words.length === 1 ? words[0]?.text : words.length === 2 && words[0]?.text === 'function' ? words[1]?.text : undefined;
      if (c === '(' && name !== undefined && /^\(\s*\)/.test(this.src.slice(this.pos, this.pos + 64))) {
        this.pos = this.src.indexOf(')', this.pos) + 1;
        return this.functionBody(name, depth, closer);
      }
      if (c === '{' && words.length === 2 && name !== undefined) {
        return this.functionBody(name, depth, closer);
      }
      if (c === '(') {
        // Not valid here in bash; read it as a subshell so nothing inside goes unseen.
        const start = this.pos;
        this.pos++;
        const body = this.nested(depth, ')');
        words.push({ text: this.src.slice(start, this.pos), nested: [body] });
        continue;
      }
      const op = (c === '<' || c === '>') && this.at(1) === '(' ? null : REDIRECT_OP.exec(this.src.slice(this.pos, this.pos + 8));
      if (op) {
        redirects.push(this.redirect(op[0], depth));
        continue;
      }
      const before = this.pos;
      const word = this.word(depth);
      if (this.pos === before) {
        this.pos++;
        continue;
      }
      words.push(word);
    }
    return { kind: 'simple', words, redirects };
  }

  private functionBody(name: string, depth: number, closer: Closer): ShellNode {
    this.skipSeparatorSpace();
    if (depth + 1 > this.maxNesting) {
      this.truncated = true;
      return { kind: 'function', name, body: { kind: 'simple', words: [], redirects: [] } };
    }
    return { kind: 'function', name, body: this.command(depth + 1, closer) };
  }

  private opensBraceGroup(): boolean {
    const next = this.at(1);
    if (next === '' || BLANKS.has(next) || next === '\n') return true;
    return !BRACE_EXPANSION.test(this.src.slice(this.pos, this.pos + 256));
  }

  private trailingRedirects(depth: number): Redirect[] {
    const redirects: Redirect[] = [];
    for (;;) {
      this.skipBlanks();
      const op = REDIRECT_OP.exec(this.src.slice(this.pos, this.pos + 8));
      if (!op || this.at(op[0].length) === '(') return redirects;
      redirects.push(this.redirect(op[0], depth));
    }
  }

  private redirect(op: string, depth: number): Redirect {
    this.pos += op.length;
    const bare = op.replace(/^\d+/, '');
    this.skipBlanks();
    const targetStart = this.pos;
    const target = this.word(depth);
    const redirect: MutableRedirect = { op: bare, target };
    if (bare === '<<' || bare === '<<-') {
      const raw = this.src.slice(targetStart, this.pos);
      this.pending.push({
        redirect,
        delimiter: target.text,
        stripTabs: bare === '<<-',
        expands: !/['"\\]/.test(raw),
        depth,
      });
    }
    return redirect;
  }

  private word(depth: number): Word {
    let text = '';
    const nested: Script[] = [];
    const start = this.pos;
    while (!this.done) {
      const c = this.at();
      if (c === '\\') {
        const next = this.at(1);
        this.pos += 2;
        if (next !== '\n') text += next;
      } else if (c === "'") {
        const end = this.src.indexOf("'", this.pos + 1);
        const stop = end < 0 ? this.src.length : end;
        text += this.src.slice(this.pos + 1, stop);
        this.pos = stop + 1;
      } else if (c === '"') {
        this.pos++;
        text += this.expandingText(depth, nested, '"');
      } else if (c === '$' && this.at(1) === "'") {
        this.pos += 2;
        text += this.ansiCQuoted();
      } else if (c === '$' && this.at(1) === '"') {
        this.pos++;
      } else if (c === '$' && this.at(1) === '(') {
        text += this.substitution(depth, nested, 2);
      } else if (c === '$' && this.at(1) === '{') {
        text += this.parameterExpansion(depth, nested);
      } else if (c === '`') {
        text += this.backticks(depth, nested);
      } else if ((c === '<' || c === '>') && this.at(1) === '(') {
        text += this.substitution(depth, nested, 2);
      } else if (c === '(' && this.pos > start && EXTGLOB_OR_ARRAY.test(this.src.slice(Math.max(start, this.pos - 64), this.pos))) {
        text += this.balanced();
      } else if (WORD_END.has(c)) {
        break;
      } else {
        text += c;
        this.pos++;
      }
    }
    return { text, nested };
  }

  /** Double-quoted text (closer `"`) or an expanding here-document body (closer ``). */
  private expandingText(depth: number, nested: Script[], closer: '"' | ''): string {
    let out = '';
    while (!this.done) {
      const c = this.at();
      if (c === closer) {
        this.pos++;
        return out;
      }
      if (c === '\\') {
        const next = this.at(1);
        if (next === '\n') {
          this.pos += 2;
        } else if (next !== '' && '$`"\\'.includes(next)) {
          out += next;
          this.pos += 2;
        } else {
          out += c;
          this.pos++;
        }
      } else if (c === '$' && this.at(1) === '(') {
        out += this.substitution(depth, nested, 2);
      } else if (c === '$' && this.at(1) === '{') {
        out += this.parameterExpansion(depth, nested);
      } else if (c === '`') {
        out += this.backticks(depth, nested);
      } else {
        out += c;
        this.pos++;
      }
    }
    return out;
  }

  /** `$(…)`, `<(…)` or `>(…)`, read as a nested script; returns the text as written. */
  private substitution(depth: number, nested: Script[], openerLength: number): string {
    const start = this.pos;
    this.pos += openerLength;
    nested.push(this.nested(depth, ')'));
    return this.src.slice(start, this.pos);
  }

  private nested(depth: number, closer: ')' | '}'): Script {
    if (depth + 1 > this.maxNesting) {
      this.truncated = true;
      this.skipToCloser(closer);
      return { pipelines: [] };
    }
    return this.script(depth + 1, closer);
  }

  private parameterExpansion(depth: number, nested: Script[]): string {
    const start = this.pos;
    this.pos += 2;
    let level = 1;
    while (!this.done && level > 0) {
      const c = this.at();
      if (c === '\\') this.pos += 2;
      else if (c === '"') {
        this.pos++;
        this.expandingText(depth, nested, '"');
      } else if (c === '$' && this.at(1) === '(') this.substitution(depth, nested, 2);
      else if (c === '`') this.backticks(depth, nested);
      else if (c === '$' && this.at(1) === '{') {
        level++;
        this.pos += 2;
      } else {
        if (c === '}') level--;
        this.pos++;
      }
    }
    return this.src.slice(start, this.pos);
  }

  private backticks(depth: number, nested: Script[]): string {
    const start = this.pos;
    this.pos++;
    let inner = '';
    while (!this.done) {
      const c = this.at();
      if (c === '`') {
        this.pos++;
        break;
      }
      if (c === '\\' && '`\\$'.includes(this.at(1)) && this.at(1) !== '') {
        inner += this.at(1);
        this.pos += 2;
      } else {
        inner += c;
        this.pos++;
      }
    }
    if (depth + 1 > this.maxNesting) {
      this.truncated = true;
    } else {
      const reader = new ShellReader(inner, this.maxNesting);
      nested.push(reader.script(depth + 1, ''));
      this.truncated ||= reader.truncated;
    }
    return this.src.slice(start, this.pos);
  }

  private ansiCQuoted(): string {
    let out = '';
    while (!this.done) {
      const c = this.at();
      this.pos++;
      if (c === "'") return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.at();
      this.pos++;
      const simple = ANSI_C_ESCAPES[e];
      if (simple !== undefined) {
        out += simple;
      } else if (e === 'x' || e === 'u' || e === 'U' || /[0-7]/.test(e)) {
        const [digits, max, radix] = e === 'x' ? [/[0-9a-fA-F]/, 2, 16] : e === 'u' ? [/[0-9a-fA-F]/, 4, 16] : e === 'U' ? [/[0-9a-fA-F]/, 8, 16] : [/[0-7]/, 3, 8];
        let code = /[0-7]/.test(e) && e !== '' ? e : '';
        while (code.length < max && digits.test(this.at())) code += this.src.charAt(this.pos++);
        const point = Number.parseInt(code, radix);
        if (Number.isFinite(point) && point <= 0x10ffff) out += String.fromCodePoint(point);
      } else if (e === 'c') {
        out += String.fromCharCode(this.at().charCodeAt(0) & 0x1f);
        this.pos++;
      } else {
        out += `\\${e}`;
      }
    }
    return out;
  }

  /** `(…)` kept as literal text: extended globs and array assignments. */
  private balanced(): string {
    const start = this.pos;
    this.skipToCloser(')', 0);
    return this.src.slice(start, this.pos);
  }

  /** Skips past the `closer` that matches an opener already consumed (`level` 1), unread. */
  private skipToCloser(closer: ')' | '}', level = 1): void {
    const opener = closer === ')' ? '(' : '{';
    while (!this.done) {
      const c = this.at();
      this.pos++;
      if (c === '\\') this.pos++;
      else if (c === "'") {
        const end = this.src.indexOf("'", this.pos);
        this.pos = end < 0 ? this.src.length : end + 1;
      } else if (c === opener) level++;
      else if (c === closer && --level <= 0) return;
    }
  }

  private skipBlanks(): void {
    for (;;) {
      const c = this.at();
      if (BLANKS.has(c)) this.pos++;
      else if (c === '\\' && this.at(1) === '\n') this.pos += 2;
      else return;
    }
  }

  /** Blanks, newlines (with the here-documents they end) and comments. */
  private skipSeparatorSpace(): void {
    for (;;) {
      this.skipBlanks();
      const c = this.at();
      if (c === '\n') {
        this.pos++;
        this.readHeredocBodies();
      } else if (c === '#') {
        this.skipComment();
      } else {
        return;
      }
    }
  }

  private skipComment(): void {
    const end = this.src.indexOf('\n', this.pos);
    this.pos = end < 0 ? this.src.length : end;
  }

  private readHeredocBodies(): void {
    for (const heredoc of this.pending.splice(0)) {
      const lines: string[] = [];
      while (!this.done) {
        const end = this.src.indexOf('\n', this.pos);
        const stop = end < 0 ? this.src.length : end;
        const line = this.src.slice(this.pos, stop);
        this.pos = stop + 1;
        if ((heredoc.stripTabs ? line.replace(/^\t+/, '') : line) === heredoc.delimiter) break;
        lines.push(line);
      }
      const body = lines.join('\n');
      heredoc.redirect.body = body;
      if (heredoc.expands) {
        const reader = new ShellReader(body, this.maxNesting);
        const nested: Script[] = [];
        reader.expandingText(heredoc.depth, nested, '');
        heredoc.redirect.bodyNested = nested;
        this.truncated ||= reader.truncated;
      }
    }
  }
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
