/*
 * The Tool interface (README, "Builtin tools"; claims in docs/claims.md) and defineTool. A tool
 * declares its input schema, its effect profile and, when its effects are bounded, the resource
 * claim of a concrete call; the default is fail-closed (global) unless it says it is read-only.
 */
import type { ZodType } from 'zod';
import type { ActionDescription } from '../approval/index.js';
import type { CodedError } from '../core/errors.js';
import type { Claim, ClaimContext } from '../concurrency/index.js';
import type { NodeInvoker } from './node-invoker.js';
import type { SandboxSettings } from '../sandbox/sandbox-settings.js';
import type { ReplayDeclaration } from './replay.js';

/**
 * How commands of this call run (README, "Approval, command policy and the sandbox"); filled
 * from [sandbox] and the request's override.
 */
export type { SandboxSettings } from '../sandbox/sandbox-settings.js';

/** Result of a delegated run (session_send). */
export interface DelegatedRunResult {
  runId: string;
  state: 'completed' | 'cancelled' | 'failed';
  output?: string;
  error?: CodedError;
}

export interface DelegationRequest {
  sessionId: string;
  input: string;
  workspace?: string;
}

export interface ToolContext {
  signal: AbortSignal;
  /** Absolute path of the run's workspace; file paths must stay inside it. */
  workspace: string;
  callId: string;
  runId: string;
  sessionId: string;
  /**
   * Stable across attempts of this call (idempotencyKeyOf: run, turn, position in the batch; not
   * the model's call id): a tool that talks to an outside system passes it on so a repeat of the
   * call after a resume is dropped there. Set for every call the engine runs.
   */
  idempotencyKey?: string;
  /** Time left for this call: the tool timeout clipped to the run's remaining deadline. */
  timeoutMs?: number;
  sandbox?: SandboxSettings;
  /** Reports a sandbox warning (unsandboxed fallback) on the run's event log. */
  warn?(message: string): void;
  /**
   * Starts a delegated run on another session (parentRunId = this run) and waits for it. It
   * works in `workspace` when given (an existing absolute directory), else in its session's.
   */
  delegate?(request: DelegationRequest): Promise<DelegatedRunResult>;
  /** Runs commands on connected node clients (node_invoke); set when the engine has a node registry. */
  nodes?: NodeInvoker;
}

export interface Tool<I = unknown> {
  name: string;
  description: string;
  input: ZodType<I>;
  /** Changes nothing: the only property that lets the `plan` and `ask` tiers run it without asking. */
  readOnly?: boolean;
  /** Running it twice equals running it once: for replay and dedup, never for approval (file_write is idempotent and still replaces a file). */
  idempotent?: boolean;
  destructive?: boolean;
  requiresConfirmation?: boolean;
  concurrencyClaim?(input: I, ctx: ClaimContext): Claim;
  /** True when this call is destructive although the tool is not always (file_ops delete/move). */
  destructiveFor?(input: I): boolean;
  /** What an approval prompt shows of this call beyond its plain arguments (apply_patch: its files). */
  describe?(input: I): ActionDescription | undefined;
  /** The shell command a call runs, if any: the command policy judges it before approval. */
  commandOf?(input: I): string | undefined;
  /**
   * What a resumed run does with this call when it was interrupted (docs/durable-runs.md):
   * `'safe'` runs it again, `'unsafe'` gives the model `outcome_unknown`, `{ probe: reconcile }`
   * asks the world. One rule, or a function of the call's input. Default: safe when the tool
   * is readOnly or idempotent, else unsafe (replayRuleOf).
   */
  replay?: ReplayDeclaration<I>;
  execute(input: I, ctx: ToolContext): Promise<unknown>;
}

/** Any tool, whatever its input type: the registry holds tools of many inputs. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a heterogeneous registry cannot name one input type
export type AnyTool = Tool<any>;

export { ToolError } from '../core/errors.js';

export function defineTool<I>(tool: Tool<I>): Tool<I> {
  if (!tool.name || !/^[A-Za-z0-9_.-]{1,64}$/.test(tool.name)) {
    throw new TypeError(`defineTool: name ${JSON.stringify(tool.name)} must be 1-64 letters, digits, "_", "." or "-"`);
  }
  if (typeof tool.execute !== 'function') throw new TypeError(`defineTool(${tool.name}): execute must be a function`);
  return { ...tool };
}
