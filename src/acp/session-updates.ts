/*
 * The update mapping: a session's run events become ACP `session/update`s. Text deltas are
 * agent message chunks; each tool call of a batch is announced as a `tool_call` (pending, with
 * kind, locations from its claim and the diff of an edit) when the batch is scheduled, then
 * `tool_call_update`s take it to in_progress and completed or failed; a batch of two or more
 * calls is shown as a `plan` whose entries are its groups (what runs in parallel, what waits).
 * One mapper per session: it remembers the calls in flight to describe them later.
 */
import type { PlanEntry, SessionUpdate, ToolCallUpdate } from '@agentclientprotocol/sdk';
import type { RunEvent, RunEventOf } from '../core/run-events.js';
import { resultContent, toolCallView, type ToolCallFacts } from './tool-calls.js';

interface CallInFlight extends ToolCallFacts {
  toolCallId: string;
}

interface BatchPlan {
  runId: string;
  groups: { toolCallIds: string[]; titles: string[]; started: number; finished: number }[];
}

export class SessionUpdates {
  /** Tool calls the model asked for, by run and call id, until they finish. */
  private readonly calls = new Map<string, CallInFlight>();
  private readonly requested = new Map<string, { tool: string; args: unknown }>();
  /** Approvals waiting, by approval id: the call each is about. */
  private readonly approvals = new Map<string, string>();
  /** Turns whose text arrived as deltas (the final message then repeats it). */
  private readonly streamed = new Set<string>();
  private plan: BatchPlan | undefined;

  /** `workspace`: where relative paths of the session's tool calls point (the session's cwd). */
  constructor(private readonly workspace: string) {}

  map(event: RunEvent): SessionUpdate[] {
    switch (event.type) {
      case 'model.delta':
        this.streamed.add(`${event.runId}\u0000${event.turn}`);
        return event.text === '' ? [] : [messageChunk(event.text)];
      case 'model.message':
        return this.message(event);
      case 'tool.scheduled':
        return this.scheduled(event);
      case 'tool.started':
        return this.progress(event.runId, event.callId, 'started');
      case 'approval.requested':
        this.approvals.set(event.approvalId, key(event.runId, event.callId));
        return [];
      case 'approval.resolved':
        return this.approvalResolved(event);
      case 'tool.finished':
        return this.finished(event);
      case 'run.completed':
      case 'run.cancelled':
      case 'run.failed':
        this.forget(event.runId);
        return [];
      default:
        return [];
    }
  }

  /** The ACP view of a call in flight (for a permission request), or undefined when it is not known. */
  toolCall(runId: string, callId: string): (ToolCallUpdate & { facts: ToolCallFacts }) | undefined {
    const call = this.calls.get(key(runId, callId));
    if (!call) return undefined;
    const view = toolCallView(call);
    return { toolCallId: call.toolCallId, ...view, rawInput: call.args, facts: call };
  }

  /** A run is over: what it asked for and never scheduled (it was cancelled first) is dropped. */
  private forget(runId: string): void {
    const prefix = `${runId}\u0000`;
    for (const map of [this.calls, this.requested] as Map<string, unknown>[]) {
      for (const callKey of [...map.keys()]) if (callKey.startsWith(prefix)) map.delete(callKey);
    }
    for (const turn of [...this.streamed]) if (turn.startsWith(prefix)) this.streamed.delete(turn);
  }

  private message(event: RunEventOf<'model.message'>): SessionUpdate[] {
    for (const call of event.toolCalls)
      this.requested.set(key(event.runId, call.id), { tool: call.name, args: call.args });
    const turn = `${event.runId}\u0000${event.turn}`;
    const streamed = this.streamed.delete(turn);
    return !streamed && event.text !== '' ? [messageChunk(event.text)] : [];
  }

  private scheduled(event: RunEventOf<'tool.scheduled'>): SessionUpdate[] {
    const updates: SessionUpdate[] = [];
    const titles: string[] = [];
    for (const { callId, tool, claim } of event.claims) {
      const asked = this.requested.get(key(event.runId, callId));
      this.requested.delete(key(event.runId, callId));
      const call: CallInFlight = {
        toolCallId: toolCallIdOf(event.runId, callId),
        tool,
        args: asked?.args ?? {},
        claim,
        workspace: this.workspace,
      };
      this.calls.set(key(event.runId, callId), call);
      const view = toolCallView(call);
      titles.push(view.title);
      updates.push({
        sessionUpdate: 'tool_call',
        toolCallId: call.toolCallId,
        ...view,
        status: 'pending',
        rawInput: call.args,
      });
    }
    if (event.claims.length < 2) return updates;
    this.plan = {
      runId: event.runId,
      groups: event.groups.map(([start, end]) => ({
        toolCallIds: event.claims.slice(start, end).map((c) => toolCallIdOf(event.runId, c.callId)),
        titles: titles.slice(start, end),
        started: 0,
        finished: 0,
      })),
    };
    return [...updates, this.planUpdate()];
  }

  private approvalResolved(event: RunEventOf<'approval.resolved'>): SessionUpdate[] {
    const callKey = this.approvals.get(event.approvalId);
    this.approvals.delete(event.approvalId);
    const call = callKey === undefined ? undefined : this.calls.get(callKey);
    // The permission request showed the call as pending again; allowed, it runs now.
    if (!call || (event.decision !== 'allow_once' && event.decision !== 'allow_session')) return [];
    return [{ sessionUpdate: 'tool_call_update', toolCallId: call.toolCallId, status: 'in_progress' }];
  }

  private finished(event: RunEventOf<'tool.finished'>): SessionUpdate[] {
    const call = this.calls.get(key(event.runId, event.callId));
    if (!call) return [];
    this.calls.delete(key(event.runId, event.callId));
    const result = { ok: event.ok, output: event.output, ...(event.error ? { error: event.error } : {}) };
    const update: SessionUpdate = {
      sessionUpdate: 'tool_call_update',
      toolCallId: call.toolCallId,
      status: event.ok ? 'completed' : 'failed',
      content: resultContent(call, result),
      rawOutput: event.ok ? event.output : { error: event.error },
    };
    return [update, ...this.progress(event.runId, event.callId, 'finished')];
  }

  /** tool_call_update in_progress on start; the plan, when a group changes status. */
  private progress(runId: string, callId: string, step: 'started' | 'finished'): SessionUpdate[] {
    const toolCallId = toolCallIdOf(runId, callId);
    const updates: SessionUpdate[] =
      step === 'started' && this.calls.has(key(runId, callId))
        ? [{ sessionUpdate: 'tool_call_update', toolCallId, status: 'in_progress' }]
        : [];
    const group =
      this.plan?.runId === runId ? this.plan.groups.find((g) => g.toolCallIds.includes(toolCallId)) : undefined;
    if (!group) return updates;
    const before = groupStatus(group);
    if (step === 'started') group.started += 1;
    else group.finished += 1;
    return groupStatus(group) === before ? updates : [...updates, this.planUpdate()];
  }

  private planUpdate(): SessionUpdate {
    const groups = this.plan?.groups ?? [];
    const entries: PlanEntry[] = groups.map((group, index) => ({
      content:
        (groups.length > 1 ? `Step ${index + 1} of ${groups.length}: ` : '') +
        (group.titles.length > 1 ? 'in parallel, ' : '') +
        group.titles.join(' · '),
      priority: 'medium',
      status: groupStatus(group),
    }));
    return { sessionUpdate: 'plan', entries };
  }
}

/** An ACP tool call id: call ids repeat across runs (call_0_0 …), so the run id prefixes it. */
export function toolCallIdOf(runId: string, callId: string): string {
  return `${runId}/${callId}`;
}

function key(runId: string, callId: string): string {
  return `${runId}\u0000${callId}`;
}

function groupStatus(group: BatchPlan['groups'][number]): PlanEntry['status'] {
  if (group.finished >= group.toolCallIds.length) return 'completed';
  return group.started > 0 || group.finished > 0 ? 'in_progress' : 'pending';
}

function messageChunk(text: string): SessionUpdate {
  return { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } };
}
