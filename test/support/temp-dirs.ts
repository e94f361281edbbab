/*
 * Temporary directories for a test file: each call makes a fresh one, and all of them are
 * removed after each test, or after the whole file when a directory outlives one test
 * (made in a beforeAll).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';

/** @example const tempDir = tempDirs('switchyard-store-', 'afterAll'); const dir = await tempDir(); */
export function tempDirs(
  prefix = 'switchyard-test-',
  removed: 'afterEach' | 'afterAll' = 'afterEach',
): () => Promise<string> {
  const dirs: string[] = [];
  (removed === 'afterEach' ? afterEach : afterAll)(async () => {
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  return async () => {
    const dir = await mkdtemp(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
