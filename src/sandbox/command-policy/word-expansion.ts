/*
 * What a word becomes when bash expands it, as far as can be known before it runs: quotes
 * removed, the command line's own literal assignments substituted (`a=r; b=m; $a$b` is `rm`),
 * expansions that are empty in every case dropped (`$9`, `${x:0:0}`, `${@:+}`, `${x%%*}`), `$IFS`
 * splitting a word, one level of brace expansion. What cannot be known (a substitution's output,
 * a variable from the environment) stays as written and marks the word as decided at run time.
 */
import type { Word, WordPart } from './shell-script.js';

/** Variables whose values the command line itself set, and the positional parameters. */
export interface ShellVariables {
  readonly values: ReadonlyMap<string, string>;
  /** `$1…`: empty in a fresh `bash -c`; the operands after the text in `sh -c text $0 $1…`; unknown in a function. */
  readonly positional: readonly string[] | undefined;
}

export const FRESH_SHELL: ShellVariables = {
  values: new Map([
    ['IFS', ' \t\n'],
    ['BASH', '/bin/bash'],
    ['0', 'bash'],
  ]),
  positional: [],
};

export interface ExpandedWord {
  /** The fields bash passes as arguments (none when the word expanded to nothing unquoted). */
  readonly fields: readonly string[];
  /**
   * Some part is made at run time: a substitution's output, a variable the command line did not
   * set (the session's `$HOME`, `$PWD`, `$PATH`… excepted), arithmetic.
   */
  readonly dynamic: boolean;
  /** Some part is not known here at all, the session's environment variables included. */
  readonly unresolved: boolean;
  /** Some part is a command or process substitution. */
  readonly substituted: boolean;
  /** An unquoted `*`, `?` or `[`: the shell matches the word against file names. */
  readonly glob: boolean;
  /**
   * The values of its `${x@P}` expansions, which bash expands again as a prompt (running `$(…)`
   * and backticks in them); undefined where the value is not known.
   */
  readonly prompts: readonly (string | undefined)[];
}

const IFS_WHITESPACE = /[ \t\n]+/;

export function expandWord(word: Word, variables: ShellVariables): ExpandedWord {
  const fields: string[] = [];
  let current = '';
  /** Whether `current` holds a field even if empty: a quoted part was seen. */
  let open = false;
  let dynamic = false;
  let unresolved = false;
  let substituted = false;
  let glob = false;
  let braces = false;
  const prompts: (string | undefined)[] = [];

  const appendSplitting = (value: string): void => {
    const pieces = value.split(IFS_WHITESPACE);
    pieces.forEach((piece, index) => {
      if (index > 0 && (open || current !== '')) {
        fields.push(current);
        current = '';
        open = false;
      }
      current += piece;
    });
  };

  for (const part of word.parts) {
    switch (part.kind) {
      case 'text':
        current += part.value;
        if (part.quoted) open = true;
        else {
          glob ||= /[*?]|\[[^\]]+\]/.test(part.value);
          braces ||= /\{[^{}]*(?:,|\.\.)[^{}]*\}/.test(part.value);
        }
        break;
      case 'parameter': {
        if (/@P\}$/.test(part.raw))
          prompts.push(parameterValue({ ...part, raw: part.raw.replace(/@P\}$/, '}') }, variables));
        const value = parameterValue(part, variables);
        if (value === undefined) {
          dynamic ||= !isEnvironmentParameter(part.raw);
          unresolved = true;
          current += part.raw;
        } else if (part.quoted) current += value;
        else appendSplitting(value);
        if (part.quoted) open = true;
        break;
      }
      case 'substitution':
      case 'process':
        dynamic = true;
        unresolved = true;
        substituted = true;
        current += part.raw;
        open = true;
        break;
      case 'arithmetic':
        dynamic = true;
        unresolved = true;
        current += part.raw;
        open = true;
        break;
    }
  }
  if (open || current !== '') fields.push(current);
  return { fields: braces ? fields.flatMap(expandBraces) : fields, dynamic, unresolved, substituted, glob, prompts };
}

/** The text of a word when it is fully known, or undefined. */
export function knownText(word: Word, variables: ShellVariables): string | undefined {
  const expanded = expandWord(word, variables);
  return expanded.unresolved ? undefined : expanded.fields.join(' ');
}

/** `$HOME`, `$PWD`, `$USER`…: the session's environment, set before the command and not by it. */
const ENVIRONMENT = /^\$\{?(?:HOME|PWD|OLDPWD|USER|LOGNAME|TMPDIR|PATH|LANG|SHELL|TERM|HOSTNAME)\}?$/;

export function isEnvironmentParameter(raw: string): boolean {
  return ENVIRONMENT.test(raw);
}

const PARAMETER = /^\$\{(!|#)?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!\-])(\[[^\]]*\])?(.*)\}$/s;
const SIMPLE_PARAMETER = /^\$([A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!\-])$/;

/** The value of `$x` / `${x…}`, or undefined when it depends on what is not known before run time. */
function parameterValue(part: Extract<WordPart, { kind: 'parameter' }>, variables: ShellVariables): string | undefined {
  const simple = SIMPLE_PARAMETER.exec(part.raw);
  const braced = simple ? undefined : PARAMETER.exec(part.raw);
  const name = simple?.[1] ?? braced?.[2];
  if (name === undefined) return undefined;
  const prefix = braced?.[1];
  const subscript = braced?.[3];
  const rest = braced?.[4] ?? '';
  let base = subscript ? undefined : baseValue(name, variables);

  if (prefix === '!') {
    // `${!x}` is the value of the variable x names; `${!@}` with no positional parameters is empty.
    if (rest === '*' || rest === '@' || base === undefined) return undefined;
    if (base === '' && (name === '@' || name === '*')) base = '';
    else if (/^(?:[A-Za-z_]\w*|[0-9]+|[@*#?$!-])$/.test(base)) base = baseValue(base, variables);
    else return undefined;
  }
  if (prefix === '#') return base === undefined ? undefined : String(base.length);

  const operand = part.operand ? knownText(part.operand, variables) : '';
  const alternative = /^:?\+/.exec(rest);
  if (alternative) {
    // `${x:+word}` is empty when x is, and `word` otherwise: with an empty word, empty either way.
    if (operand === '') return '';
    if (base === undefined) return undefined;
    return (rest.startsWith(':') ? base !== '' : isSet(name, variables)) ? operand : '';
  }
  if (/^:?[-=]/.test(rest)) {
    if (base === undefined) return undefined;
    const useOperand = rest.startsWith(':') ? base === '' : !isSet(name, variables);
    return useOperand ? operand : base;
  }
  if (/^:?\?/.test(rest)) return base;

  const substring = /^:\s*([^:]*)(?::\s*(-?\d+)\s*)?$/.exec(rest);
  if (substring && rest.startsWith(':')) {
    if (substring[2] !== undefined && Number(substring[2]) === 0) return '';
    if (base === undefined || !/^\s*-?\d+\s*$/.test(substring[1] ?? '')) return base === '' ? '' : undefined;
    const offset = Number(substring[1]);
    const from = offset < 0 ? Math.max(0, base.length + offset) : offset;
    return substring[2] === undefined ? base.slice(from) : base.slice(from, from + Math.max(0, Number(substring[2])));
  }

  const removal = /^(##|#|%%|%)(.*)$/s.exec(rest);
  if (removal) {
    const [, op, pattern = ''] = removal;
    if ((op === '##' || op === '%%') && /^\*+$/.test(pattern)) return '';
    if (base === undefined) return undefined;
    return removePattern(base, op ?? '#', pattern);
  }

  const replacement = /^(\/\/|\/#|\/%|\/)([^/]*)(?:\/(.*))?$/s.exec(rest);
  if (replacement) {
    const [, op, pattern = '', by = ''] = replacement;
    if (/^\*+$/.test(pattern) && by === '' && op !== '/#' && op !== '/%') return '';
    if (base === undefined) return undefined;
    return replacePattern(base, op ?? '/', pattern, by);
  }

  const caseChange = /^(\^\^|\^|,,|,|~~|~)$/.exec(rest);
  if (caseChange) {
    if (base === undefined) return undefined;
    return changeCase(base, caseChange[1] ?? '');
  }

  if (/^@[QEPAKaULu]$/.test(rest)) {
    if (base === undefined) return undefined;
    if (rest === '@U') return base.toUpperCase();
    if (rest === '@L') return base.toLowerCase();
    if (rest === '@u') return base.charAt(0).toUpperCase() + base.slice(1);
    // A prompt expansion of plain text is the text; of `$(…)` or backticks, what they print.
    if (rest === '@P' && !/[$`\\]/.test(base)) return base;
    return base === '' ? '' : undefined;
  }
  return rest === '' ? base : undefined;
}

function baseValue(name: string, variables: ShellVariables): string | undefined {
  const known = variables.values.get(name);
  if (known !== undefined) return known;
  if (/^[1-9][0-9]*$/.test(name))
    return variables.positional === undefined ? undefined : (variables.positional[Number(name) - 1] ?? '');
  if (name === '@' || name === '*')
    return variables.positional === undefined ? undefined : variables.positional.join(' ');
  if (name === '#') return variables.positional === undefined ? undefined : String(variables.positional.length);
  return undefined;
}

function isSet(name: string, variables: ShellVariables): boolean {
  if (variables.values.has(name)) return true;
  if (/^[1-9][0-9]*$/.test(name)) return (variables.positional?.length ?? 0) >= Number(name);
  return false;
}

/** A glob pattern as a RegExp: `*`, `?` and `[…]`; anything else literal. */
/** A shell glob as a regular expression's source (`*` greedy or not); a backslash escapes the next character. */
export function globToRegExp(pattern: string, greedy: boolean): string {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === '*') source += greedy ? '.*' : '.*?';
    else if (c === '?') source += '.';
    else if (c === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close < 0) source += '\\[';
      else {
        source += `[${pattern
          .slice(i + 1, close)
          .replace(/^!/, '^')
          .replace(/\\/g, '\\\\')}]`;
        i = close;
      }
    } else if (c === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern.charAt(++i));
    else source += escapeRegExp(c);
  }
  return source;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function removePattern(value: string, op: string, pattern: string): string {
  if (op === '#' || op === '##') {
    for (const end of op === '#' ? range(0, value.length) : range(value.length, 0)) {
      if (new RegExp(`^(?:${globToRegExp(pattern, true)})$`, 's').test(value.slice(0, end))) return value.slice(end);
    }
    return value;
  }
  for (const start of op === '%' ? range(value.length, 0) : range(0, value.length)) {
    if (new RegExp(`^(?:${globToRegExp(pattern, true)})$`, 's').test(value.slice(start))) return value.slice(0, start);
  }
  return value;
}

function replacePattern(value: string, op: string, pattern: string, by: string): string {
  const source = globToRegExp(pattern, true);
  if (source === '') return value;
  if (op === '/#') return value.replace(new RegExp(`^${source}`, 's'), () => by);
  if (op === '/%') return value.replace(new RegExp(`${source}$`, 's'), () => by);
  return value.replace(new RegExp(source, op === '//' ? 'gs' : 's'), () => by);
}

function changeCase(value: string, op: string): string {
  const swap = (c: string): string => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase());
  switch (op) {
    case '^^':
      return value.toUpperCase();
    case '^':
      return value.charAt(0).toUpperCase() + value.slice(1);
    case ',,':
      return value.toLowerCase();
    case ',':
      return value.charAt(0).toLowerCase() + value.slice(1);
    case '~~':
      return [...value].map(swap).join('');
    default:
      return swap(value.charAt(0)) + value.slice(1);
  }
}

function range(from: number, to: number): number[] {
  const out: number[] = [];
  if (from <= to) for (let i = from; i <= to; i++) out.push(i);
  else for (let i = from; i >= to; i--) out.push(i);
  return out;
}

const MAX_BRACE_ITEMS = 64;

/** One level of brace expansion, `{rm,-rf,/}` → `rm -rf /`, `/{bin,etc}` → `/bin /etc`. */
function expandBraces(word: string): string[] {
  const open = word.indexOf('{');
  const close = word.indexOf('}', open);
  if (open < 0 || close < 0) return [word];
  const inner = word.slice(open + 1, close);
  if (inner.includes('{')) return [word];
  const items = inner.includes(',') ? inner.split(',') : numericRange(inner);
  if (items === undefined || items.length < 2 || items.length > MAX_BRACE_ITEMS) return [word];
  return items.map((item) => word.slice(0, open) + item + word.slice(close + 1));
}

function numericRange(inner: string): string[] | undefined {
  const match = /^(-?\d+)\.\.(-?\d+)$/.exec(inner);
  if (!match) return undefined;
  const from = Number(match[1]);
  const to = Number(match[2]);
  if (Math.abs(to - from) >= MAX_BRACE_ITEMS) return undefined;
  return range(from, to).map(String);
}
