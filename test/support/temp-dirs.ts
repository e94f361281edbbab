/*
 * Temporary directories for a test file: each call makes a fresh one, and all of them are
 * removed after each test, or after the whole file when a directory outlives one test
 * (made in a beforeAll).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';

/**
 * Call it at the top of the file (or describe), before the hooks that must run before the
 * directories go: Vitest runs after-hooks in reverse order. A call may name its own prefix.
 * @example const tempDir = tempDirs('switchyard-store-', 'afterAll'); const dir = await tempDir();
 */
export function tempDirs(
  prefix = 'switchyard-test-',
  removed: 'afterEach' | 'afterAll' = 'afterEach',
): (ownPrefix?: string) => Promise<string> {
  const dirs: string[] = [];
  (removed === 'afterEach' ? afterEach : afterAll)(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async (ownPrefix = prefix) => {
    const dir = await mkdtemp(join(tmpdir(), ownPrefix));
    dirs.push(dir);
    return dir;
  };
}
