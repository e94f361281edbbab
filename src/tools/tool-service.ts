/*
 * The per-request ToolService: the one choke point every tool call of a run passes through.
 * Built for each run from the registry, the run's workspace and sandbox settings and its
 * unattended flag; it validates a call, computes its claim (from the admitted arguments,
 * paths resolved against the workspace), asks for approval and executes it.
 */
import { mkdir } from 'node:fs/promises';
import type { ToolCallRequest } from '../../machines/run.machine.js';
import type { ApprovalVerdict, ToolCallError } from '../../machines/tool-call.machine.js';
import { Claims, canonicalJson, normalizeClaim, type Claim } from '../concurrency/index.js';
import type { AnyTool, DelegatedRunResult, SandboxSettings, ToolContext } from './tool.js';

export interface ToolServiceOptions {
  tools: ReadonlyMap<string, AnyTool>;
  runId: string;
  sessionId: string;
  workspace: string;
  sandbox: SandboxSettings;
  unattended: boolean;
  warn(message: string): void;
  delegate?(request: { sessionId: string; input: string }): Promise<DelegatedRunResult>;
  /** A hook that may rewrite a call's arguments after its claim was computed. */
  rewriteArguments?(call: { tool: string; args: unknown; runId: string; sessionId: string }): unknown;
}

/** A call after admission: what it will run with, and what it claims. */
export interface AdmittedCall {
  callId: string;
  tool: string;
  /** The arguments the model gave (shown in events and approval prompts). */
  args: unknown;
  /** Validated input the tool executes with. */
  input: unknown;
  claim: Claim;
  invalid?: ToolCallError;
  /** A hook changed the arguments after the claim was computed. */
  rewritten: boolean;
}

export class ToolService {
  private workspaceReady: Promise<void> | undefined;

  constructor(private readonly options: ToolServiceOptions) {}

  get workspace(): string {
    return this.options.workspace;
  }

  /** Validates a call and computes its claim, once, from the admitted arguments. */
  admit(call: ToolCallRequest): AdmittedCall {
    const tool = this.options.tools.get(call.name);
    const base = { callId: call.id, tool: call.name, args: call.args, rewritten: false };
    if (!tool) {
      return { ...base, input: call.args, claim: Claims.global(), invalid: { code: 'unknown_tool', message: `no tool named "${call.name}"; available: ${[...this.options.tools.keys()].join(', ') || 'none'}` } };
    }
    const parsed = tool.input.safeParse(call.args);
    if (!parsed.success) {
      const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ');
      return { ...base, input: call.args, claim: Claims.global(), invalid: { code: 'invalid_arguments', message: `invalid arguments for ${call.name}: ${detail}` } };
    }
    const admitted: AdmittedCall = { ...base, input: parsed.data, claim: this.claimOf(tool, parsed.data) };
    return this.applyRewrite(tool, admitted);
  }

  /** Whether a call must wait for a human decision before it runs. */
  needsApproval(_call: AdmittedCall): boolean {
    // The approval gate plugs in here; until it does, nothing is asked.
    return false;
  }

  approve(_call: AdmittedCall): Promise<ApprovalVerdict> {
    // The approval gate plugs in here; until it does, every call is allowed.
    return Promise.resolve({ allowed: true });
  }

  async execute(call: AdmittedCall, signal: AbortSignal, timeoutMs: number): Promise<unknown> {
    const tool = this.options.tools.get(call.tool);
    if (!tool) throw Object.assign(new Error(`no tool named "${call.tool}"`), { code: 'unknown_tool' });
    this.workspaceReady ??= mkdir(this.options.workspace, { recursive: true }).then(() => undefined);
    await this.workspaceReady;
    const ctx: ToolContext = {
      signal,
      workspace: this.options.workspace,
      callId: call.callId,
      runId: this.options.runId,
      sessionId: this.options.sessionId,
      timeoutMs,
      sandbox: this.options.sandbox,
      warn: this.options.warn,
      ...(this.options.delegate ? { delegate: this.options.delegate } : {}),
    };
    return tool.execute(call.input, ctx);
  }

  private claimOf(tool: AnyTool, input: unknown): Claim {
    if (!tool.concurrencyClaim) return tool.readOnly ? Claims.shared() : Claims.global();
    try {
      return normalizeClaim(tool.concurrencyClaim(input, { workspace: this.options.workspace, sessionId: this.options.sessionId }));
    } catch {
      // A claim we cannot compute could be anything: fail closed.
      return Claims.global();
    }
  }

  private applyRewrite(tool: AnyTool, call: AdmittedCall): AdmittedCall {
    const hook = this.options.rewriteArguments;
    if (!hook) return call;
    const replaced = hook({ tool: call.tool, args: call.args, runId: this.options.runId, sessionId: this.options.sessionId });
    if (replaced === undefined || canonicalJson(replaced) === canonicalJson(call.args)) return call;
    const parsed = tool.input.safeParse(replaced);
    if (!parsed.success) {
      return { ...call, rewritten: true, invalid: { code: 'invalid_arguments', message: `arguments rewritten by a hook are invalid for ${call.tool}` } };
    }
    return { ...call, input: parsed.data, rewritten: true };
  }
}
