/*
 * deriveWorkload(): a workload model (workload.ts) from stored run logs, read through the
 * Store interface only (listing, run records, event logs), so a lowdb directory, the memory
 * store and redis all work. It keeps counts, shares and durations — never a message's text.
 */
import type { Claim } from '../concurrency/index.js';
import type { RunEvent } from '../core/run-events.js';
import { RUN_QUERY_MAX_LIMIT } from '../store/run-summary.js';
import type { Store } from '../store/types.js';
import { empiricalOf, type AgentWorkload, type ToolClaimKind, type Workload } from './workload.js';

const HOUR_MS = 3_600_000;

interface AgentObservations {
  arrivals: number[];
  sessions: Map<string, number>;
  policies: Record<string, number>;
  turnsPerRun: number[];
  modelLatencyMs: number[];
  toolBatchSize: number[];
  tools: Record<string, number>;
  modelTurns: number;
  modelErrors: number;
  runs: number;
  failed: number;
}

interface ToolObservations {
  claims: Record<ToolClaimKind, number>;
  durationMs: number[];
  calls: number;
  errors: number;
  approvals: number;
}

/** Reads every stored run (newest first, page by page) and its log, and models the traffic they show. */
export async function deriveWorkload(store: Store): Promise<Workload> {
  const agents = new Map<string, AgentObservations>();
  const tools = new Map<string, ToolObservations>();
  const approvalWaitMs: number[] = [];
  let runs = 0;
  let before: string | undefined;
  do {
    const page = await store.queryRuns({ limit: RUN_QUERY_MAX_LIMIT, ...(before !== undefined ? { before } : {}) });
    for (const summary of page.runs) {
      const record = await store.getRun(summary.runId);
      if (record === undefined) continue;
      runs += 1;
      const agent = agentObservations(agents, summary.agentId);
      agent.runs += 1;
      if (summary.state === 'failed') agent.failed += 1;
      addMessage(agent, summary.sessionId, Date.parse(summary.createdAt), record.request.busyPolicy);
      observeLog(await store.readEvents(summary.runId), agent, tools, approvalWaitMs);
    }
    before = page.cursor;
  } while (before !== undefined);

  const allArrivals = [...agents.values()].flatMap((a) => a.arrivals);
  const from = allArrivals.length > 0 ? Math.min(...allArrivals) : 0;
  const to = allArrivals.length > 0 ? Math.max(...allArrivals) : 0;
  const covered = hoursCovered(from, to);
  return {
    version: 1,
    source: {
      runs,
      ...(allArrivals.length > 0 ? { from: new Date(from).toISOString(), to: new Date(to).toISOString() } : {}),
      days: Math.max(1, Math.ceil((to - from) / (24 * HOUR_MS))),
    },
    agents: Object.fromEntries(
      [...agents].sort(([a], [b]) => a.localeCompare(b)).map(([id, a]) => [id, agentWorkload(a, covered)]),
    ),
    tools: Object.fromEntries(
      [...tools]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, t]) => [
          name,
          {
            claim: (Object.entries(t.claims) as [ToolClaimKind, number][]).sort((x, y) => y[1] - x[1])[0]![0],
            durationMs: empiricalOf(t.durationMs),
            errorRate: ratio(t.errors, t.calls),
            approvalRate: ratio(t.approvals, t.calls),
          },
        ]),
    ),
    ...(approvalWaitMs.length > 0 ? { approvalWaitMs: empiricalOf(approvalWaitMs) } : {}),
  };
}

function agentObservations(agents: Map<string, AgentObservations>, agentId: string): AgentObservations {
  let agent = agents.get(agentId);
  if (agent === undefined) {
    agent = {
      arrivals: [],
      sessions: new Map(),
      policies: {},
      turnsPerRun: [],
      modelLatencyMs: [],
      toolBatchSize: [],
      tools: {},
      modelTurns: 0,
      modelErrors: 0,
      runs: 0,
      failed: 0,
    };
    agents.set(agentId, agent);
  }
  return agent;
}

function addMessage(agent: AgentObservations, sessionId: string, at: number, policy: string): void {
  agent.arrivals.push(at);
  agent.sessions.set(sessionId, (agent.sessions.get(sessionId) ?? 0) + 1);
  agent.policies[policy] = (agent.policies[policy] ?? 0) + 1;
}

/** One run's log: its turns, their model latency and tool batches, its calls, approvals and the steers it took in. */
function observeLog(
  events: RunEvent[],
  agent: AgentObservations,
  tools: Map<string, ToolObservations>,
  approvalWaitMs: number[],
): void {
  const turnStarted = new Map<number, number>();
  const answered = new Set<number>();
  const toolOf = new Map<string, string>();
  const approvalAt = new Map<string, number>();
  let failed = false;
  for (const event of events) {
    const at = Date.parse(event.at);
    switch (event.type) {
      case 'run.steered':
        addMessage(agent, event.sessionId, at, 'steer');
        break;
      case 'turn.started':
        turnStarted.set(event.turn, at);
        break;
      case 'model.message': {
        answered.add(event.turn);
        const started = turnStarted.get(event.turn);
        if (started !== undefined) agent.modelLatencyMs.push(at - started);
        if (event.toolCalls.length > 0) {
          agent.toolBatchSize.push(event.toolCalls.length);
          for (const call of event.toolCalls) agent.tools[call.name] = (agent.tools[call.name] ?? 0) + 1;
        }
        break;
      }
      case 'tool.scheduled':
        for (const c of event.claims) {
          toolOf.set(c.callId, c.tool);
          toolObservations(tools, c.tool).claims[claimKind(c.claim)] += 1;
        }
        break;
      case 'tool.started':
        toolOf.set(event.callId, event.tool);
        break;
      case 'approval.requested':
        approvalAt.set(event.approvalId, at);
        break;
      case 'approval.resolved': {
        const requested = approvalAt.get(event.approvalId);
        if (requested !== undefined) approvalWaitMs.push(at - requested);
        break;
      }
      case 'tool.finished': {
        const name = toolOf.get(event.callId);
        if (name === undefined || event.synthetic) break;
        const tool = toolObservations(tools, name);
        tool.calls += 1;
        tool.durationMs.push(event.durationMs);
        if (!event.ok) tool.errors += 1;
        break;
      }
      case 'run.failed':
        failed = true;
        break;
    }
  }
  for (const event of events) {
    if (event.type === 'approval.requested') {
      const name = toolOf.get(event.callId);
      if (name !== undefined) toolObservations(tools, name).approvals += 1;
    }
  }
  const turns = turnStarted.size;
  if (turns === 0) return;
  agent.turnsPerRun.push(turns);
  agent.modelTurns += turns;
  // A turn the model never answered in a run that failed: the model's failure.
  if (failed && answered.size < turns) agent.modelErrors += 1;
}

function toolObservations(tools: Map<string, ToolObservations>, name: string): ToolObservations {
  let tool = tools.get(name);
  if (tool === undefined) {
    tool = { claims: { shared: 0, paths: 0, nodes: 0, global: 0 }, durationMs: [], calls: 0, errors: 0, approvals: 0 };
    tools.set(name, tool);
  }
  return tool;
}

function claimKind(claim: Claim): ToolClaimKind {
  if (claim.kind === 'shared') return 'shared';
  switch (claim.scope.kind) {
    case 'paths':
      return 'paths';
    case 'nodes':
      return 'nodes';
    default:
      return 'global';
  }
}

function agentWorkload(a: AgentObservations, covered: number[]): AgentWorkload {
  const perHour = Array.from({ length: 24 }, () => 0);
  for (const at of a.arrivals) perHour[new Date(at).getUTCHours()]! += 1;
  return {
    arrivalsPerHour: perHour.map((count, h) => (covered[h]! > 0 ? round(count / covered[h]!) : 0)),
    messagesPerSession: empiricalOf([...a.sessions.values()], 1),
    busyPolicies: a.policies,
    turnsPerRun: empiricalOf(a.turnsPerRun, 1),
    modelLatencyMs: empiricalOf(a.modelLatencyMs, 0),
    toolBatchSize: empiricalOf(a.toolBatchSize, 1),
    tools: a.tools,
    modelErrorRate: ratio(a.modelErrors, a.modelTurns),
    failureRate: ratio(a.failed, a.runs),
  };
}

/**
 * Hours of each hour-of-day the observations span, in fractions: 100 messages seen over ten
 * minutes are a rate of 600 an hour, not 100. A span shorter than a minute counts as one.
 */
function hoursCovered(from: number, to: number): number[] {
  const covered = Array.from({ length: 24 }, () => 0);
  const end = Math.max(to, from + 60_000);
  for (let t = from; t < end;) {
    const next = Math.min(end, (Math.floor(t / HOUR_MS) + 1) * HOUR_MS);
    covered[new Date(t).getUTCHours()]! += (next - t) / HOUR_MS;
    t = next;
  }
  return covered;
}

function ratio(part: number, whole: number): number {
  return whole > 0 ? round(part / whole) : 0;
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
