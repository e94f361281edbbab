/*
 * The per-request ToolService: the one choke point every tool call of a run passes through. Built
 * for each run from the registry, the run's workspace and sandbox settings, the approval gate and
 * settings and its unattended flag; it validates a call, computes its claim (from the admitted
 * arguments, paths resolved against the workspace), judges its command and whether it needs
 * approval (in the order of docs/architecture.md: command policy -> approval), asks for approval
 * and executes it.
 */
import type { ToolCallRequest } from '../../machines/run.machine.js';
import type { ApprovalVerdict } from '../../machines/tool-call.machine.js';
import type { CodedError } from '../core/chart-words.js';
import {
  commandBlockReason,
  decideApproval,
  summarizeAction,
  type ApprovalGate,
  type ApprovalRuling,
} from '../approval/index.js';
import { Claims, canonicalJson, normalizeClaim, type Claim } from '../concurrency/index.js';
import type { Config } from '../config/index.js';
import type { NodeInvoker } from './node-invoker.js';
import {
  evaluateCommand,
  makeWorkspace,
  workspaceOwnerOptions,
  type CommandPolicy,
  type CommandVerdict,
} from '../sandbox/index.js';
import type { AnyTool, DelegatedRunResult, DelegationRequest, SandboxSettings, ToolContext } from './tool.js';

/** [approval] as the ToolService needs it. */
export type ApprovalSettings = Pick<Config['approval'], 'tier' | 'tools'>;

export interface ToolServiceOptions {
  tools: ReadonlyMap<string, AnyTool>;
  runId: string;
  sessionId: string;
  workspace: string;
  sandbox: SandboxSettings;
  unattended: boolean;
  warn(message: string): void;
  delegate?(request: DelegationRequest): Promise<DelegatedRunResult>;
  /** Connected node clients, handed to tools as ctx.nodes (node_invoke). */
  nodes?: NodeInvoker;
  /** A hook that may rewrite a call's arguments after its claim was computed. */
  rewriteArguments?(call: { tool: string; args: unknown; runId: string; sessionId: string }): unknown;
  /**
   * [approval], read at each admission so a reload applies to the next call. Without it
   * approval is off and every call is allowed.
   */
  approvalConfig?(): ApprovalSettings;
  /** Where calls that must be confirmed wait; without it they fail closed (`approval_unavailable`). */
  gate?: ApprovalGate;
  /**
   * [sandbox.command_policy], read at each admission. Default: enforcement "warn", no operator
   * rules. The hard floor applies either way.
   */
  commandPolicy?(): CommandPolicy;
  /** Replaces src/sandbox's evaluateCommand (tests). */
  evaluateCommand?(command: string, policy: CommandPolicy): CommandVerdict;
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
  invalid?: CodedError;
  /** A hook changed the arguments after the claim was computed. */
  rewritten: boolean;
  /** The command policy's verdict on the call's command (tools with `commandOf`). */
  commandVerdict?: CommandVerdict;
  /** Whether the call may run, must be confirmed or is denied: decided at admission. */
  approval?: ApprovalRuling;
  /** idempotencyKeyOf(run, turn, position): set by the batch plan, handed to the tool as ctx.idempotencyKey. */
  idempotencyKey?: string;
}

export class ToolService {
  private workspaceReady: Promise<void> | undefined;
  /** Set once the workspace exists: later calls start their tool at once, not a microtask later. */
  private workspaceMade = false;

  constructor(private readonly options: ToolServiceOptions) {}

  get workspace(): string {
    return this.options.workspace;
  }

  /**
   * Validates a call and computes its claim, once, from the admitted arguments; then judges
   * what it will run with: the command policy (a block makes it invalid, `command_blocked`) and
   * the approval ruling (tier, overrides and floors, config read now).
   */
  admit(call: ToolCallRequest): AdmittedCall {
    const tool = this.options.tools.get(call.name);
    const base = { callId: call.id, tool: call.name, args: call.args, rewritten: false };
    if (!tool) {
      return {
        ...base,
        input: call.args,
        claim: Claims.global(),
        invalid: {
          code: 'unknown_tool',
          message: `no tool named "${call.name}"; available: ${[...this.options.tools.keys()].join(', ') || 'none'}`,
        },
      };
    }
    const parsed = tool.input.safeParse(call.args);
    if (!parsed.success) {
      const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ');
      return {
        ...base,
        input: call.args,
        claim: Claims.global(),
        invalid: { code: 'invalid_arguments', message: `invalid arguments for ${call.name}: ${detail}` },
      };
    }
    const admitted = this.applyRewrite(tool, { ...base, input: parsed.data, claim: this.claimOf(tool, parsed.data) });
    return admitted.invalid ? admitted : this.judge(tool, admitted);
  }

  /**
   * Whether a call goes through the approval state: it must be confirmed, or it is denied
   * (the denial is then the approval's answer, given at once without asking anyone).
   */
  needsApproval(call: AdmittedCall): boolean {
    return call.approval !== undefined && call.approval.decision !== 'allow';
  }

  /** The approval verdict of an admitted call; `signal` is the run's (cancel, deadline). */
  approve(call: AdmittedCall, signal?: AbortSignal): Promise<ApprovalVerdict> {
    const ruling = call.approval;
    if (!ruling || ruling.decision === 'allow') return Promise.resolve({ allowed: true });
    if (ruling.decision === 'deny')
      return Promise.resolve(denied('approval_denied', `${ruling.reason}; it was not run`));
    const tool = this.options.tools.get(call.tool);
    const destructive = tool !== undefined && (tool.destructive === true || isDestructiveOperation(tool, call.input));
    const description = tool?.describe?.(call.input);
    const summary = summarizeAction(call.tool, call.input, { destructive, ...(description ? { description } : {}) });
    const { gate, unattended } = this.options;
    if (!gate) {
      const why = unattended ? 'this run is unattended' : 'no approval surface is configured';
      return Promise.resolve(
        denied(
          'approval_unavailable',
          `${call.tool} needs confirmation (${ruling.reason}), but ${why}; it was not run`,
        ),
      );
    }
    return gate.request({
      runId: this.options.runId,
      sessionId: this.options.sessionId,
      callId: call.callId,
      tool: call.tool,
      args: call.input,
      summary,
      reason: ruling.reason,
      unattended,
      ...(signal ? { signal } : {}),
    });
  }

  async execute(call: AdmittedCall, signal: AbortSignal, timeoutMs: number): Promise<unknown> {
    const tool = this.options.tools.get(call.tool);
    if (!tool) throw Object.assign(new Error(`no tool named "${call.tool}"`), { code: 'unknown_tool' });
    if (!this.workspaceMade) {
      this.workspaceReady ??= makeWorkspace(this.options.workspace, workspaceOwnerOptions(this.options.sandbox)).then(
        () => {
          this.workspaceMade = true;
        },
      );
      await this.workspaceReady;
    }
    const ctx: ToolContext = {
      signal,
      workspace: this.options.workspace,
      callId: call.callId,
      runId: this.options.runId,
      sessionId: this.options.sessionId,
      ...(call.idempotencyKey !== undefined ? { idempotencyKey: call.idempotencyKey } : {}),
      timeoutMs,
      sandbox: this.options.sandbox,
      warn: this.options.warn,
      ...(this.options.delegate ? { delegate: this.options.delegate } : {}),
      ...(this.options.nodes ? { nodes: this.options.nodes } : {}),
    };
    return tool.execute(call.input, ctx);
  }

  /** The gate's order: the command policy first (a block refuses the call), then the approval ruling. */
  private judge(tool: AnyTool, call: AdmittedCall): AdmittedCall {
    const commandVerdict = this.commandVerdictOf(tool, call.input);
    const judged: AdmittedCall = commandVerdict ? { ...call, commandVerdict } : call;
    const blocked = commandBlockReason(commandVerdict);
    if (blocked !== undefined) return { ...judged, invalid: { code: 'command_blocked', message: blocked } };
    const settings = this.options.approvalConfig?.();
    if (!settings) return judged;
    const approval = decideApproval({
      tier: settings.tier,
      overrides: settings.tools,
      tool,
      destructiveOperation: isDestructiveOperation(tool, call.input),
      ...(commandVerdict ? { commandVerdict } : {}),
    });
    return { ...judged, approval };
  }

  private commandVerdictOf(tool: AnyTool, input: unknown): CommandVerdict | undefined {
    const command = tool.commandOf?.(input);
    if (command === undefined) return undefined;
    const evaluate = this.options.evaluateCommand ?? evaluateCommand;
    try {
      return evaluate(command, this.options.commandPolicy?.() ?? {});
    } catch (error) {
      // A policy that cannot judge a command must not let it through.
      return {
        action: 'block',
        rule: 'command_policy',
        reason: `the policy failed to evaluate the command (${error instanceof Error ? error.message : String(error)})`,
      };
    }
  }

  private claimOf(tool: AnyTool, input: unknown): Claim {
    if (!tool.concurrencyClaim) return tool.readOnly ? Claims.shared() : Claims.global();
    try {
      return normalizeClaim(
        tool.concurrencyClaim(input, { workspace: this.options.workspace, sessionId: this.options.sessionId }),
      );
    } catch {
      // A claim we cannot compute could be anything: fail closed.
      return Claims.global();
    }
  }

  private applyRewrite(tool: AnyTool, call: AdmittedCall): AdmittedCall {
    const hook = this.options.rewriteArguments;
    if (!hook) return call;
    const replaced = hook({
      tool: call.tool,
      args: call.args,
      runId: this.options.runId,
      sessionId: this.options.sessionId,
    });
    if (replaced === undefined || canonicalJson(replaced) === canonicalJson(call.args)) return call;
    const parsed = tool.input.safeParse(replaced);
    if (!parsed.success) {
      return {
        ...call,
        rewritten: true,
        invalid: { code: 'invalid_arguments', message: `arguments rewritten by a hook are invalid for ${call.tool}` },
      };
    }
    return { ...call, input: parsed.data, rewritten: true };
  }
}

/** This call is a destructive operation of a tool that is not always destructive (its own hook says). */
function isDestructiveOperation(tool: AnyTool, input: unknown): boolean {
  try {
    return tool.destructiveFor?.(input) === true;
  } catch {
    // A hook that cannot judge its input is taken at its worst.
    return true;
  }
}

function denied(code: string, message: string): ApprovalVerdict {
  return { allowed: false, error: { code, message } };
}
