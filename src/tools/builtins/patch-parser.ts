/*
 * Parser of the apply_patch envelope (pure, no I/O):
 *
 *   *** Begin Patch
 *   *** Add File: path          then lines prefixed "+"
 *   *** Delete File: path
 *   *** Update File: path       then optional "*** Move to: path", then hunks:
 *   @@ [context line]           lines " " context, "-" removed, "+" added,
 *                               optionally closed by "*** End of File"
 *   *** End Patch
 *
 * Errors name the line (1-based, in the text as given) so the model can fix its patch.
 */

export interface HunkLine {
  kind: 'context' | 'remove' | 'add';
  text: string;
}

export interface Hunk {
  /** The text after `@@`, a line to find before the hunk's own lines; absent for a bare `@@`. */
  anchor?: string;
  lines: HunkLine[];
  /** The hunk ends at the end of the file (`*** End of File`). */
  endOfFile: boolean;
  /** Line of the `@@` header in the patch text, for error messages. */
  line: number;
}

export type PatchOp =
  | { kind: 'add'; path: string; content: string }
  | { kind: 'delete'; path: string }
  | { kind: 'update'; path: string; moveTo?: string; hunks: Hunk[] };

export type ParsePatchResult = { ok: true; ops: PatchOp[] } | { ok: false; error: string };

const BEGIN = '*** Begin Patch';
const END = '*** End Patch';
const ADD = '*** Add File:';
const DELETE = '*** Delete File:';
const UPDATE = '*** Update File:';
const MOVE = '*** Move to:';
const END_OF_FILE = '*** End of File';

class PatchSyntaxError extends Error {}

function fail(line: number, message: string): never {
  throw new PatchSyntaxError(`line ${line}: ${message}`);
}

function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}

/** Line-by-line reader; `number` is the 1-based line number of `peek()`. */
class Lines {
  private index: number;
  constructor(
    private readonly lines: readonly string[],
    start: number,
    private readonly end: number,
  ) {
    this.index = start;
  }
  get number(): number {
    return this.index + 1;
  }
  done(): boolean {
    return this.index >= this.end;
  }
  peek(): string {
    return this.lines[this.index] ?? '';
  }
  next(): string {
    const line = this.peek();
    this.index += 1;
    return line;
  }
}

function isDirective(line: string): boolean {
  return line.startsWith('*** ');
}

function pathAfter(prefix: string, line: string, number: number): string {
  const path = line.slice(prefix.length).trim();
  if (path === '') fail(number, `${prefix} needs a path`);
  return path;
}

function parseAdd(lines: Lines, path: string): PatchOp {
  const content: string[] = [];
  while (!lines.done() && !isDirective(lines.peek())) {
    const number = lines.number;
    const line = lines.next();
    if (!line.startsWith('+')) fail(number, `every line of Add File ${path} must start with "+", got ${quote(line)}`);
    content.push(line.slice(1));
  }
  return { kind: 'add', path, content: content.length === 0 ? '' : content.join('\n') + '\n' };
}

function parseHunk(lines: Lines, path: string): Hunk {
  const line = lines.number;
  const header = lines.next().slice(2).trim();
  const hunk: Hunk = { lines: [], endOfFile: false, line, ...(header === '' ? {} : { anchor: header }) };
  while (!lines.done() && !lines.peek().startsWith('@@') && !isDirective(lines.peek())) {
    const number = lines.number;
    const text = lines.next();
    // A blank line is an empty context line whose leading space an editor or a model dropped.
    if (text === '') hunk.lines.push({ kind: 'context', text: '' });
    else if (text.startsWith(' ')) hunk.lines.push({ kind: 'context', text: text.slice(1) });
    else if (text.startsWith('-')) hunk.lines.push({ kind: 'remove', text: text.slice(1) });
    else if (text.startsWith('+')) hunk.lines.push({ kind: 'add', text: text.slice(1) });
    else fail(number, `hunk line in Update File ${path} must start with " ", "-" or "+", got ${quote(text)}`);
  }
  if (lines.peek().trim() === END_OF_FILE && !lines.done()) {
    lines.next();
    hunk.endOfFile = true;
  }
  if (hunk.lines.length === 0) fail(line, `hunk in Update File ${path} has no lines`);
  return hunk;
}

function parseUpdate(lines: Lines, path: string, headerLine: number): PatchOp {
  let moveTo: string | undefined;
  if (!lines.done() && lines.peek().startsWith(MOVE)) {
    const number = lines.number;
    moveTo = pathAfter(MOVE, lines.next(), number);
  }
  const hunks: Hunk[] = [];
  while (!lines.done() && !isDirective(lines.peek())) {
    if (!lines.peek().startsWith('@@')) {
      fail(lines.number, `expected "@@" to start a hunk of Update File ${path}, got ${quote(lines.peek())}`);
    }
    hunks.push(parseHunk(lines, path));
  }
  if (hunks.length === 0 && moveTo === undefined)
    fail(headerLine, `Update File ${path} has no hunks and no "*** Move to:"`);
  return { kind: 'update', path, ...(moveTo === undefined ? {} : { moveTo }), hunks };
}

function parseBody(lines: Lines): PatchOp[] {
  const ops: PatchOp[] = [];
  while (!lines.done()) {
    const number = lines.number;
    const line = lines.next();
    if (line.startsWith(ADD)) ops.push(parseAdd(lines, pathAfter(ADD, line, number)));
    else if (line.startsWith(DELETE)) ops.push({ kind: 'delete', path: pathAfter(DELETE, line, number) });
    else if (line.startsWith(UPDATE)) ops.push(parseUpdate(lines, pathAfter(UPDATE, line, number), number));
    else if (line.trim() === END) fail(number, `"${END}" must be the last line of the patch`);
    else if (line.startsWith(MOVE)) fail(number, '"*** Move to:" must directly follow an "*** Update File:" line');
    else if (isDirective(line))
      fail(number, `unknown directive ${quote(line)}; expected Add File, Update File or Delete File`);
    else
      fail(
        number,
        `expected a file directive ("*** Add File:", "*** Update File:" or "*** Delete File:"), got ${quote(line)}`,
      );
  }
  if (ops.length === 0) fail(lines.number, 'the patch changes no files');
  return ops;
}

/** Parses an apply_patch envelope into file operations, or says which line is wrong and why. */
export function parsePatch(text: string): ParsePatchResult {
  const lines = text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line));
  let first = 0;
  while (first < lines.length && (lines[first] ?? '').trim() === '') first += 1;
  let last = lines.length - 1;
  while (last >= first && (lines[last] ?? '').trim() === '') last -= 1;
  if (first > last)
    return { ok: false, error: `the patch is empty; it must start with "${BEGIN}" and end with "${END}"` };
  if ((lines[first] ?? '').trim() !== BEGIN) {
    return {
      ok: false,
      error: `line ${first + 1}: the patch must start with "${BEGIN}", got ${quote(lines[first] ?? '')}`,
    };
  }
  if (first === last || (lines[last] ?? '').trim() !== END) {
    return { ok: false, error: `line ${last + 1}: the patch must end with "${END}", got ${quote(lines[last] ?? '')}` };
  }
  try {
    return { ok: true, ops: parseBody(new Lines(lines, first + 1, last)) };
  } catch (error) {
    if (error instanceof PatchSyntaxError) return { ok: false, error: error.message };
    throw error;
  }
}

/** Every path an operation names, move targets included, in envelope order. */
export function patchPaths(ops: readonly PatchOp[]): string[] {
  return ops.flatMap((op) => (op.kind === 'update' && op.moveTo !== undefined ? [op.path, op.moveTo] : [op.path]));
}
