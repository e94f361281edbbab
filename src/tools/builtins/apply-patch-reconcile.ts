/*
 * The probe of apply_patch (docs/durable-runs.md, "Replay rules"): after an interruption, is
 * the patch's new content there? Each operation is judged on its own — an add by the file
 * holding exactly its content, a delete by the file being gone, an update by its hunks
 * applying backwards (the post-image is there) and not forwards (the pre-image is gone) —
 * and the patch is done when every operation is, not done when none is. A patch half applied
 * (apply_patch writes its files one by one) or an operation the files cannot decide is
 * `unknown`: running it again would fail on the files already changed.
 */
import type { ReconcileAnswer } from '../replay.js';
import type { ToolContext } from '../tool.js';
import { workspaceRelative } from '../../sandbox/workspace-scope.js';
import type { ApplyPatchInput, ApplyPatchOutput, PatchedFile } from './apply-patch.js';
import { currentText } from './file-reconcile.js';
import { applyHunks } from './patch-hunks.js';
import type { Hunk, PatchOp } from './patch-parser.js';
import { parsePatch } from './patch-parser.js';

type OpState = 'done' | 'not_done' | 'unknown';

export async function reconcileApplyPatch(input: ApplyPatchInput, ctx: ToolContext): Promise<ReconcileAnswer> {
  const parsed = parsePatch(input.patch);
  // A patch that does not parse never changed anything: running it again fails the same way.
  if (!parsed.ok) return { state: 'not_done' };
  const states: OpState[] = [];
  for (const op of parsed.ops) states.push(await stateOf(op, ctx));
  if (states.every((state) => state === 'done')) {
    const result: ApplyPatchOutput = { files: parsed.ops.map((op) => patchedFile(op, ctx)) };
    return { state: 'done', result };
  }
  if (states.every((state) => state === 'not_done')) return { state: 'not_done' };
  const shown = parsed.ops.map((op, i) => `${op.kind} ${op.path}: ${states[i]}`).join('; ');
  return { state: 'unknown', why: `the patch is not wholly applied nor wholly unapplied (${shown})` };
}

async function stateOf(op: PatchOp, ctx: ToolContext): Promise<OpState> {
  const text = await currentText(ctx, op.path);
  switch (op.kind) {
    case 'add':
      if (text === null) return 'not_done';
      return text === op.content ? 'done' : 'unknown';
    case 'delete':
      return text === null ? 'done' : 'not_done';
    case 'update': {
      const moved = op.moveTo !== undefined && workspaceRelative(ctx.workspace, op.moveTo) !== shownOf(op, ctx);
      if (!moved) return text === null ? 'unknown' : updateState(text, op.hunks);
      const destination = await currentText(ctx, op.moveTo!);
      if (text !== null && destination === null)
        return updateState(text, op.hunks) === 'not_done' ? 'not_done' : 'unknown';
      if (text === null && destination !== null)
        return updateState(destination, op.hunks) === 'done' ? 'done' : 'unknown';
      // Both there: the move's write landed and its delete did not (or the destination was there before).
      return 'unknown';
    }
  }
}

/** Forwards only: not applied; backwards only: applied; both or neither: the text does not tell. */
function updateState(text: string, hunks: readonly Hunk[]): OpState {
  const forwards = applyHunks(text, hunks).ok;
  const backwards = applyHunks(text, hunks.map(reversed)).ok;
  if (forwards && !backwards) return 'not_done';
  if (backwards && !forwards) return 'done';
  return 'unknown';
}

/** The hunk that undoes `hunk`: its added lines are the ones to find, its removed lines the ones to put back. */
function reversed(hunk: Hunk): Hunk {
  return {
    ...hunk,
    lines: hunk.lines.map((line) =>
      line.kind === 'add' ? { ...line, kind: 'remove' } : line.kind === 'remove' ? { ...line, kind: 'add' } : line,
    ),
  };
}

function shownOf(op: PatchOp, ctx: ToolContext): string {
  return workspaceRelative(ctx.workspace, op.path);
}

/** What apply_patch reports of the operation (its `files` entry). */
function patchedFile(op: PatchOp, ctx: ToolContext): PatchedFile {
  const path = shownOf(op, ctx);
  if (op.kind !== 'update') return { action: op.kind, path };
  if (op.moveTo === undefined) return { action: 'update', path };
  return { action: 'move', path, to: workspaceRelative(ctx.workspace, op.moveTo) };
}
