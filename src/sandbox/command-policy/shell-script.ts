/*
 * A command line as the command policy and the bash claims see it: pipelines of simple commands,
 * groups and function definitions, words made of parts (literal text, parameter expansions,
 * command and process substitutions) and redirections. src/sandbox/command-policy/read-script.ts
 * builds it from the shell grammar's syntax tree; nothing here parses.
 */

export type WordPart =
  /** Characters after quote removal; quoted ones are neither split nor globbed. */
  | { readonly kind: 'text'; readonly value: string; readonly quoted: boolean }
  /** `$x`, `${x:-y}`, `${#x}`…, as written; `operand` is the word after `-`, `=`, `+` or `?`. */
  | {
      readonly kind: 'parameter';
      readonly raw: string;
      readonly quoted: boolean;
      readonly operand?: Word;
      readonly scripts: readonly Script[];
    }
  /** `$(…)` or backticks: the shell runs `script` and splices in its output. */
  | { readonly kind: 'substitution'; readonly raw: string; readonly quoted: boolean; readonly script: Script }
  /** `<(…)` or `>(…)`: the shell runs `script` and splices in a /dev/fd path. */
  | { readonly kind: 'process'; readonly raw: string; readonly script: Script }
  /** `$((…))`, with the substitutions inside it. */
  | {
      readonly kind: 'arithmetic';
      readonly raw: string;
      readonly quoted: boolean;
      readonly scripts: readonly Script[];
    };

export interface Word {
  readonly parts: readonly WordPart[];
  /** The word as written. */
  readonly raw: string;
}

export interface HereDocument {
  /** The body as written (leading tabs stripped for `<<-`). */
  readonly body: string;
  /** An unquoted delimiter: the body's expansions run. */
  readonly expands: boolean;
  /** The body as parts (expansions and substitutions) when it expands. */
  readonly parts: readonly WordPart[];
}

export interface Redirect {
  /** `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&`, `<&`, `<`, `<<`, `<<-`, `<<<`, `>&-` or `<&-`. */
  readonly op: string;
  readonly fd?: string;
  /** The file, the descriptor or the here-string. */
  readonly target?: Word;
  readonly hereDocument?: HereDocument;
}

export interface Assignment {
  readonly name: string;
  readonly value?: Word;
  /** `name=(a b)`. */
  readonly array?: readonly Word[];
}

export interface SimpleCommand {
  readonly kind: 'simple';
  /** `NAME=value` before the command, or the whole statement when there is no command. */
  readonly assignments: readonly Assignment[];
  readonly words: readonly Word[];
  readonly redirects: readonly Redirect[];
}

/** A loop's shape, for the rules that look for loops without an end. */
export interface Loop {
  readonly kind: 'while' | 'until' | 'for' | 'select';
  /** `while true`, `while :`, `until false`, `for ((;;))`: nothing in the header ends it. */
  readonly unbounded: boolean;
  /** The variable a `for` or `select` loop assigns. */
  readonly variable?: string;
}

/** `( … )`, `{ …; }`, `if`, `case`, loops, `[[ … ]]` and `(( … ))`: commands run as one. */
export interface Group {
  readonly kind: 'group';
  readonly body: Script;
  readonly redirects: readonly Redirect[];
  /** Runs in a subshell: `( … )`. */
  readonly subshell: boolean;
  /** Words the construct expands itself: a `for` list, a `case` subject and patterns. */
  readonly header: readonly Word[];
  readonly loop?: Loop;
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

/** A word with quotes removed and expansions as written: the "without quotes" reading. */
export function renderWord(word: Word): string {
  return word.parts.map((part) => (part.kind === 'text' ? part.value : part.raw)).join('');
}

/** The script written back out without quotes: the reading operator rules see. */
export function renderScript(script: Script): string {
  return script.pipelines.map(renderPipeline).join('; ');
}

export function renderPipeline(pipeline: Pipeline): string {
  return pipeline.nodes.map(renderNode).join(' | ') + (pipeline.background ? ' &' : '');
}

export function renderRedirects(redirects: readonly Redirect[]): string {
  return redirects.map((r) => ` ${r.fd ?? ''}${r.op}${r.target ? ` ${renderWord(r.target)}` : ''}`).join('');
}

function renderNode(node: ShellNode): string {
  switch (node.kind) {
    case 'simple': {
      const assignments = node.assignments.map(
        (a) => `${a.name}=${a.value ? renderWord(a.value) : a.array ? `(${a.array.map(renderWord).join(' ')})` : ''}`,
      );
      return [...assignments, ...node.words.map(renderWord)].join(' ') + renderRedirects(node.redirects);
    }
    case 'group':
      return `( ${renderScript(node.body)} )${renderRedirects(node.redirects)}`;
    case 'function':
      return `${node.name}() ${renderNode(node.body)}`;
  }
}
