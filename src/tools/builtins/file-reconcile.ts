/*
 * The probes of file_write and file_edit (docs/durable-runs.md, "Replay rules"): after an
 * interruption, is the call's new content in the file? Each answers only what the file proves;
 * what it cannot tell apart it answers `unknown`, which the resume treats as unsafe.
 */
import { WorkspaceDir } from '../../sandbox/workspace-dir.js';
import { readWorkspaceTextIfExists } from '../../sandbox/workspace-files.js';
import { workspaceRelative } from '../../sandbox/workspace-scope.js';
import type { ReconcileAnswer } from '../replay.js';
import type { ToolContext } from '../tool.js';
import { countOccurrences } from './count-occurrences.js';
import type { FileEditInput, FileEditOutput } from './file-edit.js';
import type { FileWriteInput, FileWriteOutput } from './file-write.js';

/** The file's text now, or null when it does not exist. */
export function currentText(ctx: Pick<ToolContext, 'workspace' | 'sandbox'>, path: string): Promise<string | null> {
  const shown = workspaceRelative(ctx.workspace, path);
  return WorkspaceDir.with(ctx.workspace, ctx.sandbox, (workspace) =>
    readWorkspaceTextIfExists(workspace, path, shown),
  );
}

/** Done when the file holds exactly the content; otherwise writing it again is harmless (the write replaces). */
export async function reconcileFileWrite(input: FileWriteInput, ctx: ToolContext): Promise<ReconcileAnswer> {
  const text = await currentText(ctx, input.path);
  if (text !== input.content) return { state: 'not_done' };
  const result: FileWriteOutput = {
    path: workspaceRelative(ctx.workspace, input.path),
    bytes: Buffer.byteLength(input.content, 'utf8'),
  };
  return { state: 'done', result };
}

/**
 * An edit that ran left `new` in the file; one that did not run left `old` there (the edit
 * needs it). So: `new` absent means not done, `old` absent and `new` present means done, and
 * both present (`new` contains `old`, or the file had both) cannot be told apart. An empty
 * `new` is never "present": only `old` decides then.
 */
export async function reconcileFileEdit(input: FileEditInput, ctx: ToolContext): Promise<ReconcileAnswer> {
  const text = await currentText(ctx, input.path);
  if (text === null) return { state: 'not_done' };
  const olds = countOccurrences(text, input.old);
  const news = input.new === '' ? 0 : countOccurrences(text, input.new);
  const path = workspaceRelative(ctx.workspace, input.path);
  if (input.new === '') {
    if (olds > 0) return { state: 'not_done' };
    return { state: 'done', result: { path, replacements: 1 } satisfies FileEditOutput };
  }
  if (news === 0) return { state: 'not_done' };
  if (olds === 0) {
    // replaceAll replaced every occurrence; each left one `new` (a lower bound if the file had more).
    return { state: 'done', result: { path, replacements: input.replaceAll ? news : 1 } satisfies FileEditOutput };
  }
  return {
    state: 'unknown',
    why: `${path} holds both the old and the new text, so whether the edit ran cannot be told`,
  };
}
