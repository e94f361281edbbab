/*
 * What an approval prompt shows (README, "Approval, command policy and the sandbox"): the concrete
 * action in a few lines — the command in full, the paths it touches, long contents cut with a
 * marker — with secrets redacted first, so neither the prompt nor the `approval.requested` event
 * carries them.
 */
import { canonicalJson } from '../concurrency/index.js';
import { parsePatch } from '../tools/builtins/patch-parser.js';
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

export interface SummaryExtra {
  /** The tool or this operation is destructive (shown in the headline). */
  destructive?: boolean;
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
  const patchLines = typeof redacted.patch === 'string' ? patchOperations(redacted.patch) : undefined;
  if (patchLines) take('patch');
  const paths = [...named, ...(patchLines?.paths ?? [])];

  let headline = headlinePrefix(tool, destructive);
  if (operation !== undefined) headline += ` ${operation}`;
  if (command !== undefined) headline += `: ${command}`;
  else if (named.length > 0) headline += ` ${named.join(' -> ')}`;

  const details = [
    ...(patchLines?.lines ?? []),
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

/** The files an apply_patch envelope touches, one line each; undefined when it does not parse. */
function patchOperations(patch: string): { lines: string[]; paths: string[] } | undefined {
  const parsed = parsePatch(patch);
  if (!parsed.ok) return undefined;
  const lines: string[] = [];
  const paths: string[] = [];
  for (const op of parsed.ops) {
    paths.push(op.path);
    if (op.kind === 'update' && op.moveTo !== undefined) {
      paths.push(op.moveTo);
      lines.push(`update ${op.path} -> ${op.moveTo}`);
    } else {
      lines.push(`${op.kind} ${op.path}`);
    }
  }
  return { lines, paths };
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
