/*
 * How one Switchyard tool call looks in an editor: its title, ACP kind, the locations its claim
 * names (so the editor can follow along), file edits as ACP diffs taken from the arguments, and
 * the content of its result. Pure: the arguments, the claim and the result say it all.
 */
import { isAbsolute, resolve } from 'node:path';
import type { ToolCallContent, ToolCallLocation, ToolKind } from '@agentclientprotocol/sdk';
import { redactText, summarizeAction } from '../approval/index.js';
import type { Claim } from '../concurrency/index.js';
import type { ToolResultError } from '../core/run-events.js';
import {
  applyPatchInput,
  bashInput,
  fileEditInput,
  fileOpsInput,
  fileReadInput,
  fileWriteInput,
  nodeInvokeInput,
  parsePatch,
  sessionSendInput,
  type FileOpsInput,
  type Hunk,
} from '../tools/builtins/index.js';
import { fenced } from './markdown-fence.js';
import { toolKind } from './tool-kinds.js';

export interface ToolCallFacts {
  tool: string;
  /** The arguments the model gave. */
  args: unknown;
  /** The claim the engine computed (tool.scheduled); paths in it are absolute. */
  claim?: Claim;
  /** The run's workspace: relative paths in the arguments are relative to it. */
  workspace: string;
}

export interface ToolCallView {
  title: string;
  kind: ToolKind;
  locations: ToolCallLocation[];
  /** What the editor shows before the call has a result: the diffs of a file edit. */
  content: ToolCallContent[];
}

export interface ToolCallResult {
  ok: boolean;
  output?: unknown;
  error?: ToolResultError;
}

export function toolCallView(facts: ToolCallFacts): ToolCallView {
  return {
    title: titleOf(facts),
    kind: toolKind(facts.tool, facts.args),
    locations: locationsOf(facts),
    content: diffsOf(facts),
  };
}

/** The content a finished call shows: its diffs when an edit succeeded, else its output or error as text. */
export function resultContent(facts: ToolCallFacts, result: ToolCallResult): ToolCallContent[] {
  if (!result.ok) return [text(result.error ? `${result.error.code}: ${result.error.message}` : 'failed')];
  const diffs = diffsOf(facts);
  if (diffs.length > 0) return diffs;
  const output = result.output;
  if (facts.tool === 'file_read' && isRecord(output) && typeof output['content'] === 'string')
    return [text(fenced(output['content']))];
  if (
    (facts.tool === 'bash' || facts.tool === 'node_invoke') &&
    isRecord(output) &&
    typeof output['output'] === 'string'
  ) {
    const exit = output['exitCode'];
    return [text(fenced(output['output']) + (typeof exit === 'number' && exit !== 0 ? `\nexit code ${exit}` : ''))];
  }
  if (output === undefined || output === '') return [];
  return [text(typeof output === 'string' ? output : fenced(JSON.stringify(output, null, 2), 'json'))];
}

function titleOf({ tool, args }: ToolCallFacts): string {
  switch (tool) {
    case 'file_read': {
      const input = fileReadInput.safeParse(args);
      if (!input.success) break;
      const { path, offset, limit } = input.data;
      if (offset === undefined && limit === undefined) return `Read ${path}`;
      const first = offset ?? 1;
      return `Read ${path} (lines ${first}–${limit === undefined ? 'end' : first + limit - 1})`;
    }
    case 'file_write': {
      const input = fileWriteInput.safeParse(args);
      if (input.success) return `Write ${input.data.path}`;
      break;
    }
    case 'file_edit': {
      const input = fileEditInput.safeParse(args);
      if (input.success) return `Edit ${input.data.path}`;
      break;
    }
    case 'apply_patch': {
      const input = applyPatchInput.safeParse(args);
      const parsed = input.success ? parsePatch(input.data.patch) : undefined;
      if (parsed?.ok) return `Patch ${parsed.ops.map((op) => op.path).join(', ')}`;
      break;
    }
    case 'file_ops': {
      const input = fileOpsInput.safeParse(args);
      if (input.success) return fileOpTitle(input.data);
      break;
    }
    case 'bash': {
      const input = bashInput.safeParse(args);
      if (input.success) return `\`${redactText(input.data.command)}\``;
      break;
    }
    case 'node_invoke': {
      const input = nodeInvokeInput.safeParse(args);
      if (input.success) return `On ${input.data.node}: \`${redactText(input.data.command)}\``;
      break;
    }
    case 'session_send': {
      const input = sessionSendInput.safeParse(args);
      if (input.success) return `Delegate to session ${input.data.session}`;
      break;
    }
  }
  // Redacted: the headline an approval prompt would show.
  return summarizeAction(tool, args).summary.split('\n', 1)[0] ?? tool;
}

function fileOpTitle(input: FileOpsInput): string {
  switch (input.operation) {
    case 'list':
      return `List ${input.path}`;
    case 'search':
      return `Search ${input.path} for ${input.pattern ?? ''}`;
    case 'stats':
      return `Inspect ${input.path}`;
    case 'move':
      return `Move ${input.path} to ${input.destination ?? '?'}`;
    case 'copy':
      return `Copy ${input.path} to ${input.destination ?? '?'}`;
    case 'delete':
      return `Delete ${input.path}`;
    case 'mkdir':
      return `Create directory ${input.path}`;
  }
}

/** The paths the claim names (reads or writes); a read of a line range points at its first line. */
function locationsOf({ tool, args, claim }: ToolCallFacts): ToolCallLocation[] {
  const paths =
    claim === undefined
      ? []
      : claim.kind === 'shared'
        ? (claim.reads ?? [])
        : claim.scope.kind === 'paths'
          ? claim.scope.paths
          : [];
  const read = tool === 'file_read' ? fileReadInput.safeParse(args) : undefined;
  const line = read?.success ? read.data.offset : undefined;
  return paths.map((path) => (line !== undefined && paths.length === 1 ? { path, line } : { path }));
}

/** File edits as ACP diffs: old and new text of an edit, the whole content of a write, each hunk of a patch. */
function diffsOf({ tool, args, workspace }: ToolCallFacts): ToolCallContent[] {
  const absolute = (path: string) => (isAbsolute(path) ? path : resolve(workspace, path));
  if (tool === 'file_edit') {
    const input = fileEditInput.safeParse(args);
    return input.success ? [diff(absolute(input.data.path), input.data.old, input.data.new)] : [];
  }
  if (tool === 'file_write') {
    const input = fileWriteInput.safeParse(args);
    return input.success ? [diff(absolute(input.data.path), null, input.data.content)] : [];
  }
  if (tool === 'apply_patch') {
    const input = applyPatchInput.safeParse(args);
    const parsed = input.success ? parsePatch(input.data.patch) : undefined;
    if (!parsed?.ok) return [];
    return parsed.ops.flatMap((op): ToolCallContent[] => {
      if (op.kind === 'add') return [diff(absolute(op.path), null, op.content)];
      if (op.kind === 'delete') return [];
      return [diff(absolute(op.moveTo ?? op.path), hunkSide(op.hunks, 'remove'), hunkSide(op.hunks, 'add'))];
    });
  }
  return [];
}

/** One side of a patch's hunks: context lines plus the removed (or the added) ones; hunks apart by a "⋯" line. */
function hunkSide(hunks: readonly Hunk[], side: 'remove' | 'add'): string {
  return hunks
    .map((hunk) =>
      hunk.lines
        .filter((line) => line.kind === 'context' || line.kind === side)
        .map((line) => line.text)
        .join('\n'),
    )
    .join('\n⋯\n');
}

function diff(path: string, oldText: string | null, newText: string): ToolCallContent {
  return { type: 'diff', path, oldText, newText };
}

function text(value: string): ToolCallContent {
  return { type: 'content', content: { type: 'text', text: value } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
