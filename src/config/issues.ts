/*
 * Turns zod's issues into ConfigIssues that speak TOML: a dotted key path and a sentence that
 * says what was found and what is allowed.
 */
import { z } from 'zod';
import type { ConfigIssue } from './errors.js';

type ZodIssue = z.core.$ZodIssue;

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

/** `sandbox.command_policy.rules[0].pattern`; keys that are not bare TOML keys get quoted. */
function formatKeyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') {
      out += `[${segment}]`;
      continue;
    }
    const key = String(segment);
    const shown = BARE_KEY.test(key) ? key : JSON.stringify(key);
    out += out === '' ? shown : `.${shown}`;
  }
  return out === '' ? '<root>' : out;
}

const EXPECTED_NAMES: Record<string, string> = {
  int: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'a table',
  record: 'a table',
  array: 'an array',
};

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return 'a table';
  return String(value);
}

function withInput(expectation: string, issue: ZodIssue): string {
  if (issue.input === undefined) return `missing; ${expectation}`;
  return `${expectation}, got ${describeValue(issue.input)}`;
}

// Only numbers carry bounds in this schema (strings only have "non-empty", handled apart).
function describeBound(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig): string {
  if (issue.code === 'too_small') return `expected ${issue.inclusive ? '>=' : '>'} ${issue.minimum}`;
  return `expected ${issue.inclusive ? '<=' : '<'} ${issue.maximum}`;
}

function unwrapTable(schema: z.core.$ZodType): z.core.$ZodType {
  let current = schema;
  while (current instanceof z.ZodDefault || current instanceof z.ZodPrefault || current instanceof z.ZodOptional) {
    current = current.unwrap();
  }
  return current;
}

/** The schema found at `path`, walking through tables, records and arrays. */
function schemaAt(root: z.core.$ZodType, path: readonly PropertyKey[]): z.core.$ZodType | undefined {
  let current: z.core.$ZodType | undefined = root;
  for (const segment of path) {
    if (current === undefined) return undefined;
    const table: z.core.$ZodType = unwrapTable(current);
    if (table instanceof z.ZodObject) current = table.shape[String(segment)];
    else if (table instanceof z.ZodRecord) current = table.valueType;
    else if (table instanceof z.ZodArray) current = table.element;
    else return undefined;
  }
  return current;
}

function allowedKeys(root: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  const found = schemaAt(root, path);
  const table = found === undefined ? undefined : unwrapTable(found);
  return table instanceof z.ZodObject ? Object.keys(table.shape) : [];
}

function describeIssue(issue: ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return withInput(`expected ${EXPECTED_NAMES[issue.expected] ?? issue.expected}`, issue);
    case 'too_small':
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      return withInput(describeBound(issue), issue);
    case 'too_big':
      return withInput(describeBound(issue), issue);
    case 'invalid_value':
      return withInput(`expected one of ${issue.values.map((v) => JSON.stringify(v)).join(' | ')}`, issue);
    case 'invalid_key':
      return `invalid key: ${issue.issues.map(describeIssue).join('; ')}`;
    default:
      return issue.message;
  }
}

/** One ConfigIssue per problem; an unknown key becomes its own issue at its own path. */
export function configIssuesFromZod(error: z.ZodError, root: z.core.$ZodType): ConfigIssue[] {
  return error.issues.flatMap((issue): ConfigIssue[] => {
    if (issue.code !== 'unrecognized_keys') {
      return [{ path: formatKeyPath(issue.path), message: describeIssue(issue) }];
    }
    const allowed = allowedKeys(root, issue.path);
    const hint = allowed.length > 0 ? ` (allowed here: ${allowed.join(', ')})` : '';
    return issue.keys.map((key) => ({
      path: formatKeyPath([...issue.path, key]),
      message: `unknown key${hint}`,
    }));
  });
}
