/*
 * Turns zod's issues into ConfigIssues that speak TOML: a dotted key path and a sentence that
 * says what was found and what is allowed (issue-text.ts, in TOML's words).
 */
import { z } from 'zod';
import type { ConfigIssue } from './errors.js';
import { describeIssue, TOML_WORDS } from './issue-text.js';

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

/** One ConfigIssue per problem; an unknown key becomes its own issue at its own path. */
export function configIssuesFromZod(error: z.ZodError, root: z.core.$ZodType): ConfigIssue[] {
  return error.issues.flatMap((issue): ConfigIssue[] => {
    if (issue.code !== 'unrecognized_keys') {
      return [{ path: formatKeyPath(issue.path), message: describeIssue(issue, TOML_WORDS) }];
    }
    const allowed = allowedKeys(root, issue.path);
    const hint = allowed.length > 0 ? ` (allowed here: ${allowed.join(', ')})` : '';
    return issue.keys.map((key) => ({
      path: formatKeyPath([...issue.path, key]),
      message: `unknown key${hint}`,
    }));
  });
}
