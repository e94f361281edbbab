/*
 * The Tool interface (SPEC §5) and defineTool. A tool declares its input schema, its effect
 * profile and, when its effects are bounded, the resource claim of a concrete call; the
 * default is fail-closed (global) unless it says it is read-only.
 */
import type { ZodType } from 'zod';
import type { Claim } from '../concurrency/index.js';
import type { NodeInvoker } from '../gateway/nodes/node-protocol.js';
import type { CommandLimits } from '../sandbox/command-limits.js';
import type { UnixUser } from '../sandbox/command-user.js';

/** How commands of this call run (SPEC §7); filled from [sandbox] and the request's override. */
export interface SandboxSettings {
  backend: 'auto' | 'bwrap' | 'none';
  network: boolean;
  maxOutputBytes: number;
  /** [sandbox] default_timeout_seconds, in ms. */
  commandTimeoutMs: number;
  /** [sandbox] allow_unsandboxed: commands may run without bubblewrap. Default false. */
  allowUnsandboxed?: boolean;
  /** [sandbox] max_processes, max_memory_bytes, max_file_bytes. Default: their defaults. */
  limits?: CommandLimits;
  /** [sandbox] bwrap_path. Default "bwrap". */
  bwrapPath?: string;
  /** [sandbox] read_only_paths. */
  readOnlyPaths?: readonly string[];
  /** The data directory (store, token): no workspace may contain it or lie inside it. */
  dataDir?: string;
  /** [sandbox] workspace_root: a workspace may lie inside it, not contain it. */
  workspaceRoot?: string;
  /** [sandbox] unprivileged_uid / unprivileged_gid, for a server running as root. */
  unprivileged?: UnixUser;
}

/** Result of a delegated run (session_send). */
export interface DelegatedRunResult {
  runId: string;
  state: 'completed' | 'cancelled' | 'failed';
  output?: string;
  error?: { code: string; message: string };
}

export interface ToolContext {
  signal: AbortSignal;
  /** Absolute path of the run's workspace; file paths must stay inside it. */
  workspace: string;
  callId: string;
  runId: string;
  sessionId: string;
  /** Time left for this call: the tool timeout clipped to the run's remaining deadline. */
  timeoutMs?: number;
  sandbox?: SandboxSettings;
  /** Reports a sandbox warning (unsandboxed fallback) on the run's event log. */
  warn?(message: string): void;
  /** Starts a delegated run on another session (parentRunId = this run) and waits for it. */
  delegate?(request: { sessionId: string; input: string }): Promise<DelegatedRunResult>;
  /** Runs commands on connected node clients (node_invoke); set when the engine has a node registry. */
  nodes?: NodeInvoker;
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
  /** The shell command a call runs, if any: the command policy judges it before approval (SPEC §7). */
  commandOf?(input: I): string | undefined;
  execute(input: I, ctx: ToolContext): Promise<unknown>;
}

/** Any tool, whatever its input type: the registry holds tools of many inputs. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a heterogeneous registry cannot name one input type
export type AnyTool = Tool<any>;

/** An error a tool throws to give the model a result with a specific code. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function defineTool<I>(tool: Tool<I>): Tool<I> {
  if (!tool.name || !/^[A-Za-z0-9_.-]{1,64}$/.test(tool.name)) {
    throw new TypeError(`defineTool: name ${JSON.stringify(tool.name)} must be 1-64 letters, digits, "_", "." or "-"`);
  }
  if (typeof tool.execute !== 'function') throw new TypeError(`defineTool(${tool.name}): execute must be a function`);
  return { ...tool };
}
