/** The Switchyard name of an MCP tool: `<serverId>__<toolName>`, kept within defineTool's rules. */
import { createHash } from 'node:crypto';

const MAX_LENGTH = 64;
const VALID_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const INVALID_CHARACTER = /[^A-Za-z0-9_.-]/g;
const DIGEST_LENGTH = 8;

/**
 * Returns `<serverId>__<toolName>` when that is already a valid name. Otherwise the name is
 * sanitized, cut short and suffixed with a digest of the original, so two tools that differ
 * only in a replaced character or beyond the cut still get different names.
 */
export function mcpToolName(serverId: string, toolName: string): string {
  const full = `${serverId}__${toolName}`;
  if (VALID_NAME.test(full)) return full;
  const digest = createHash('sha256').update(full).digest('hex').slice(0, DIGEST_LENGTH);
  const stem = full.replace(INVALID_CHARACTER, '_').slice(0, MAX_LENGTH - DIGEST_LENGTH - 1);
  return `${stem}_${digest}`;
}
