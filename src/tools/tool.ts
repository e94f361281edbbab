/*
 * The Tool interface (SPEC §5) and defineTool. A tool declares its input schema, its effect
 * profile and, when its effects are bounded, the resource claim of a concrete call; the
 * default is fail-closed (global) unless it says it is read-only.
 */
import type { ZodType } from 'zod';
import type { Claim } from '../concurrency/index.js';

export interface ToolContext {
  signal: AbortSignal;
  workspace: string;
  callId: string;
  runId: string;
  sessionId: string;
}

export interface ClaimContext {
  workspace: string;
  sessionId: string;
}

export interface Tool<I = unknown> {
  name: string;
  description: string;
  input: ZodType<I>;
  readOnly?: boolean;
  idempotent?: boolean;
  destructive?: boolean;
  requiresConfirmation?: boolean;
  concurrencyClaim?(input: I, ctx: ClaimContext): Claim;
  execute(input: I, ctx: ToolContext): Promise<unknown>;
}

/** Any tool, whatever its input type: the registry holds tools of many inputs. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a heterogeneous registry cannot name one input type
export type AnyTool = Tool<any>;

export function defineTool<I>(tool: Tool<I>): Tool<I> {
  if (!tool.name || !/^[A-Za-z0-9_.-]{1,64}$/.test(tool.name)) {
    throw new TypeError(`defineTool: name ${JSON.stringify(tool.name)} must be 1-64 letters, digits, "_", "." or "-"`);
  }
  if (typeof tool.execute !== 'function') throw new TypeError(`defineTool(${tool.name}): execute must be a function`);
  return { ...tool };
}
