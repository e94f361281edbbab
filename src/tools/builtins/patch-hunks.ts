/*
 * Applies the hunks of one `*** Update File:` to a file's text (pure). Each hunk's context and
 * removed lines are found in order after the previous hunk, exactly or ignoring trailing
 * whitespace; a `@@ anchor` first moves the search past the line that matches the anchor.
 */
import type { Hunk } from './patch-parser.js';

export type ApplyHunksResult = { ok: true; text: string } | { ok: false; error: string };

type LineMatch = (fileLine: string, patchLine: string) => boolean;

const HUNK_MATCHERS: readonly LineMatch[] = [(a, b) => a === b, (a, b) => a.trimEnd() === b.trimEnd()];
const ANCHOR_MATCHERS: readonly LineMatch[] = [...HUNK_MATCHERS, (a, b) => a.trim() === b.trim()];

/** First index >= from where `sequence` occurs in `lines`, trying the strictest matcher first. */
function findSequence(
  lines: readonly string[],
  sequence: readonly string[],
  from: number,
  atEnd: boolean,
  matchers: readonly LineMatch[],
): number {
  const last = lines.length - sequence.length;
  const starts = atEnd ? [last] : Array.from({ length: Math.max(0, last - from + 1) }, (_, i) => from + i);
  for (const match of matchers) {
    for (const start of starts) {
      if (start < from) continue;
      if (sequence.every((line, i) => match(lines[start + i] ?? '', line))) return start;
    }
  }
  return -1;
}

function preview(lines: readonly string[]): string {
  const shown = lines.slice(0, 6).map((line) => `  ${line}`);
  if (lines.length > 6) shown.push(`  … (${lines.length - 6} more)`);
  return shown.join('\n');
}

interface Replacement {
  start: number;
  removed: number;
  inserted: string[];
}

/** What a matched hunk leaves in place: context lines as the file has them, then the added lines. */
function replacementLines(hunk: Hunk, lines: readonly string[], start: number): string[] {
  const kept: string[] = [];
  let at = start;
  for (const line of hunk.lines) {
    if (line.kind === 'add') kept.push(line.text);
    else if (line.kind === 'remove') at += 1;
    else kept.push(lines[at++] ?? line.text);
  }
  return kept;
}

/** The text after applying `hunks` in order, or which hunk did not match and what it looked for. */
export function applyHunks(text: string, hunks: readonly Hunk[]): ApplyHunksResult {
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const lines = text === '' ? [] : text.split(eol);
  const endsWithEol = text === '' || text.endsWith(eol);
  if (text.endsWith(eol)) lines.pop();

  const replacements: Replacement[] = [];
  let cursor = 0;
  for (const hunk of hunks) {
    let from = cursor;
    if (hunk.anchor !== undefined) {
      const at = findSequence(lines, [hunk.anchor], cursor, false, ANCHOR_MATCHERS);
      if (at < 0) {
        return {
          ok: false,
          error: `the "@@ ${hunk.anchor}" line of the hunk at patch line ${hunk.line} matches no line after line ${cursor} of the file`,
        };
      }
      from = at + 1;
    }
    const old = hunk.lines.filter((line) => line.kind !== 'add').map((line) => line.text);
    let start: number;
    if (old.length > 0) start = findSequence(lines, old, from, hunk.endOfFile, HUNK_MATCHERS);
    else start = hunk.anchor !== undefined && !hunk.endOfFile ? from : lines.length;
    if (start < 0) {
      const where = hunk.endOfFile ? 'at the end of the file' : `in order after line ${from} of the file`;
      return {
        ok: false,
        error:
          `the hunk at patch line ${hunk.line} does not match: these context and removed lines were not ` +
          `found ${where}:\n${preview(old)}\nRead the file again and regenerate the hunk`,
      };
    }
    replacements.push({ start, removed: old.length, inserted: replacementLines(hunk, lines, start) });
    cursor = start + old.length;
  }

  for (const { start, removed, inserted } of replacements.reverse()) lines.splice(start, removed, ...inserted);
  if (lines.length === 0) return { ok: true, text: '' };
  return { ok: true, text: lines.join(eol) + (endsWithEol ? eol : '') };
}
