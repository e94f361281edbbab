/*
 * Operations on entries and trees of a workspace through WorkspaceDir: listing, walking,
 * stats, mkdir, delete, move and copy. Every directory is descended into by descriptor with
 * O_NOFOLLOW and every entry is named relative to its directory's descriptor, so a directory
 * swapped for a link to the outside mid-operation is met as a link (listed, copied as a link
 * or unlinked), never entered.
 */
import { constants, type Dirent, type Stats } from 'node:fs';
import { open, readdir, rename, rmdir, symlink, unlink, type FileHandle } from 'node:fs/promises';
import { ToolError } from '../core/errors.js';
import type { Located, WorkspaceDir } from './workspace-dir.js';
import { DIRECTORY_FLAGS, errorCode, OpenDir } from './workspace-dir.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
const COPY_CHUNK_BYTES = 1 << 20;

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export function entryType(entry: Dirent | Stats): EntryType {
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isDirectory()) return 'directory';
  return entry.isFile() ? 'file' : 'other';
}

/** Runs `use` on what `path` names, releasing its directory afterwards. */
export async function withLocated<T>(
  workspace: WorkspaceDir,
  path: string,
  options: { follow: boolean; createParents?: boolean },
  use: (located: Located) => Promise<T>,
): Promise<T> {
  const located = await workspace.locate(path, options);
  try {
    return await use(located);
  } finally {
    await located.dir.release();
  }
}

/** The lstat of a located entry (fstat of the root when it is the workspace itself); undefined when missing. */
export async function statLocated(workspace: WorkspaceDir, located: Located): Promise<Stats | undefined> {
  if (located.name === undefined) return located.dir.handle.stat();
  return workspace.lstatEntry(located.dir, located.name);
}

/** The directory `path` names, opened (links resolved inside the workspace); the caller releases it. */
export async function openDirectory(workspace: WorkspaceDir, path: string, shown: string): Promise<OpenDir> {
  const located = await workspace.locate(path, { follow: true });
  if (located.name === undefined) return located.dir;
  try {
    const child = await workspace.openChild(located.dir, located.name, shown);
    if (child instanceof OpenDir) return child;
  } finally {
    await located.dir.release();
  }
  // It became a link after it was located: resolve it again from the start.
  return openDirectory(workspace, path, shown);
}

/** A directory's entries in name order. */
export async function entriesOf(dir: OpenDir): Promise<Dirent[]> {
  const entries = await readdir(dir.self, { withFileTypes: true });
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Opens the subdirectory `name` of `dir` if it still is one (undefined when it became something else). */
export async function openSubdirectory(dir: OpenDir, name: string): Promise<OpenDir | undefined> {
  try {
    return new OpenDir(await open(dir.entry(name), DIRECTORY_FLAGS), [...dir.relative, name], true);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Opens the regular file `name` of `dir` for reading, if it still is one. */
export async function openFileIn(dir: OpenDir, name: string): Promise<FileHandle | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(dir.entry(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENXIO') return undefined;
    throw error;
  }
  if ((await handle.stat()).isFile()) return handle;
  await handle.close();
  return undefined;
}

/** Creates the directory `path` and its missing parents; true when the last one was created here. */
export async function makeDirectories(workspace: WorkspaceDir, path: string): Promise<boolean> {
  return withLocated(workspace, path, { follow: true, createParents: true }, async (located) => {
    if (located.name === undefined) return false;
    const created = await workspace.makeDirectory(located.dir, located.name);
    if (created) return true;
    const info = await workspace.lstatEntry(located.dir, located.name);
    if (info?.isDirectory()) return false;
    throw Object.assign(new Error(`${path} exists and is not a directory`), { code: 'EEXIST' });
  });
}

/** Removes `name` from `dir`: a file or link is unlinked, a directory removed with everything in it when `recursive`. */
export async function removeEntry(
  workspace: WorkspaceDir,
  dir: OpenDir,
  name: string,
  recursive: boolean,
): Promise<EntryType> {
  const info = await workspace.lstatEntry(dir, name);
  if (info === undefined) throw Object.assign(new Error(`${name} does not exist`), { code: 'ENOENT' });
  const type = entryType(info);
  if (type !== 'directory') {
    await unlink(dir.entry(name));
    return type;
  }
  if (recursive) {
    const child = await openSubdirectory(dir, name);
    // Swapped for a link or a file meanwhile: remove that entry, not what a link points to.
    if (child === undefined) return removeEntry(workspace, dir, name, false);
    try {
      await emptyDirectory(workspace, child);
    } finally {
      await child.release();
    }
  }
  await rmdir(dir.entry(name));
  return type;
}

async function emptyDirectory(workspace: WorkspaceDir, dir: OpenDir): Promise<void> {
  for (const entry of await entriesOf(dir)) await removeEntry(workspace, dir, entry.name, true);
}

/**
 * Copies `source` (an entry of `from`, links in its path already resolved) to the new entry
 * `target` of `to`: files by content, directories with everything in them, links as links.
 */
export async function copyEntry(
  workspace: WorkspaceDir,
  from: OpenDir,
  source: string,
  to: OpenDir,
  target: string,
): Promise<void> {
  const info = await workspace.lstatEntry(from, source);
  if (info === undefined) throw Object.assign(new Error(`${source} does not exist`), { code: 'ENOENT' });
  if (info.isSymbolicLink()) {
    const link = await workspace.linkAt(from, source);
    // No longer a link: look again at what it is now.
    if (link === undefined) return copyEntry(workspace, from, source, to, target);
    await symlink(link, to.entry(target));
    await workspace.adopt(to, target);
  } else if (info.isDirectory()) {
    await copyDirectory(workspace, from, source, to, target, info.mode & 0o7777);
  } else if (info.isFile()) {
    await copyFile(workspace, from, source, to, target, info.mode & 0o777);
  }
}

async function copyDirectory(
  workspace: WorkspaceDir,
  from: OpenDir,
  source: string,
  to: OpenDir,
  target: string,
  mode: number,
): Promise<void> {
  const sourceDir = await openSubdirectory(from, source);
  if (sourceDir === undefined) return copyEntry(workspace, from, source, to, target);
  try {
    if (!(await workspace.makeDirectory(to, target)))
      throw Object.assign(new Error(`${target} already exists`), { code: 'EEXIST' });
    const targetDir = await openSubdirectory(to, target);
    if (targetDir === undefined) throw new ToolError('copy_failed', `${target} changed while it was being copied into`);
    try {
      await targetDir.handle.chmod(mode);
      for (const entry of await entriesOf(sourceDir))
        await copyEntry(workspace, sourceDir, entry.name, targetDir, entry.name);
    } finally {
      await targetDir.release();
    }
  } finally {
    await sourceDir.release();
  }
}

async function copyFile(
  workspace: WorkspaceDir,
  from: OpenDir,
  source: string,
  to: OpenDir,
  target: string,
  mode: number,
): Promise<void> {
  const input = await openFileIn(from, source);
  if (input === undefined) return copyEntry(workspace, from, source, to, target);
  try {
    const output = await open(to.entry(target), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    try {
      await workspace.adoptHandle(output);
      const buffer = Buffer.allocUnsafe(COPY_CHUNK_BYTES);
      for (;;) {
        const { bytesRead } = await input.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        let written = 0;
        while (written < bytesRead) written += (await output.write(buffer, written, bytesRead - written)).bytesWritten;
      }
    } finally {
      await output.close();
    }
  } finally {
    await input.close();
  }
}

/** Moves the entry `source` of `from` to the new entry `target` of `to`; across file systems by copy and remove. */
export async function moveEntry(
  workspace: WorkspaceDir,
  from: OpenDir,
  source: string,
  to: OpenDir,
  target: string,
): Promise<void> {
  try {
    await rename(from.entry(source), to.entry(target));
  } catch (error) {
    // Another file system (a mount inside the workspace): copy, then remove the source.
    if (errorCode(error) !== 'EXDEV') throw error;
    await copyEntry(workspace, from, source, to, target);
    await removeEntry(workspace, from, source, true);
  }
}
