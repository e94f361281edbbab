/*
 * The tools a run sees: the engine's, with its session's own over them (in a cluster each
 * checking the lease first), their specs for the model, the run's ToolService built once per
 * run, and session_send's delegation to a run on another session.
 */
import type { ApprovalGate } from '../approval/index.js';
import type { Config } from '../config/index.js';
import { ToolError } from '../core/errors.js';
import type { RunRequest } from '../core/run-request.js';
import type { RunResult } from '../core/run-status.js';
import { toolSpecOf } from '../harness/tool-specs.js';
import type { ToolSpec } from '../model/types.js';
import { sandboxSettings } from '../sandbox/sandbox-settings.js';
import type { AnyTool, DelegatedRunResult, DelegationRequest } from '../tools/tool.js';
import { ToolService, type ToolServiceOptions } from '../tools/tool-service.js';
import { leaseCheckedTools, type SessionOwnership } from './ownership.js';
import type { RunLedger } from './run-ledger.js';
import type { RunHandle, RunTable } from './run-table.js';

export interface RunToolsDeps {
  table: RunTable;
  ledger: RunLedger;
  config: () => Config;
  tools: ReadonlyMap<string, AnyTool>;
  /** Tools only the runs of one session see; one replaces an engine tool of the same name. Must not throw. */
  sessionTools?: (sessionId: string) => readonly AnyTool[];
  approvals: ApprovalGate;
  rewriteArguments?: ToolServiceOptions['rewriteArguments'];
  nodes?: ToolServiceOptions['nodes'];
  /** Submits a delegated run (`session_send`) and resolves with its result. May reject with an EngineError. */
  delegate: (request: RunRequest) => Promise<RunResult>;
  ownership?: Pick<SessionOwnership, 'mayAct'>;
}

/**
 * @example
 * const tools = new RunTools(deps);
 * tools.toolSpecsOf('alice'); // what the model is offered
 * tools.toolServiceOf(handle); // what executes the run's calls
 */
export class RunTools {
  private readonly toolSpecs: ToolSpec[];
  /** Each acting run's ToolService, built when it first acts, dropped when its actor stops. */
  private readonly services = new Map<string, ToolService>();

  constructor(private readonly deps: RunToolsDeps) {
    this.toolSpecs = [...deps.tools.values()].map(toolSpecOf);
  }

  /** The engine's tools, with the session's own over them (in a cluster, each checking the lease first). */
  private toolsOf(sessionId: string): ReadonlyMap<string, AnyTool> {
    const own = this.deps.sessionTools?.(sessionId) ?? [];
    const tools =
      own.length === 0
        ? this.deps.tools
        : new Map([...this.deps.tools, ...own.map((tool) => [tool.name, tool] as const)]);
    return this.deps.ownership ? leaseCheckedTools(tools, sessionId, this.deps.ownership) : tools;
  }

  toolSpecsOf(sessionId: string): ToolSpec[] {
    const own = this.deps.sessionTools?.(sessionId) ?? [];
    if (own.length === 0) return this.toolSpecs;
    const replaced = new Set(own.map((tool) => tool.name));
    return [...this.toolSpecs.filter((spec) => !replaced.has(spec.name)), ...own.map(toolSpecOf)];
  }

  /** session_send: a run on another session, owned by this one (cancelling it cancels the child). */
  private async delegate(parent: RunHandle, request: DelegationRequest): Promise<DelegatedRunResult> {
    const { table } = this.deps;
    for (let run: RunHandle | undefined = parent; run; run = table.get(run.request.parentRunId ?? '')) {
      if (run.status.sessionId === request.sessionId) {
        throw new ToolError(
          'delegation_cycle',
          `session "${request.sessionId}" is already working on this task (run ${run.status.runId}); delegating to it would wait for itself`,
        );
      }
      if (!run.request.parentRunId) break;
    }
    const result = await this.deps.delegate({
      sessionId: request.sessionId,
      agentId: parent.request.agentId,
      input: request.input,
      parentRunId: parent.status.runId,
      busyPolicy: 'queue',
      ...(request.workspace !== undefined ? { workspace: request.workspace } : {}),
      ...(parent.request.unattended !== undefined ? { unattended: parent.request.unattended } : {}),
      // A delegated run may not escape the tier its parent works under.
      ...(parent.request.approvalTier !== undefined ? { approvalTier: parent.request.approvalTier } : {}),
    });
    return {
      runId: result.runId,
      state: result.state,
      ...(result.output !== undefined ? { output: result.output } : {}),
      ...(result.error !== undefined ? { error: result.error } : {}),
    };
  }

  /** The run's ToolService, the one choke point of its tool calls (built when it first acts). */
  toolServiceOf(handle: RunHandle): ToolService {
    const known = this.services.get(handle.status.runId);
    if (known) return known;
    const { config, ledger, table } = this.deps;
    const service = new ToolService({
      tools: this.toolsOf(handle.status.sessionId),
      runId: handle.status.runId,
      sessionId: handle.status.sessionId,
      workspace: table.workspaceOf(handle),
      sandbox: sandboxSettings(config(), handle.request.sandbox),
      unattended: handle.request.unattended ?? false,
      warn: (message) => ledger.append(handle, 'sandbox.warning', { message }),
      delegate: (request) => this.delegate(handle, request),
      ...(this.deps.rewriteArguments ? { rewriteArguments: this.deps.rewriteArguments } : {}),
      ...(this.deps.nodes ? { nodes: this.deps.nodes } : {}),
      gate: this.deps.approvals,
      approvalConfig: () => {
        const tier = handle.request.approvalTier;
        return tier === undefined ? config().approval : { ...config().approval, tier };
      },
      commandPolicy: () => config().sandbox.command_policy,
    });
    this.services.set(handle.status.runId, service);
    return service;
  }

  /** The run's actor stopped: its ToolService goes with it. */
  forget(runId: string): void {
    this.services.delete(runId);
  }
}
