/** file_edit: replaces an exact piece of text in a workspace file, once or everywhere. */
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import { WorkspaceDir } from '../../sandbox/workspace-dir.js';
import { openWorkspaceFile, replaceContent } from '../../sandbox/workspace-files.js';
import { workspaceClaimPath, workspaceRelative } from '../../sandbox/workspace-scope.js';
import { defineTool, ToolError } from '../tool.js';
import { countOccurrences } from './count-occurrences.js';
import { reconcileFileEdit } from './file-reconcile.js';
import { fileSystemError } from './file-system-error.js';

export const fileEditInput = z
  .object({
    path: z.string().min(1).describe('File path, relative to the workspace (or absolute inside it).'),
    old: z.string().min(1).describe('Exact text to replace, including whitespace and indentation.'),
    new: z.string().describe('Replacement text.'),
    replaceAll: z
      .boolean()
      .optional()
      .describe('Replace every occurrence of old. Default: false (old must occur exactly once).'),
  })
  .strict();

export type FileEditInput = z.infer<typeof fileEditInput>;

export interface FileEditOutput {
  path: string;
  replacements: number;
}

export const fileEditTool = defineTool<FileEditInput>({
  name: 'file_edit',
  description:
    'Replace exact text in a workspace file. `old` must match the file byte for byte (whitespace included) ' +
    'and occur exactly once, unless replaceAll is true. Returns {path, replacements}. ' +
    'Fails with edit_failed when old is not found or is ambiguous: read the file and include more context.',
  input: fileEditInput,
  concurrencyClaim: (input, ctx) => Claims.paths([workspaceClaimPath(ctx, input.path)]),
  replay: { probe: (input, ctx) => reconcileFileEdit(input, ctx) },
  async execute(input, ctx): Promise<FileEditOutput> {
    const shown = workspaceRelative(ctx.workspace, input.path);
    if (input.old === input.new)
      throw new ToolError('edit_failed', `old and new are identical; ${shown} would not change`);
    try {
      return await WorkspaceDir.with(ctx.workspace, ctx.sandbox, async (workspace) => {
        // One descriptor for the read and the write: the file edited is the file read.
        const file = await openWorkspaceFile(workspace, input.path, 'update', shown);
        try {
          const text = (await file.handle.readFile({ signal: ctx.signal })).toString('utf8');
          const found = countOccurrences(text, input.old);
          if (found === 0) {
            throw new ToolError(
              'edit_failed',
              `old text not found in ${shown}; read the file and copy the exact text, whitespace included`,
            );
          }
          if (found > 1 && !input.replaceAll) {
            throw new ToolError(
              'edit_failed',
              `old text occurs ${found} times in ${shown}; include more surrounding lines to make it unique, or set replaceAll: true`,
            );
          }
          const replacements = input.replaceAll ? found : 1;
          // split/join and slicing avoid String.replace's `$&`-style patterns in the new text.
          const updated = input.replaceAll
            ? text.split(input.old).join(input.new)
            : text.slice(0, text.indexOf(input.old)) +
              input.new +
              text.slice(text.indexOf(input.old) + input.old.length);
          ctx.signal.throwIfAborted();
          await replaceContent(file.handle, Buffer.from(updated, 'utf8'));
          return { path: shown, replacements };
        } finally {
          await file.handle.close();
        }
      });
    } catch (error) {
      throw fileSystemError(error, shown);
    }
  },
});
