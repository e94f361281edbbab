/*
 * Files and directories of the store are private to the server's user (0600 / 0700): they hold
 * every conversation. A file is replaced atomically, as lowdb's writer does it (a temp file
 * beside it, renamed into place), but the temp file is created 0600, so the file never exists
 * with wider permissions, whatever the umask.
 */
import { chmod, mkdir, open, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Creates `dir` and its missing parents 0700. */
export async function makePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/** Creates `dir` if needed and makes it 0700 even if it existed with wider permissions. */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await makePrivateDir(dir);
  await chmod(dir, PRIVATE_DIR_MODE);
}

/** One file, replaced whole by each write; writes of one file must not overlap (the coalescer's job). */
export class PrivateTextFile {
  private readonly temp: string;

  constructor(private readonly path: string) {
    this.temp = join(dirname(path), `.${basename(path)}.tmp`);
  }

  async write(text: string): Promise<void> {
    const handle = await open(this.temp, 'w', PRIVATE_FILE_MODE);
    try {
      // A temp file left by a crash keeps its old mode when reopened.
      await handle.chmod(PRIVATE_FILE_MODE);
      await handle.writeFile(text, 'utf8');
    } finally {
      await handle.close();
    }
    await rename(this.temp, this.path);
  }
}
