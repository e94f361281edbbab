/*
 * Reading and writing files of a workspace through WorkspaceDir: the file is opened relative
 * to its directory's descriptor with O_NOFOLLOW, checked through its own descriptor (a regular
 * file, inside the workspace), and only then read, truncated or written. Nothing is created or
 * truncated before that check; a link in the last position is resolved by WorkspaceDir and
 * the open is tried again.
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { ToolError } from '../core/errors.js';
import type { Located, WorkspaceDir } from './workspace-dir.js';
import { errorCode } from './workspace-dir.js';

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
// O_NONBLOCK: opening a FIFO someone placed there must not hang the server.
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const RETRIES = 40;

export type FileAccess = 'read' | 'update' | 'write';

export interface OpenedFile {
  handle: FileHandle;
  /** The file's path relative to the workspace, symlinks resolved. */
  relative: string;
  /** True when this open created it. */
  created: boolean;
}

/**
 * Opens the regular file `path` names: `read` and `update` (read-write) need it to exist,
 * `write` creates it (and missing parent directories) when it does not. Throws ENOENT /
 * EISDIR-style errors for fileSystemError, ToolError for a path that leaves the workspace.
 */
export async function openWorkspaceFile(
  workspace: WorkspaceDir,
  path: string,
  access: FileAccess,
  shown = path,
): Promise<OpenedFile> {
  for (let attempt = 0; attempt < RETRIES; attempt++) {
    // Links in the last position are rare: the first try opens without looking, a link (ELOOP) is resolved on the next.
    const located = await workspace.locate(path, { follow: attempt > 0, createParents: access === 'write' });
    try {
      const opened = await openLocated(workspace, located, access, shown);
      if (opened !== undefined) return opened;
    } finally {
      await located.dir.release();
    }
  }
  throw new ToolError('symlink_loop', `${shown} kept changing into a symbolic link while it was opened; try again`);
}

/** undefined: the entry turned into a link between locating and opening it; locate again. */
async function openLocated(
  workspace: WorkspaceDir,
  located: Located,
  access: FileAccess,
  shown: string,
): Promise<OpenedFile | undefined> {
  if (located.name === undefined)
    throw Object.assign(new Error(`${shown} is the workspace directory`), { code: 'EISDIR' });
  const path = located.dir.entry(located.name);
  let handle: FileHandle;
  let created = false;
  try {
    if (access === 'write') {
      try {
        handle = await open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o666);
        created = true;
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw error;
        handle = await open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
      }
    } else {
      handle = await open(path, access === 'read' ? READ_FLAGS : O_RDWR | O_NOFOLLOW | O_NONBLOCK);
    }
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ELOOP') return undefined;
    // A FIFO or socket with no reader.
    if (code === 'ENXIO') throw new ToolError('not_a_file', `${shown} is not a regular file`);
    // Removed between an EEXIST and the open without O_CREAT: try again.
    if (code === 'ENOENT' && access === 'write') return undefined;
    throw error;
  }
  try {
    const info = await handle.stat();
    if (info.isDirectory()) throw Object.assign(new Error(`${shown} is a directory`), { code: 'EISDIR' });
    if (!info.isFile()) throw new ToolError('not_a_file', `${shown} is not a regular file`);
    await workspace.assertInside(handle, shown);
    if (created) await workspace.adoptHandle(handle);
    return { handle, relative: located.relative, created };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The whole file, as bytes. */
export async function readWorkspaceFile(
  workspace: WorkspaceDir,
  path: string,
  shown = path,
  signal?: AbortSignal,
): Promise<Buffer> {
  const file = await openWorkspaceFile(workspace, path, 'read', shown);
  try {
    return await file.handle.readFile(signal ? { signal } : {});
  } finally {
    await file.handle.close();
  }
}

/** The file's text, or null when it does not exist. */
export async function readWorkspaceTextIfExists(
  workspace: WorkspaceDir,
  path: string,
  shown = path,
): Promise<string | null> {
  try {
    return (await readWorkspaceFile(workspace, path, shown)).toString('utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return null;
    throw error;
  }
}

/** Creates or replaces the file with `text`, creating missing parent directories. */
export async function writeWorkspaceFile(
  workspace: WorkspaceDir,
  path: string,
  text: string,
  shown = path,
): Promise<void> {
  const file = await openWorkspaceFile(workspace, path, 'write', shown);
  try {
    await replaceContent(file.handle, Buffer.from(text, 'utf8'));
  } finally {
    await file.handle.close();
  }
}

/** Truncates through the descriptor (never O_TRUNC at open) and writes from the start. */
export async function replaceContent(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  await handle.truncate(0);
  let written = 0;
  while (written < bytes.length) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.length - written, written);
    written += bytesWritten;
  }
}
