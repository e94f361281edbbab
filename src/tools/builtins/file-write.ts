/** file_write: creates or replaces a file of the workspace, creating missing parent directories. */
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import { WorkspaceDir } from '../../sandbox/workspace-dir.js';
import { writeWorkspaceFile } from '../../sandbox/workspace-files.js';
import { workspaceClaimPath, workspaceRelative } from '../../sandbox/workspace-scope.js';
import { defineTool } from '../tool.js';
import { reconcileFileWrite } from './file-reconcile.js';
import { fileSystemError } from './file-system-error.js';

export const fileWriteInput = z
  .object({
    path: z.string().min(1).describe('File path, relative to the workspace (or absolute inside it).'),
    content: z.string().describe('The complete new content of the file (UTF-8).'),
  })
  .strict();

export type FileWriteInput = z.infer<typeof fileWriteInput>;

export interface FileWriteOutput {
  path: string;
  bytes: number;
}

export const fileWriteTool = defineTool<FileWriteInput>({
  name: 'file_write',
  description:
    'Write a UTF-8 text file in the workspace, replacing it if it exists and creating missing parent ' +
    'directories. Returns {path, bytes}. To change part of an existing file prefer file_edit or apply_patch.',
  input: fileWriteInput,
  idempotent: true,
  // Idempotent, so running it again would do; the probe spares the write and gives the result.
  replay: { probe: (input, ctx) => reconcileFileWrite(input, ctx) },
  concurrencyClaim: (input, ctx) => Claims.paths([workspaceClaimPath(ctx, input.path)]),
  async execute(input, ctx): Promise<FileWriteOutput> {
    const shown = workspaceRelative(ctx.workspace, input.path);
    try {
      await WorkspaceDir.with(ctx.workspace, ctx.sandbox, (workspace) =>
        writeWorkspaceFile(workspace, input.path, input.content, shown),
      );
    } catch (error) {
      throw fileSystemError(error, shown);
    }
    return { path: shown, bytes: Buffer.byteLength(input.content, 'utf8') };
  },
});
