/*
 * Which ACP tool kind (the editor's icon and grouping) a Switchyard tool call is: the builtins
 * by name and, for file_ops, by operation; any other tool (MCP, your own) by the first verb
 * in its name (`fs__read_file` reads, `web__fetch_url` fetches), else `other`.
 */
import type { ToolKind } from '@agentclientprotocol/sdk';
import { fileOpsInput, type FileOperation } from '../tools/builtins/index.js';

const BUILTIN_KINDS: Readonly<Record<string, ToolKind>> = {
  file_read: 'read',
  file_write: 'edit',
  file_edit: 'edit',
  apply_patch: 'edit',
  bash: 'execute',
  node_invoke: 'execute',
  session_send: 'other',
};

const FILE_OP_KINDS: Readonly<Record<FileOperation, ToolKind>> = {
  list: 'read',
  stats: 'read',
  search: 'search',
  move: 'move',
  copy: 'edit',
  mkdir: 'edit',
  delete: 'delete',
};

/** Verbs a tool name may start with (after its `<server>__` prefix), and the kind each means. */
const VERB_KINDS: Readonly<Record<string, ToolKind>> = {
  read: 'read',
  get: 'read',
  list: 'read',
  view: 'read',
  show: 'read',
  cat: 'read',
  open: 'read',
  info: 'read',
  search: 'search',
  find: 'search',
  grep: 'search',
  query: 'search',
  lookup: 'search',
  glob: 'search',
  write: 'edit',
  edit: 'edit',
  update: 'edit',
  create: 'edit',
  patch: 'edit',
  replace: 'edit',
  append: 'edit',
  insert: 'edit',
  set: 'edit',
  mkdir: 'edit',
  delete: 'delete',
  remove: 'delete',
  rm: 'delete',
  unlink: 'delete',
  move: 'move',
  rename: 'move',
  mv: 'move',
  run: 'execute',
  exec: 'execute',
  execute: 'execute',
  shell: 'execute',
  bash: 'execute',
  command: 'execute',
  terminal: 'execute',
  fetch: 'fetch',
  download: 'fetch',
  http: 'fetch',
  browse: 'fetch',
  curl: 'fetch',
  url: 'fetch',
  web: 'fetch',
  think: 'think',
  reason: 'think',
  plan: 'think',
};

export function toolKind(tool: string, args: unknown): ToolKind {
  if (tool === 'file_ops') {
    const parsed = fileOpsInput.safeParse(args);
    return parsed.success ? FILE_OP_KINDS[parsed.data.operation] : 'other';
  }
  const builtin = BUILTIN_KINDS[tool];
  if (builtin !== undefined) return builtin;
  for (const word of nameWords(tool)) {
    const kind = VERB_KINDS[word];
    if (kind !== undefined) return kind;
  }
  return 'other';
}

/** `web__fetchURL` -> ['fetch', 'url']: the server prefix dropped, snake, kebab and camel case split. */
function nameWords(tool: string): string[] {
  const separator = tool.lastIndexOf('__');
  const name = separator < 0 ? tool : tool.slice(separator + 2);
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
}
