/*
 * What an approval prompt shows (README, "Approval, command policy and the sandbox"): the concrete
 * action in a few lines — the command in full, the paths it touches, long contents cut with a
 * marker — with secrets redacted first, so neither the prompt nor the `approval.requested` event
 * carries them.
 */
import { canonicalJson } from '../concurrency/index.js';
import { redactValue } from './redact.js';

export interface ActionSummary {
  tool: string;
  /** A headline, then indented detail lines. */
  summary: string;
  /** The command, in full (redacted). */
  command?: string;
  /** Paths the action names, as given. */
  paths?: string[];
  destructive: boolean;
}

/** What a tool says about one call beyond its plain arguments (its `describe` hook). */
export interface ActionDescription {
  /** Detail lines, e.g. one per file a patch touches. */
  lines: string[];
  /** Paths the call touches. */
  paths: string[];
  /** Argument keys the lines stand for: they are not shown again. */
  replaces?: string[];
}

export interface SummaryExtra {
  /** The tool or this operation is destructive (shown in the headline). */
  destructive?: boolean;
  description?: ActionDescription;
}

/** Longest shown value other than commands and paths, in characters. */
export const SUMMARY_VALUE_LIMIT = 200;

/** Keys whose string values are paths, in the order they read in a headline. */
const PATH_KEYS = ['path', 'source', 'file', 'filename', 'directory', 'dir', 'destination', 'target'] as const;

export function summarizeAction(tool: string, args: unknown, extra: SummaryExtra = {}): ActionSummary {
  const destructive = extra.destructive === true;
  const redacted = redactValue(args);
  if (!isRecord(redacted)) {
    const summary = `${headlinePrefix(tool, destructive)} ${truncate(canonicalJson(redacted), SUMMARY_VALUE_LIMIT)}`;
    return { tool, summary, destructive };
  }
  const shown = new Set<string>();
  const take = (key: string): unknown => {
    shown.add(key);
    return redacted[key];
  };

  const command = typeof redacted.command === 'string' ? (take('command') as string) : undefined;
  const operation = typeof redacted.operation === 'string' ? (take('operation') as string) : undefined;
  const named = PATH_KEYS.filter((key) => typeof redacted[key] === 'string').map((key) => take(key) as string);
  const described = extra.description ? (redactValue(extra.description) as ActionDescription) : undefined;
  for (const key of described?.replaces ?? []) take(key);
  const paths = [...named, ...(described?.paths ?? [])];

  let headline = headlinePrefix(tool, destructive);
  if (operation !== undefined) headline += ` ${operation}`;
  if (command !== undefined) headline += `: ${command}`;
  else if (named.length > 0) headline += ` ${named.join(' -> ')}`;

  const details = [
    ...(described?.lines ?? []),
    ...Object.keys(redacted)
      .filter((key) => !shown.has(key) && redacted[key] !== undefined)
      .sort()
      .map((key) => `${key}: ${renderValue(redacted[key])}`),
  ];
  return {
    tool,
    summary: [headline, ...details.map((line) => `  ${line}`)].join('\n'),
    ...(command !== undefined ? { command } : {}),
    ...(paths.length > 0 ? { paths } : {}),
    destructive,
  };
}

function headlinePrefix(tool: string, destructive: boolean): string {
  return destructive ? `${tool} (destructive)` : tool;
}

function renderValue(value: unknown): string {
  return truncate(typeof value === 'string' ? JSON.stringify(value) : canonicalJson(value), SUMMARY_VALUE_LIMIT);
}

/** Cuts text to `limit` characters (never inside a surrogate pair) with a visible marker. */
export function truncate(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = limit;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}… [truncated, ${text.length - end} more characters]`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
