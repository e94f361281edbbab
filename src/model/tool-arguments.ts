/*
 * A tool call's argument text, as the model wrote it, becomes either a JSON object or a
 * malformed call. Small local models (and replies cut by max_tokens) write text that is not
 * JSON; strict servers answer 400 when such text is sent back, so it never enters the
 * conversation as arguments: the call fails with `invalid_arguments` and the text is quoted.
 */
import type { JsonValue } from './types.js';

export type ParsedArguments =
  { args: { [key: string]: JsonValue | undefined } } | { args: Record<string, never>; malformed: string };

export function parseToolArguments(text: string): ParsedArguments {
  if (text.trim() === '') return { args: {} };
  const value = parseJson(text);
  if (isObject(value)) return { args: value };
  // Some servers encode the arguments twice ("\"{\\\"path\\\": ...}\""): the inner text is what the model meant.
  if (typeof value === 'string') {
    const inner = parseJson(value);
    if (isObject(inner)) return { args: inner };
  }
  return { args: {}, malformed: text };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is { [key: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
