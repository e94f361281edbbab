/**
 * Adapts one tool of a connected MCP server into a Switchyard Tool: its name, effect profile,
 * claim, and an `execute` that turns MCP results and failures into outputs and ToolErrors.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ErrorCode,
  McpError,
  type ContentBlock,
  type Tool as McpToolDescriptor,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { defineTool, ToolError, type Tool, type ToolContext } from '../tool.js';
import { mcpClaimFunction, type McpArgs } from './tool-claim.js';
import { mcpToolName } from './tool-name.js';
import { profileFromAnnotations } from './tool-profile.js';

/**
 * A Tool backed by an MCP server. `jsonSchema` is the server's own input schema, which is what
 * the model should see; `input` only checks that the arguments are an object and leaves the
 * exact validation to the server.
 */
export type McpTool = Tool<McpArgs> & { readonly jsonSchema: McpToolDescriptor['inputSchema'] };

const McpArgsSchema = z.record(z.string(), z.unknown());

/** What a call returns when the content is not all text: the server's content parts, unchanged. */
export interface McpContentOutput {
  content: ContentBlock[];
}

export function adaptMcpTool(serverId: string, client: Client, descriptor: McpToolDescriptor): McpTool {
  const profile = profileFromAnnotations(descriptor.annotations);
  const claim = mcpClaimFunction(descriptor, profile.readOnly);
  const tool = defineTool<McpArgs>({
    name: mcpToolName(serverId, descriptor.name),
    description: descriptor.description ?? descriptor.title ?? `${descriptor.name} (MCP server "${serverId}")`,
    input: McpArgsSchema,
    ...profile,
    // readOnlyHint / idempotentHint: running it again does no harm; anything else may act twice.
    replay: profile.readOnly || profile.idempotent ? 'safe' : 'unsafe',
    concurrencyClaim: (args) => claim(args),
    execute: (args, ctx) => callMcpTool(serverId, client, descriptor.name, args, ctx),
  });
  return { ...tool, jsonSchema: descriptor.inputSchema };
}

interface CallOutcome {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

async function callMcpTool(
  serverId: string,
  client: Client,
  toolName: string,
  args: McpArgs,
  ctx: ToolContext,
): Promise<string | McpContentOutput | Record<string, unknown>> {
  let outcome: CallOutcome;
  try {
    const result = await client.callTool({ name: toolName, arguments: args }, undefined, {
      signal: ctx.signal,
      // Without this the SDK's own 60 s default could cut a call the tool service still allows.
      ...(ctx.timeoutMs !== undefined ? { timeout: ctx.timeoutMs } : {}),
    });
    outcome = result as CallOutcome;
  } catch (error) {
    throw callFailure(serverId, toolName, error, ctx.signal);
  }
  if (outcome.isError) {
    const text = joinedText(outcome.content);
    throw new ToolError(
      'mcp_error',
      text ?? `${toolName} on MCP server "${serverId}" reported an error without a message`,
    );
  }
  return outputOf(outcome);
}

/**
 * All-text content (the common case) becomes one string, which reaches the model verbatim;
 * anything else (images, resources) is returned as `{ content }` with the parts unchanged.
 * Empty content falls back to the structured content, then to the empty string.
 */
function outputOf(outcome: CallOutcome): string | McpContentOutput | Record<string, unknown> {
  if (outcome.content.length === 0) return outcome.structuredContent ?? '';
  return joinedText(outcome.content) ?? { content: outcome.content };
}

function joinedText(content: readonly ContentBlock[]): string | undefined {
  if (content.length === 0) return undefined;
  const texts: string[] = [];
  for (const part of content) {
    if (part.type !== 'text') return undefined;
    texts.push(part.text);
  }
  return texts.join('\n');
}

function callFailure(serverId: string, toolName: string, error: unknown, signal: AbortSignal): unknown {
  // The SDK reports an abort as a RequestTimeout error; the caller's reason is the truthful one.
  if (signal.aborted) return signal.reason ?? new ToolError('cancelled', `${toolName} was cancelled`);
  const detail = error instanceof Error ? error.message : String(error);
  const where = `${toolName} on MCP server "${serverId}"`;
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return new ToolError('timeout', `${where} timed out: ${detail}`);
    if (error.code === ErrorCode.ConnectionClosed) {
      return new ToolError(
        'mcp_unavailable',
        `${where}: the connection closed (${detail}); restart the server or check its logs`,
      );
    }
    return new ToolError('mcp_error', `${where} failed: ${detail}`);
  }
  // Checked by name: the SDK may carry its own copy of zod.
  if (error instanceof Error && error.name === 'ZodError')
    return new ToolError('mcp_error', `${where} returned a malformed result: ${detail}`);
  return new ToolError('mcp_unavailable', `${where} is unreachable: ${detail}; restart the server or check its logs`);
}
