/*
 * One sentence per zod issue that says what was expected and what was given ("expected > 0,
 * got -5"; "expected one of "steer" | "queue", got "x""), in the words of the format read:
 * TOML for the config (a table), JSON for run requests and the gateway's params (an object).
 * Parse with `reportInput: true`, so each issue carries the value it is about.
 */
import type { z } from 'zod';

type ZodIssue = z.core.$ZodIssue;

export interface IssueWords {
  /** What an object is called: "a table" in TOML, "an object" in JSON. */
  object: string;
}

export const TOML_WORDS: IssueWords = { object: 'a table' };
export const JSON_WORDS: IssueWords = { object: 'an object' };

/** Longest string shown in full; a longer one is shown by its length. */
const SHOWN_STRING = 60;

function expectedName(expected: string, words: IssueWords): string {
  const names: Record<string, string> = {
    int: 'an integer',
    number: 'a number',
    string: 'a string',
    boolean: 'true or false',
    object: words.object,
    record: words.object,
    array: 'an array',
  };
  return names[expected] ?? expected;
}

/** The value as a message shows it: strings quoted (a long one by its length), objects by their kind. */
export function describeValue(value: unknown, words: IssueWords = JSON_WORDS): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date';
  if (typeof value === 'string')
    return value.length > SHOWN_STRING ? `a string of ${value.length} characters` : JSON.stringify(value);
  if (typeof value === 'object') return words.object;
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}

function withInput(expectation: string, issue: ZodIssue, words: IssueWords): string {
  if (issue.input === undefined) return `missing; ${expectation}`;
  return `${expectation}, got ${describeValue(issue.input, words)}`;
}

function describeBound(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  const small = issue.code === 'too_small';
  const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
  const unit =
    issue.origin === 'string' ? 'characters' : issue.origin === 'array' || issue.origin === 'set' ? 'items' : '';
  if (unit !== '') return `expected ${small ? 'at least' : 'at most'} ${bound} ${unit}`;
  return `expected ${small ? '>' : '<'}${issue.inclusive ? '=' : ''} ${bound}`;
}

/** What the issue says, and the value it is about. */
export function describeIssue(issue: ZodIssue, words: IssueWords = JSON_WORDS): string {
  switch (issue.code) {
    case 'invalid_type':
      return withInput(`expected ${expectedName(issue.expected, words)}`, issue, words);
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      return withInput(describeBound(issue), issue, words);
    case 'too_big':
      return withInput(describeBound(issue), issue, words);
    case 'invalid_value':
      return withInput(`expected one of ${issue.values.map((v) => JSON.stringify(v)).join(' | ')}`, issue, words);
    case 'invalid_key':
      return `invalid key: ${issue.issues.map((inner) => describeIssue(inner, words)).join('; ')}`;
    case 'unrecognized_keys':
      // Names the keys it got.
      return issue.message;
    case 'invalid_format':
    case 'custom':
    case 'not_multiple_of':
    case 'invalid_union':
    case 'invalid_element':
      // A rule about a whole table or object (one key or the other) is about its keys, not its value.
      return typeof issue.input === 'object' && issue.input !== null
        ? issue.message
        : withInput(issue.message, issue, words);
  }
}
