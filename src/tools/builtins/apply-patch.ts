/*
 * apply_patch: applies a multi-file patch envelope (see patch-parser.ts). Every path is checked
 * against the workspace and every hunk against the current contents before anything is
 * written, so a patch that fails changes nothing.
 */
import { unlink } from 'node:fs/promises';
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import { errorCode, WorkspaceDir } from '../../sandbox/workspace-dir.js';
import { readWorkspaceTextIfExists, writeWorkspaceFile } from '../../sandbox/workspace-files.js';
import { workspaceClaimPath, workspaceRelative } from '../../sandbox/workspace-scope.js';
import { withLocated } from '../../sandbox/workspace-tree.js';
import type { ToolContext } from '../tool.js';
import { defineTool, ToolError } from '../tool.js';
import { reconcileApplyPatch } from './apply-patch-reconcile.js';
import { fileSystemError } from './file-system-error.js';
import { applyHunks } from './patch-hunks.js';
import type { PatchOp } from './patch-parser.js';
import { parsePatch, patchPaths } from './patch-parser.js';

export const applyPatchInput = z
  .object({
    patch: z.string().min(1).describe('The patch envelope, from "*** Begin Patch" to "*** End Patch".'),
  })
  .strict();

export type ApplyPatchInput = z.infer<typeof applyPatchInput>;

export interface PatchedFile {
  action: 'add' | 'update' | 'delete' | 'move';
  path: string;
  /** Destination of a move. */
  to?: string;
}

export interface ApplyPatchOutput {
  files: PatchedFile[];
}

const DESCRIPTION = `Apply a patch that adds, updates, moves or deletes files in the workspace. Format:
*** Begin Patch
*** Add File: path/new.ts
+every line of the new file, prefixed with "+"
*** Update File: path/old.ts
*** Move to: path/renamed.ts   (optional)
@@ optional line to find first, e.g. a function signature
 context line (prefixed with one space)
-line to remove
+line to add
*** Delete File: path/gone.ts
*** End Patch
Each hunk starts with "@@"; its context and "-" lines must match the current file in order \
(trailing whitespace is ignored). Give about 3 lines of context around each change. Paths are relative to \
the workspace. The patch is checked completely before anything is written: if one hunk fails, no file \
changes. Returns {files: [{action, path, to?}]}.`;

/**
 * Contents planned for each file, keyed by its path in the workspace with symlinks resolved:
 * text to write, or null to delete; `shown` names it in errors.
 */
type Plan = Map<string, { text: string | null; shown: string }>;

/** Resolved paths of the envelope's paths, all checked against the workspace before planning. */
type Placement = ReadonlyMap<string, string>;

function placed(placement: Placement, path: string): string {
  const real = placement.get(path);
  if (real === undefined) throw new Error(`apply_patch: ${path} was not placed before planning`);
  return real;
}

async function currentText(workspace: WorkspaceDir, plan: Plan, real: string, shown: string): Promise<string | null> {
  const planned = plan.get(real);
  if (planned !== undefined) return planned.text;
  try {
    return await readWorkspaceTextIfExists(workspace, real, shown);
  } catch (error) {
    throw fileSystemError(error, shown);
  }
}

function patchFailed(message: string): ToolError {
  return new ToolError('patch_failed', `${message}; no file was changed`);
}

async function planOp(
  workspace: WorkspaceDir,
  op: PatchOp,
  plan: Plan,
  placement: Placement,
  ctx: ToolContext,
): Promise<PatchedFile> {
  const shown = workspaceRelative(ctx.workspace, op.path);
  const real = placed(placement, op.path);
  const current = await currentText(workspace, plan, real, shown);
  switch (op.kind) {
    case 'add':
      if (current !== null)
        throw patchFailed(`Add File ${shown}: the file already exists; use "*** Update File:" to change it`);
      plan.set(real, { text: op.content, shown });
      return { action: 'add', path: shown };
    case 'delete':
      if (current === null) throw patchFailed(`Delete File ${shown}: the file does not exist`);
      plan.set(real, { text: null, shown });
      return { action: 'delete', path: shown };
    case 'update': {
      if (current === null)
        throw patchFailed(`Update File ${shown}: the file does not exist; use "*** Add File:" to create it`);
      const applied = applyHunks(current, op.hunks);
      if (!applied.ok) throw patchFailed(`Update File ${shown}: ${applied.error}`);
      if (op.moveTo === undefined) {
        plan.set(real, { text: applied.text, shown });
        return { action: 'update', path: shown };
      }
      const to = workspaceRelative(ctx.workspace, op.moveTo);
      const destination = placed(placement, op.moveTo);
      if (destination !== real) {
        if ((await currentText(workspace, plan, destination, to)) !== null) {
          throw patchFailed(`Move to ${to}: the destination already exists`);
        }
        plan.set(real, { text: null, shown });
      }
      plan.set(destination, { text: applied.text, shown: to });
      return { action: 'move', path: shown, to };
    }
  }
}

export const applyPatchTool = defineTool<ApplyPatchInput>({
  name: 'apply_patch',
  description: DESCRIPTION,
  input: applyPatchInput,
  describe(input) {
    const parsed = parsePatch(input.patch);
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
    return { lines, paths, replaces: ['patch'] };
  },
  replay: { probe: (input, ctx) => reconcileApplyPatch(input, ctx) },
  concurrencyClaim(input, ctx) {
    const parsed = parsePatch(input.patch);
    if (!parsed.ok) return Claims.global();
    return Claims.paths(patchPaths(parsed.ops).map((path) => workspaceClaimPath(ctx, path)));
  },
  async execute(input, ctx): Promise<ApplyPatchOutput> {
    const parsed = parsePatch(input.patch);
    if (!parsed.ok) throw new ToolError('invalid_patch', parsed.error);

    return WorkspaceDir.with(ctx.workspace, ctx.sandbox, async (workspace) => {
      // Every path is placed before any file is read, so an escape refuses the whole patch.
      const placement = new Map<string, string>();
      for (const path of patchPaths(parsed.ops)) {
        const real = await workspace.canonical(path).catch((error: unknown) => {
          throw fileSystemError(error, workspaceRelative(ctx.workspace, path));
        });
        placement.set(path, real);
      }

      const plan: Plan = new Map();
      const files: PatchedFile[] = [];
      for (const op of parsed.ops) files.push(await planOp(workspace, op, plan, placement, ctx));
      ctx.signal.throwIfAborted();

      // Writes before deletes: a move whose write fails keeps its source.
      for (const [real, { text, shown }] of plan) {
        if (text === null) continue;
        try {
          await writeWorkspaceFile(workspace, real, text, shown);
        } catch (error) {
          throw fileSystemError(error, shown);
        }
      }
      for (const [real, { text, shown }] of plan) {
        if (text === null)
          await deleteFile(workspace, real).catch((error: unknown) => Promise.reject(fileSystemError(error, shown)));
      }
      return { files };
    });
  },
});

/** Removes the file (not a link's target: `real` has its links resolved already); gone already is fine. */
async function deleteFile(workspace: WorkspaceDir, real: string): Promise<void> {
  try {
    await withLocated(workspace, real, { follow: false }, async (located) => {
      if (located.name !== undefined) await unlink(located.dir.entry(located.name));
    });
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}
