/*
 * The file store's checkpoint writer, on a thread of its own (checkpoint-thread.ts starts it).
 * Without fsync a file write only reaches the page cache, yet creating and renaming files
 * costs hundreds of microseconds each on a busy disk: done here, one after another, it keeps
 * the event loop free for the engine. Plain JavaScript so it starts without a TypeScript loader.
 *
 * Message in:  { batch, files: [{ path, text }] }  (written in order)
 * Message out: { batch, failures: [{ index, message, code }] }
 *
 * Each file is replaced as private-file.ts does it: a 0600 temp file `.<name>.tmp` beside it,
 * renamed into place; missing directories are created 0700.
 */
import { closeSync, mkdirSync, openSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { parentPort } from 'node:worker_threads';

const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const KNOWN_DIRS_LIMIT = 4096;
const knownDirs = new Set();

function ensureDir(dir) {
  if (knownDirs.has(dir)) return;
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  if (knownDirs.size >= KNOWN_DIRS_LIMIT) knownDirs.clear();
  knownDirs.add(dir);
}

/** A new 0600 file: a temp file a crash left (it would keep its old mode if reopened) is removed first. */
function createExclusive(temp) {
  try {
    return openSync(temp, 'wx', FILE_MODE);
  } catch (error) {
    if (error?.code !== 'EEXIST') throw error;
    unlinkSync(temp);
    return openSync(temp, 'wx', FILE_MODE);
  }
}

function replace(path, text) {
  const dir = dirname(path);
  ensureDir(dir);
  const temp = join(dir, `.${basename(path)}.tmp`);
  const fd = createExclusive(temp);
  try {
    writeFileSync(fd, text, 'utf8');
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
}

function write(path, text) {
  try {
    replace(path, text);
  } catch (error) {
    // A directory removed since it was created: make it again, once.
    if (error?.code !== 'ENOENT') throw error;
    knownDirs.delete(dirname(path));
    replace(path, text);
  }
}

parentPort.on('message', ({ batch, files }) => {
  const failures = [];
  files.forEach(({ path, text }, index) => {
    try {
      write(path, text);
    } catch (error) {
      failures.push({ index, message: String(error?.message ?? error), code: error?.code });
    }
  });
  parentPort.postMessage({ batch, failures });
});
