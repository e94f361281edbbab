/* Which ACP kind each tool call gets: the builtins by name (file_ops by operation), others by their first verb. */
import { describe, expect, it } from 'vitest';
import { toolKind } from '../../src/acp/tool-kinds.js';

describe('toolKind', () => {
  it.each([
    ['file_read', { path: 'a' }, 'read'],
    ['file_write', { path: 'a', content: '' }, 'edit'],
    ['file_edit', { path: 'a', old: 'x', new: 'y' }, 'edit'],
    ['apply_patch', { patch: '' }, 'edit'],
    ['file_ops', { operation: 'list', path: '.' }, 'read'],
    ['file_ops', { operation: 'stats', path: 'a' }, 'read'],
    ['file_ops', { operation: 'search', path: '.', pattern: 'x' }, 'search'],
    ['file_ops', { operation: 'move', path: 'a', destination: 'b' }, 'move'],
    ['file_ops', { operation: 'copy', path: 'a', destination: 'b' }, 'edit'],
    ['file_ops', { operation: 'mkdir', path: 'd' }, 'edit'],
    ['file_ops', { operation: 'delete', path: 'a' }, 'delete'],
    ['file_ops', { operation: 'explode', path: 'a' }, 'other'],
    ['bash', { command: 'ls' }, 'execute'],
    ['node_invoke', { node: 'n', command: 'ls' }, 'execute'],
    ['session_send', { session: 's', message: 'm' }, 'other'],
    // MCP tools (<server>__<tool>) and tools of your own: the first verb of the name.
    ['fs__read_text_file', {}, 'read'],
    ['fs__list_directory', {}, 'read'],
    ['fs__search_files', {}, 'search'],
    ['fs__write_file', {}, 'edit'],
    ['fs__edit_file', {}, 'edit'],
    ['fs__create_directory', {}, 'edit'],
    ['fs__move_file', {}, 'move'],
    ['git__delete_branch', {}, 'delete'],
    ['web__fetchUrl', {}, 'fetch'],
    ['browser__download-page', {}, 'fetch'],
    ['shell__run_command', {}, 'execute'],
    ['notes__file_search', {}, 'search'],
    ['fs__directory_tree', {}, 'other'],
    ['hold', {}, 'other'],
  ] as const)('%s %j is %s', (tool, args, kind) => {
    expect(toolKind(tool, args)).toBe(kind);
  });
});
