/** Content search for file_ops "search": a substring or a /regex/, line by line, over a tree. */
import type { FileHandle } from 'node:fs/promises';
import type { OpenDir, WorkspaceDir } from '../../sandbox/workspace-dir.js';
import {
  entriesOf,
  openDirectory,
  openFileIn,
  openSubdirectory,
  statLocated,
  withLocated,
} from '../../sandbox/workspace-tree.js';
import { looksBinary, truncateUtf8 } from './text-content.js';

export const SEARCH_MAX_MATCHES = 200;
/** Files larger than this are skipped: they are data, not source. */
const SEARCH_MAX_FILE_BYTES = 4 * 1024 * 1024;
const MATCH_TEXT_MAX_BYTES = 240;
/** Directories a content search does not descend into; list them explicitly to look inside. */
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules']);

export interface SearchMatch {
  path: string;
  line: number;
  text: string;
}

export interface SearchResult {
  matches: SearchMatch[];
  filesSearched: number;
  truncated?: true;
}

/**
 * A line predicate for `pattern`: `/source/flags` is a regular expression, anything else a
 * plain substring. Returns a message instead when the regular expression is invalid.
 */
export function searchMatcher(pattern: string): ((line: string) => boolean) | string {
  const regex = /^\/(.+)\/([dgimsuvy]*)$/s.exec(pattern);
  if (!regex) return (line) => line.includes(pattern);
  try {
    // Without the g and y flags, test() keeps no state between lines.
    const compiled = new RegExp(regex[1] ?? '', (regex[2] ?? '').replace(/[gy]/g, ''));
    return (line) => compiled.test(line);
  } catch (error) {
    return `invalid regular expression ${pattern}: ${(error as Error).message}`;
  }
}

/** A file to search: opened by descriptor (links are never followed), closed by the consumer. */
interface FoundFile {
  open(): Promise<FileHandle | undefined>;
  shown: string;
}

/** Files under `path` (or `path` itself when it is a file), in name order; symlinks are not followed. */
async function* walkFiles(
  workspace: WorkspaceDir,
  path: string,
  rootShown: string,
  recursive: boolean,
  signal: AbortSignal,
): AsyncGenerator<FoundFile> {
  const isDirectory = await withLocated(workspace, path, { follow: true }, async (located) => {
    const info = await statLocated(workspace, located);
    if (info === undefined) throw Object.assign(new Error(`${rootShown} does not exist`), { code: 'ENOENT' });
    return info.isDirectory();
  });
  if (!isDirectory) {
    yield {
      shown: rootShown,
      open: () =>
        withLocated(workspace, path, { follow: true }, async (located) =>
          located.name === undefined ? undefined : openFileIn(located.dir, located.name),
        ),
    };
    return;
  }
  const pending: { dir: OpenDir; shown: string }[] = [
    { dir: await openDirectory(workspace, path, rootShown), shown: rootShown },
  ];
  try {
    for (let directory = pending.pop(); directory !== undefined; directory = pending.pop()) {
      try {
        signal.throwIfAborted();
        const subdirectories: { dir: OpenDir; shown: string }[] = [];
        for (const entry of await entriesOf(directory.dir)) {
          const shown = directory.shown === '.' ? entry.name : `${directory.shown}/${entry.name}`;
          const parent = directory.dir;
          if (entry.isFile()) yield { shown, open: () => openFileIn(parent, entry.name) };
          else if (entry.isDirectory() && recursive && !SKIPPED_DIRECTORIES.has(entry.name)) {
            const sub = await openSubdirectory(parent, entry.name);
            if (sub !== undefined) subdirectories.push({ dir: sub, shown });
          }
        }
        pending.push(...subdirectories.reverse());
      } finally {
        await directory.dir.release();
      }
    }
  } finally {
    for (const left of pending) await left.dir.release();
  }
}

/** Lines under `path` that `matches`, capped at SEARCH_MAX_MATCHES; binary and huge files are skipped. */
export async function searchFiles(
  workspace: WorkspaceDir,
  path: string,
  rootShown: string,
  matches: (line: string) => boolean,
  recursive: boolean,
  signal: AbortSignal,
): Promise<SearchResult> {
  const found: SearchMatch[] = [];
  let filesSearched = 0;
  for await (const file of walkFiles(workspace, path, rootShown, recursive, signal)) {
    const handle = await file.open();
    if (handle === undefined) continue;
    let bytes: Buffer;
    try {
      if ((await handle.stat()).size > SEARCH_MAX_FILE_BYTES) continue;
      bytes = await handle.readFile({ signal });
    } finally {
      await handle.close();
    }
    if (looksBinary(bytes)) continue;
    filesSearched += 1;
    const lines = bytes.toString('utf8').split('\n');
    for (const [index, line] of lines.entries()) {
      if (!matches(line)) continue;
      if (found.length === SEARCH_MAX_MATCHES) return { matches: found, filesSearched, truncated: true };
      found.push({ path: file.shown, line: index + 1, text: truncateUtf8(line.trimEnd(), MATCH_TEXT_MAX_BYTES).text });
    }
  }
  return { matches: found, filesSearched };
}
