/** Turns Node's file-system errors into ToolErrors with codes and messages a model can act on. */
import { ToolError } from '../tool.js';

const MESSAGES: Record<string, [code: string, explain: (path: string) => string]> = {
  ENOENT: ['not_found', (path) => `${path} does not exist`],
  EISDIR: ['is_directory', (path) => `${path} is a directory; use file_ops with operation "list" to see its entries`],
  ENOTDIR: ['not_a_directory', (path) => `a component of ${path} is a file, not a directory`],
  EEXIST: ['already_exists', (path) => `${path} already exists`],
  ENOTEMPTY: [
    'not_empty',
    (path) => `${path} is a directory that is not empty; pass recursive: true to delete it with its contents`,
  ],
  EACCES: ['permission_denied', (path) => `permission denied on ${path}`],
  EPERM: ['permission_denied', (path) => `operation not permitted on ${path}`],
};

/** Maps a known errno error to a ToolError naming `path`; anything else is returned unchanged. */
export function fileSystemError(error: unknown, path: string): unknown {
  if (error instanceof ToolError) return error;
  const errno = (error as { code?: unknown } | null)?.code;
  const known = typeof errno === 'string' ? MESSAGES[errno] : undefined;
  if (!known) return error;
  const [code, explain] = known;
  return new ToolError(code, explain(path));
}
