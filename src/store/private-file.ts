/*
 * Files and directories of the store are private to the server's user (0600 / 0700): they hold
 * every conversation. A file is replaced atomically, as lowdb's writer does it (a temp file
 * beside it, renamed into place), but the temp file is created 0600, so the file never exists
 * with wider permissions, whatever the umask. With `sync` (the store's fsync setting), the temp
 * file is fsynced before the rename and its directory after it, and every directory created
 * has its parent fsynced, so a completed write survives a power loss too.
 */
import { chmod, mkdir, open, rename } from 'node:fs/promises';
import { basename, dirname, join, relative, sep } from 'node:path';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Creates `dir` and its missing parents 0700; with `sync`, the new entries are made durable. */
export async function makePrivateDir(dir: string, sync = false): Promise<void> {
  const created = await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (!sync || created === undefined) return;
  // Each new directory's entry lives in its parent: the first one's parent, then each new one but the last.
  const parts = relative(created, dir)
    .split(sep)
    .filter((part) => part !== '');
  const newDirs = [created, ...parts.map((_, i) => join(created, ...parts.slice(0, i + 1)))];
  for (const parent of [dirname(created), ...newDirs.slice(0, -1)]) await syncDirectory(parent);
}

/** fsync of a directory: the names created or renamed in it are durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Creates `dir` if needed and makes it 0700 even if it existed with wider permissions. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await makePrivateDir(dir);
  await chmod(dir, PRIVATE_DIR_MODE);
}

/** One file, replaced whole by each write; writes of one file must not overlap (the coalescer's job). */
export class PrivateTextFile {
  private readonly temp: string;

  constructor(
    private readonly path: string,
    private readonly sync = false,
  ) {
    this.temp = join(dirname(path), `.${basename(path)}.tmp`);
  }

  async write(text: string): Promise<void> {
    const handle = await open(this.temp, 'w', PRIVATE_FILE_MODE);
    try {
      // A temp file left by a crash keeps its old mode when reopened.
      await handle.chmod(PRIVATE_FILE_MODE);
      await handle.writeFile(text, 'utf8');
      if (this.sync) await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(this.temp, this.path);
    if (this.sync) await syncDirectory(dirname(this.path));
  }
}
