/** file_ops: listing, searching and inspecting the workspace, and moving, copying, deleting and creating entries. */
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import type { Claim } from '../../concurrency/index.js';
import type { Located } from '../../sandbox/workspace-dir.js';
import { WorkspaceDir } from '../../sandbox/workspace-dir.js';
import { workspaceClaimPath, workspaceRelative } from '../../sandbox/workspace-scope.js';
import type { EntryType } from '../../sandbox/workspace-tree.js';
import {
  copyEntry,
  entriesOf,
  entryType,
  makeDirectories,
  moveEntry,
  openDirectory,
  openSubdirectory,
  removeEntry,
  statLocated,
  withLocated,
} from '../../sandbox/workspace-tree.js';
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
    path: z
      .string()
      .min(1)
      .describe('Path the operation applies to, relative to the workspace (or absolute inside it).'),
    destination: z.string().min(1).optional().describe('New path, for move and copy.'),
    pattern: z
      .string()
      .min(1)
      .optional()
      .describe('For search: a substring, or a regular expression written as /source/flags.'),
    recursive: z
      .boolean()
      .optional()
      .describe(
        'list: include subdirectories (default false). search: descend into subdirectories (default true). delete: required to delete a non-empty directory.',
      ),
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
    return Claims.paths([
      path,
      input.destination === undefined ? undefined : workspaceClaimPath(ctx, input.destination),
    ]);
  }
  return Claims.paths([path]);
}

async function list(
  workspace: WorkspaceDir,
  input: FileOpsInput,
  shown: string,
  signal: AbortSignal,
): Promise<{ entries: ListedEntry[]; truncated?: true }> {
  const entries: ListedEntry[] = [];
  const pending = [{ dir: await openDirectory(workspace, input.path, shown), prefix: '' }];
  try {
    for (let directory = pending.shift(); directory !== undefined; directory = pending.shift()) {
      try {
        signal.throwIfAborted();
        for (const child of await entriesOf(directory.dir)) {
          if (entries.length === LIST_MAX_ENTRIES) return { entries, truncated: true };
          const type = entryType(child);
          const size = type === 'file' ? ((await workspace.lstatEntry(directory.dir, child.name))?.size ?? 0) : 0;
          entries.push({ name: directory.prefix + child.name, type, size });
          // Symlinks are listed, not followed: their targets may lie outside the workspace.
          if (input.recursive === true && type === 'directory') {
            const sub = await openSubdirectory(directory.dir, child.name);
            if (sub !== undefined) pending.push({ dir: sub, prefix: `${directory.prefix}${child.name}/` });
          }
        }
      } finally {
        await directory.dir.release();
      }
    }
    return { entries };
  } finally {
    for (const left of pending) await left.dir.release();
  }
}

async function search(
  workspace: WorkspaceDir,
  input: FileOpsInput,
  shown: string,
  signal: AbortSignal,
): Promise<SearchResult & { pattern: string }> {
  const pattern = input.pattern ?? '';
  const matcher = searchMatcher(pattern);
  if (typeof matcher === 'string') throw new ToolError('invalid_pattern', matcher);
  return { pattern, ...(await searchFiles(workspace, input.path, shown, matcher, input.recursive ?? true, signal)) };
}

async function stats(
  workspace: WorkspaceDir,
  path: string,
  shown: string,
): Promise<{ type: EntryType; size: number; modified: string; mode: string }> {
  return withLocated(workspace, path, { follow: true }, async (located) => {
    const info = await statLocated(workspace, located);
    if (info === undefined) throw Object.assign(new Error(`${shown} does not exist`), { code: 'ENOENT' });
    return {
      type: entryType(info),
      size: info.size,
      modified: info.mtime.toISOString(),
      mode: (info.mode & 0o7777).toString(8),
    };
  });
}

/** The entry itself (a symlink is not followed); refuses the workspace root. */
function entryName(located: Located, operation: FileOperation): string {
  if (located.name === undefined) {
    throw new ToolError(
      'invalid_operation',
      `${operation} cannot apply to the workspace itself; name an entry inside it`,
    );
  }
  return located.name;
}

async function existing(workspace: WorkspaceDir, located: Located, shown: string): Promise<void> {
  if ((await statLocated(workspace, located)) === undefined)
    throw Object.assign(new Error(`${shown} does not exist`), { code: 'ENOENT' });
}

/** Runs `use` with the destination's free entry (its missing parents created), refused when something is there already. */
async function withFreeDestination<T>(
  workspace: WorkspaceDir,
  ctx: ToolContext,
  destination: string | undefined,
  operation: FileOperation,
  use: (located: Located, name: string, shown: string) => Promise<T>,
): Promise<T> {
  if (destination === undefined) throw new ToolError('invalid_arguments', `${operation} needs a destination`);
  const shown = workspaceRelative(ctx.workspace, destination);
  return withLocated(workspace, destination, { follow: false, createParents: true }, async (located) => {
    const name = entryName(located, operation);
    if ((await statLocated(workspace, located)) !== undefined) {
      throw new ToolError('already_exists', `${shown} already exists; delete it first or choose another destination`);
    }
    return use(located, name, shown);
  });
}

async function move(
  workspace: WorkspaceDir,
  ctx: ToolContext,
  input: FileOpsInput,
  shown: string,
): Promise<{ path: string; destination: string }> {
  return withLocated(workspace, input.path, { follow: false }, async (source) => {
    const name = entryName(source, 'move');
    await existing(workspace, source, shown);
    return withFreeDestination(workspace, ctx, input.destination, 'move', async (target, targetName, targetShown) => {
      await moveEntry(workspace, source.dir, name, target.dir, targetName);
      return { path: shown, destination: targetShown };
    });
  });
}

async function copy(
  workspace: WorkspaceDir,
  ctx: ToolContext,
  input: FileOpsInput,
  shown: string,
): Promise<{ path: string; destination: string }> {
  return withLocated(workspace, input.path, { follow: true }, async (source) => {
    await existing(workspace, source, shown);
    return withFreeDestination(workspace, ctx, input.destination, 'copy', async (target, targetName, targetShown) => {
      if (source.name === undefined) {
        throw new ToolError('invalid_operation', 'copy cannot copy the workspace itself; copy the entries inside it');
      }
      await copyEntry(workspace, source.dir, source.name, target.dir, targetName);
      return { path: shown, destination: targetShown };
    });
  });
}

async function remove(
  workspace: WorkspaceDir,
  input: FileOpsInput,
  shown: string,
): Promise<{ path: string; deleted: EntryType }> {
  return withLocated(workspace, input.path, { follow: false }, async (located) => {
    const name = entryName(located, 'delete');
    await existing(workspace, located, shown);
    return { path: shown, deleted: await removeEntry(workspace, located.dir, name, input.recursive === true) };
  });
}

const DESCRIPTION = `File system operations in the workspace. operation:
- "list": entries of the directory at path ({name, type, size}); recursive: true includes subdirectories. At most ${LIST_MAX_ENTRIES} entries.
- "search": lines of files under path containing pattern (a substring, or /regex/flags); returns \
{path, line, text} matches, at most 200. Skips .git, node_modules, binary and very large files.
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
      return await WorkspaceDir.with(ctx.workspace, ctx.sandbox, async (workspace) => {
        switch (input.operation) {
          case 'list':
            return { path: shown, ...(await list(workspace, input, shown, ctx.signal)) };
          case 'search':
            return { path: shown, ...(await search(workspace, input, shown, ctx.signal)) };
          case 'stats':
            return { path: shown, ...(await stats(workspace, input.path, shown)) };
          case 'move':
            return move(workspace, ctx, input, shown);
          case 'copy':
            return copy(workspace, ctx, input, shown);
          case 'delete':
            return remove(workspace, input, shown);
          case 'mkdir':
            return { path: shown, created: await makeDirectories(workspace, input.path) };
        }
      });
    } catch (error) {
      throw fileSystemError(error, shown);
    }
  },
});
