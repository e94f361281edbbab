/** Content search for file_ops "search": a substring or a /regex/, line by line, over a tree. */
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
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

/** Files under `root` (or `root` itself when it is a file), in name order; symlinks are not followed. */
async function* walkFiles(root: string, rootShown: string, recursive: boolean, signal: AbortSignal): AsyncGenerator<{ real: string; shown: string }> {
  if (!(await stat(root)).isDirectory()) {
    yield { real: root, shown: rootShown };
    return;
  }
  const pending: { real: string; shown: string }[] = [{ real: root, shown: rootShown }];
  for (let directory = pending.pop(); directory !== undefined; directory = pending.pop()) {
    signal.throwIfAborted();
    const entries: Dirent[] = await readdir(directory.real, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const subdirectories: { real: string; shown: string }[] = [];
    for (const entry of entries) {
      const real = join(directory.real, entry.name);
      const shown = directory.shown === '.' ? entry.name : `${directory.shown}/${entry.name}`;
      if (entry.isFile()) yield { real, shown };
      else if (entry.isDirectory() && recursive && !SKIPPED_DIRECTORIES.has(entry.name)) subdirectories.push({ real, shown });
    }
    pending.push(...subdirectories.reverse());
  }
}

/** Lines under `root` that `matches`, capped at SEARCH_MAX_MATCHES; binary and huge files are skipped. */
export async function searchFiles(
  root: string,
  rootShown: string,
  matches: (line: string) => boolean,
  recursive: boolean,
  signal: AbortSignal,
): Promise<SearchResult> {
  const found: SearchMatch[] = [];
  let filesSearched = 0;
  for await (const file of walkFiles(root, rootShown, recursive, signal)) {
    if ((await stat(file.real)).size > SEARCH_MAX_FILE_BYTES) continue;
    const bytes = await readFile(file.real, { signal });
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
