/** How an MCP tool's annotations map onto Switchyard's effect profile (README, "Builtin tools"). */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';

export interface McpToolProfile {
  readOnly: boolean;
  idempotent: boolean;
  destructive: boolean;
  requiresConfirmation: boolean;
}

/**
 * Only an explicit `readOnlyHint: true` makes a tool read-only; `idempotentHint` marks it safe to
 * retry and nothing more. A tool that may write is destructive unless it says
 * `destructiveHint: false`, because MCP's own default for that hint is `true` — so the `auto`
 * tier asks before it. Only an explicit `destructiveHint: true` is a floor no tier lifts
 * (README, "Builtin tools": "destructiveHint: true requires confirmation").
 */
export function profileFromAnnotations(annotations: ToolAnnotations | undefined): McpToolProfile {
  const readOnly = annotations?.readOnlyHint === true;
  const destructive = !readOnly && annotations?.destructiveHint !== false;
  return {
    readOnly,
    idempotent: annotations?.idempotentHint === true,
    destructive,
    requiresConfirmation: !readOnly && annotations?.destructiveHint === true,
  };
}
