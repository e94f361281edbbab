/*
 * The shell grammar the command policy and the bash claims read commands with: tree-sitter-bash
 * (the grammar Codex reads commands with), run through web-tree-sitter's WebAssembly build.
 * docs/command-policy.md says why this grammar and not mvdan/sh's. The grammar is loaded once,
 * when this module is first imported; after that a parse is synchronous. A parse becomes a plain
 * tree of `SyntaxNode`s, so nothing downstream holds WebAssembly memory.
 */
import { createRequire } from 'node:module';
import { Language, Parser, type TreeCursor } from 'web-tree-sitter';

export interface SyntaxNode {
  /** The grammar's node type: `command`, `word`, `pipeline`, `"|"`, `ERROR`… */
  readonly type: string;
  /** Named nodes are syntax (`command`); anonymous ones are tokens (`"&&"`). */
  readonly named: boolean;
  /** The field of the parent this node fills: `name`, `argument`, `redirect`, `body`… */
  readonly field: string | null;
  /** The node's source text. */
  readonly text: string;
  readonly start: number;
  readonly end: number;
  readonly children: readonly SyntaxNode[];
}

export interface ParsedBash {
  readonly root: SyntaxNode;
  /** The grammar found a syntax error (an `ERROR` or a missing token): bash would not run it as read. */
  readonly hasError: boolean;
  /** The tree nests deeper than `MAX_TREE_DEPTH`; what lies below was not read. */
  readonly truncated: boolean;
}

/** Deeper syntax is cut (and reported): a tree is walked recursively, and a stack is finite. */
export const MAX_TREE_DEPTH = 400;

await Parser.init();
const language = await Language.load(createRequire(import.meta.url).resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
const parser = new Parser();
parser.setLanguage(language);

/** The policy and the claims read the same command one after the other; parse it once. */
const recent = new Map<string, ParsedBash>();
const RECENT_PARSES = 64;

export function parseBash(source: string): ParsedBash {
  const cached = recent.get(source);
  if (cached) return cached;
  const parsed = parseUncached(source);
  if (recent.size >= RECENT_PARSES) recent.delete(recent.keys().next().value as string);
  recent.set(source, parsed);
  return parsed;
}

function parseUncached(source: string): ParsedBash {
  const tree = parser.parse(source);
  if (!tree) throw new Error('tree-sitter returned no tree (the parser has no language)');
  try {
    const cursor = tree.walk();
    try {
      const state = { truncated: false };
      const root = convert(cursor, source, 0, state);
      return { root, hasError: tree.rootNode.hasError, truncated: state.truncated };
    } finally {
      cursor.delete();
    }
  } finally {
    tree.delete();
  }
}

/** The node under the cursor, and its subtree, as plain objects: one pass, no per-node wrappers. */
function convert(cursor: TreeCursor, source: string, depth: number, state: { truncated: boolean }): SyntaxNode {
  const start = cursor.startIndex;
  const end = cursor.endIndex;
  const children: SyntaxNode[] = [];
  const node = {
    type: cursor.nodeIsMissing ? 'MISSING' : cursor.nodeType,
    named: cursor.nodeIsNamed,
    field: cursor.currentFieldName ?? null,
    text: source.slice(start, end),
    start,
    end,
    children,
  };
  if (!cursor.gotoFirstChild()) return node;
  if (depth >= MAX_TREE_DEPTH) {
    cursor.gotoParent();
    state.truncated = true;
    return node;
  }
  do children.push(convert(cursor, source, depth + 1, state));
  while (cursor.gotoNextSibling());
  cursor.gotoParent();
  return node;
}
