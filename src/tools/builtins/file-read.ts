/** file_read: returns a text file of the workspace, whole or a range of lines, capped in size. */
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import { WorkspaceDir } from '../../sandbox/workspace-dir.js';
import { openWorkspaceFile } from '../../sandbox/workspace-files.js';
import { workspaceClaimPath, workspaceRelative } from '../../sandbox/workspace-scope.js';
import { defineTool, ToolError } from '../tool.js';
import { fileSystemError } from './file-system-error.js';
import { looksBinary, truncateUtf8 } from './text-content.js';

/** Most content one call returns; the model reads on with `offset`. */
export const FILE_READ_MAX_BYTES = 256 * 1024;
/** Larger files are not loaded at all: a model should not page through them with this tool. */
const FILE_READ_MAX_FILE_BYTES = 32 * 1024 * 1024;

export const fileReadInput = z
  .object({
    path: z.string().min(1).describe('File path, relative to the workspace (or absolute inside it).'),
    offset: z.number().int().min(1).optional().describe('First line to return, 1-based. Default: 1.'),
    limit: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Maximum number of lines to return. Default: to the end of the file.'),
  })
  .strict();

export type FileReadInput = z.infer<typeof fileReadInput>;

export interface FileReadOutput {
  path: string;
  content: string;
  totalLines: number;
  truncated?: true;
}

/** Lines `offset..offset+limit` of `text`, keeping the newline that ends the last one. */
function selectLines(text: string, offset: number, limit: number | undefined): { content: string; totalLines: number } {
  const lines = text.split('\n');
  const endsWithNewline = text.endsWith('\n');
  if (endsWithNewline) lines.pop();
  const totalLines = text === '' ? 0 : lines.length;
  if (offset === 1 && limit === undefined) return { content: text, totalLines };
  const start = offset - 1;
  const end = limit === undefined ? lines.length : Math.min(lines.length, start + limit);
  if (start >= end) return { content: '', totalLines };
  const followedByNewline = end < lines.length || endsWithNewline;
  return { content: lines.slice(start, end).join('\n') + (followedByNewline ? '\n' : ''), totalLines };
}

export const fileReadTool = defineTool<FileReadInput>({
  name: 'file_read',
  description:
    'Read a UTF-8 text file in the workspace. Returns {path, content, totalLines}. ' +
    'Use offset (1-based line) and limit (lines) to read part of a large file. ' +
    `At most ${FILE_READ_MAX_BYTES / 1024} KiB of content is returned per call; when cut, truncated is true ` +
    'and the content ends with a marker that gives the offset to continue from. Binary files are refused.',
  input: fileReadInput,
  readOnly: true,
  idempotent: true,
  concurrencyClaim: (input, ctx) => Claims.shared([workspaceClaimPath(ctx, input.path)]),
  async execute(input, ctx): Promise<FileReadOutput> {
    const shown = workspaceRelative(ctx.workspace, input.path);
    try {
      const bytes = await WorkspaceDir.with(ctx.workspace, ctx.sandbox, async (workspace) => {
        const file = await openWorkspaceFile(workspace, input.path, 'read', shown);
        try {
          const info = await file.handle.stat();
          if (info.size > FILE_READ_MAX_FILE_BYTES) {
            throw new ToolError(
              'file_too_large',
              `${shown} is ${info.size} bytes, more than file_read loads (${FILE_READ_MAX_FILE_BYTES}); search it with file_ops "search" instead`,
            );
          }
          return await file.handle.readFile({ signal: ctx.signal });
        } finally {
          await file.handle.close();
        }
      });
      if (looksBinary(bytes)) {
        throw new ToolError(
          'binary_file',
          `${shown} looks binary (it contains NUL bytes); file_read returns text only`,
        );
      }
      const offset = input.offset ?? 1;
      const { content, totalLines } = selectLines(bytes.toString('utf8'), offset, input.limit);
      const cut = truncateUtf8(content, FILE_READ_MAX_BYTES);
      if (!cut.truncated) return { path: shown, content, totalLines };
      const nextOffset = offset + (cut.text.match(/\n/g)?.length ?? 0);
      return {
        path: shown,
        content: `${cut.text}\n[… truncated at ${FILE_READ_MAX_BYTES} bytes; continue with offset=${nextOffset}]`,
        totalLines,
        truncated: true,
      };
    } catch (error) {
      throw fileSystemError(error, shown);
    }
  },
});
