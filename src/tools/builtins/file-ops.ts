/** file_ops: listing, searching and inspecting the workspace, and moving, copying, deleting and creating entries. */
import type { Dirent, Stats } from 'node:fs';
import { cp, lstat, mkdir, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import type { Claim } from '../../concurrency/index.js';
import {
  ensureEntryInsideWorkspace,
  ensureInsideWorkspace,
  workspaceClaimPath,
  workspaceRelative,
} from '../../sandbox/workspace-scope.js';
import type { ClaimContext } from '../../concurrency/index.js';
import type { ToolContext } from '../tool.js';
import { defineTool, ToolError } from '../tool.js';
import { fileSystemError } from './file-system-error.js';
import { searchFiles, searchMatcher } from './file-search.js';
import type { SearchResult } from './file-search.js';

export const LIST_MAX_ENTRIES = 1000;

const OPERATIONS = ['list', 'search', 'stats', 'move', 'copy', 'delete', 'mkdir'] as const;
export type FileOperation = (typeof OPERATIONS)[number];

export const fileOpsInput = z
  .object({
    operation: z.enum(OPERATIONS).describe('What to do; see the tool description.'),
    path: z.string().min(1).describe('Path the operation applies to, relative to the workspace (or absolute inside it).'),
    destination: z.string().min(1).optional().describe('New path, for move and copy.'),
    pattern: z
      .string()
      .min(1)
      .optional()
      .describe('For search: a substring, or a regular expression written as /source/flags.'),
    recursive: z
      .boolean()
      .optional()
      .describe('list: include subdirectories (default false). search: descend into subdirectories (default true). delete: required to delete a non-empty directory.'),
  })
  .strict()
  .superRefine((input, issues) => {
    if ((input.operation === 'move' || input.operation === 'copy') && input.destination === undefined) {
      issues.addIssue({ code: 'custom', path: ['destination'], message: `${input.operation} needs a destination` });
    }
    if (input.operation === 'search') {
      const matcher = input.pattern === undefined ? 'search needs a pattern' : searchMatcher(input.pattern);
      if (typeof matcher === 'string') issues.addIssue({ code: 'custom', path: ['pattern'], message: matcher });
    }
  });

export type FileOpsInput = z.infer<typeof fileOpsInput>;

type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export interface ListedEntry {
  name: string;
  type: EntryType;
  size: number;
}

const READ_OPERATIONS: ReadonlySet<FileOperation> = new Set(['list', 'search', 'stats']);

/** Whether the operation destroys or relocates existing data: what the approval gate asks about. */
export function isDestructiveFileOp(input: Pick<FileOpsInput, 'operation'>): boolean {
  return input.operation === 'delete' || input.operation === 'move';
}

function fileOpsClaim(input: FileOpsInput, ctx: ClaimContext): Claim {
  const path = workspaceClaimPath(ctx, input.path);
  if (READ_OPERATIONS.has(input.operation)) return Claims.shared([path]);
  if (input.operation === 'move' || input.operation === 'copy') {
    return Claims.paths([path, input.destination === undefined ? undefined : workspaceClaimPath(ctx, input.destination)]);
  }
  return Claims.paths([path]);
}

function entryType(entry: Dirent | Stats): EntryType {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isDirectory()) return 'directory';
  return entry.isFile() ? 'file' : 'other';
}

async function exists(real: string): Promise<boolean> {
  return lstat(real).then(
    () => true,
    () => false,
  );
}

async function list(real: string, recursive: boolean, signal: AbortSignal): Promise<{ entries: ListedEntry[]; truncated?: true }> {
  const entries: ListedEntry[] = [];
  const pending: { real: string; prefix: string }[] = [{ real, prefix: '' }];
  for (let directory = pending.shift(); directory !== undefined; directory = pending.shift()) {
    signal.throwIfAborted();
    const children = await readdir(directory.real, { withFileTypes: true });
    children.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const child of children) {
      if (entries.length === LIST_MAX_ENTRIES) return { entries, truncated: true };
      const childReal = join(directory.real, child.name);
      const type = entryType(child);
      const size = type === 'file' ? (await lstat(childReal)).size : 0;
      entries.push({ name: directory.prefix + child.name, type, size });
      // Symlinks are listed, not followed: their targets may lie outside the workspace.
      if (recursive && type === 'directory') pending.push({ real: childReal, prefix: `${directory.prefix}${child.name}/` });
    }
  }
  return { entries };
}

async function search(input: FileOpsInput, real: string, shown: string, signal: AbortSignal): Promise<SearchResult & { pattern: string }> {
  const pattern = input.pattern ?? '';
  const matcher = searchMatcher(pattern);
  if (typeof matcher === 'string') throw new ToolError('invalid_pattern', matcher);
  return { pattern, ...(await searchFiles(real, shown, matcher, input.recursive ?? true, signal)) };
}

async function stats(real: string): Promise<{ type: EntryType; size: number; modified: string; mode: string }> {
  const info = await stat(real);
  return { type: entryType(info), size: info.size, modified: info.mtime.toISOString(), mode: (info.mode & 0o7777).toString(8) };
}

async function refuseWorkspaceRoot(ctx: ToolContext, real: string, operation: FileOperation): Promise<void> {
  if (real === (await ensureInsideWorkspace(ctx.workspace, '.'))) {
    throw new ToolError('invalid_operation', `${operation} cannot apply to the workspace itself; name an entry inside it`);
  }
}

/** The destination's real path, refused when something already exists there. */
async function freeDestination(ctx: ToolContext, destination: string | undefined, operation: FileOperation): Promise<{ real: string; shown: string }> {
  if (destination === undefined) throw new ToolError('invalid_arguments', `${operation} needs a destination`);
  const shown = workspaceRelative(ctx.workspace, destination);
  const real = await ensureInsideWorkspace(ctx.workspace, destination);
  if (await exists(real)) throw new ToolError('already_exists', `${shown} already exists; delete it first or choose another destination`);
  return { real, shown };
}

async function move(ctx: ToolContext, input: FileOpsInput, shown: string): Promise<{ path: string; destination: string }> {
  const source = await ensureEntryInsideWorkspace(ctx.workspace, input.path);
  await refuseWorkspaceRoot(ctx, source, 'move');
  await lstat(source);
  const destination = await freeDestination(ctx, input.destination, 'move');
  await mkdir(dirname(destination.real), { recursive: true });
  try {
    await rename(source, destination.real);
  } catch (error) {
    // Another file system (a mount inside the workspace): copy, then remove the source.
    if ((error as { code?: unknown }).code !== 'EXDEV') throw error;
    await cp(source, destination.real, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true });
    await rm(source, { recursive: true });
  }
  return { path: shown, destination: destination.shown };
}

async function copy(ctx: ToolContext, input: FileOpsInput, shown: string): Promise<{ path: string; destination: string }> {
  const source = await ensureInsideWorkspace(ctx.workspace, input.path);
  await stat(source);
  const destination = await freeDestination(ctx, input.destination, 'copy');
  await mkdir(dirname(destination.real), { recursive: true });
  await cp(source, destination.real, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true });
  return { path: shown, destination: destination.shown };
}

async function remove(ctx: ToolContext, input: FileOpsInput, shown: string): Promise<{ path: string; deleted: EntryType }> {
  const entry = await ensureEntryInsideWorkspace(ctx.workspace, input.path);
  await refuseWorkspaceRoot(ctx, entry, 'delete');
  const type = entryType(await lstat(entry));
  if (type !== 'directory') await unlink(entry);
  else if (input.recursive) await rm(entry, { recursive: true });
  else await rmdir(entry);
  return { path: shown, deleted: type };
}

const DESCRIPTION = `File system operations in the workspace. operation:
- "list": entries of the directory at path ({name, type, size}); recursive: true includes subdirectories. At most ${LIST_MAX_ENTRIES} entries.
- "search": lines of files under path containing pattern (a substring, or /regex/flags); returns {path, line, text} matches, at most 200. Skips .git, node_modules, binary and very large files.
- "stats": type, size, modification time and mode of path.
- "move" / "copy": path to destination (which must not exist; parent directories are created). Directories are copied with their contents.
- "delete": removes a file, a symlink (not its target) or an empty directory; recursive: true deletes a directory with its contents.
- "mkdir": creates the directory at path with any missing parents.
All paths are relative to the workspace and must stay inside it.`;

export const fileOpsTool = defineTool<FileOpsInput>({
  name: 'file_ops',
  description: DESCRIPTION,
  input: fileOpsInput,
  destructive: false,
  destructiveFor: isDestructiveFileOp,
  concurrencyClaim: fileOpsClaim,
  async execute(input, ctx): Promise<unknown> {
    const shown = workspaceRelative(ctx.workspace, input.path);
    try {
      switch (input.operation) {
        case 'list': {
          const real = await ensureInsideWorkspace(ctx.workspace, input.path);
          return { path: shown, ...(await list(real, input.recursive ?? false, ctx.signal)) };
        }
        case 'search':
          return { path: shown, ...(await search(input, await ensureInsideWorkspace(ctx.workspace, input.path), shown, ctx.signal)) };
        case 'stats':
          return { path: shown, ...(await stats(await ensureInsideWorkspace(ctx.workspace, input.path))) };
        case 'move':
          return await move(ctx, input, shown);
        case 'copy':
          return await copy(ctx, input, shown);
        case 'delete':
          return await remove(ctx, input, shown);
        case 'mkdir': {
          const real = await ensureInsideWorkspace(ctx.workspace, input.path);
          const created = await mkdir(real, { recursive: true });
          return { path: shown, created: created !== undefined };
        }
      }
    } catch (error) {
      throw fileSystemError(error, shown);
    }
  },
});
