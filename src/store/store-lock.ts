/*
 * One open store per directory: a LOCK file names the owning process. Two stores writing the
 * same files would race on their temp files; a lock left by a process that is gone (killed,
 * crashed) is taken over.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PRIVATE_FILE_MODE } from './private-file.js';
import { errorCode } from './read-json-file.js';
import { StoreError } from './store-error.js';

const heldInThisProcess = new Set<string>();

/** Takes the directory's lock; resolves to the function that releases it. */
export async function acquireStoreLock(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, 'LOCK');
  if (heldInThisProcess.has(dir)) {
    throw new StoreError(
      'store_locked',
      `${dir} is already open in this process; close() that store before opening it again`,
      { path },
    );
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(path, `${JSON.stringify({ pid: process.pid, since: new Date().toISOString() })}\n`, {
        flag: 'wx',
        mode: PRIVATE_FILE_MODE,
      });
      heldInThisProcess.add(dir);
      return async () => {
        heldInThisProcess.delete(dir);
        await rm(path, { force: true });
      };
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
      const owner = await lockOwner(path);
      if (attempt > 0 || (owner !== undefined && owner !== process.pid && processAlive(owner))) {
        throw new StoreError(
          'store_locked',
          `${dir} is in use by process ${owner ?? 'unknown'}; stop it first, or delete ${path} if that process is not a Switchyard engine`,
          { path },
        );
      }
      await rm(path, { force: true });
    }
  }
}

async function lockOwner(path: string): Promise<number | undefined> {
  try {
    const { pid } = JSON.parse(await readFile(path, 'utf8')) as { pid?: unknown };
    return typeof pid === 'number' ? pid : undefined;
  } catch {
    // An unreadable lock (torn by a crash while it was written) has no owner.
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
}
