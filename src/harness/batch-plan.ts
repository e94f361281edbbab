/*
 * Planning a tool batch (docs/claims.md, "Dispatch rules of the Act phase"): admit every call once
 * (validation and claim), find duplicates, split the batch into ordered groups (or a conflict DAG),
 * and explain the schedule — which groups, each call's claim, and for each group boundary the two
 * calls and the resource that conflicted.
 */
import type { ActInput, PlannedCall } from '../../machines/act.machine.js';
import type { ToolCallRequest } from '../../machines/run.machine.js';
import {
  Claims,
  canonicalJson,
  claimsConflict,
  conflictReason,
  describeClaim,
  partitionParallelGroups,
} from '../concurrency/index.js';
import type { ScheduleBoundary, ToolScheduleData } from '../core/run-events.js';
import { idempotencyKeyOf } from '../tools/idempotency-key.js';
import type { AdmittedCall, ToolService } from '../tools/tool-service.js';

export interface PlanOptions {
  runId: string;
  turn: number;
  toolCalls: ToolCallRequest[];
  service: ToolService;
  concurrency: number;
  scheduling: 'groups' | 'dag';
  steerPending: boolean;
  /** Per-call timeout: the tool timeout clipped to the run's remaining time. */
  callTimeoutMs: number;
}

export interface BatchPlan {
  calls: AdmittedCall[];
  act: ActInput;
  schedule: ToolScheduleData;
}

export function planBatch(options: PlanOptions): BatchPlan {
  // Each call's key comes from its place in the turn, so a resumed run hands the same call the same key.
  const calls = options.toolCalls.map((call, index) => ({
    ...admitCall(call, options.service),
    idempotencyKey: idempotencyKeyOf(options.runId, options.turn, index),
  }));
  const claims = calls.map((c) => c.claim);
  const duplicateOf = findDuplicates(calls);
  const hasDuplicates = duplicateOf.some((d) => d !== undefined);
  const serialReason =
    options.concurrency < 2
      ? 'serial: concurrency < 2'
      : hasDuplicates
        ? 'serial: duplicate calls in the batch'
        : undefined;
  const dag = options.scheduling === 'dag' && serialReason === undefined;

  let groups: [number, number][];
  if (serialReason !== undefined) groups = calls.map((_, i) => [i, i + 1]);
  else groups = splitRewrittenGroups(partitionParallelGroups(claims), calls);

  const planned: PlannedCall[] = calls.map((call, index) => ({
    index,
    callId: call.callId,
    tool: call.tool,
    deps: dag ? conflictingEarlier(claims, index, duplicateOf[index]) : previousGroup(groups, index),
    checkpoint: dag || groups.some(([start]) => start === index),
    ...(duplicateOf[index] !== undefined ? { duplicateOf: duplicateOf[index] } : {}),
    ...(call.invalid ? { invalid: call.invalid } : {}),
    timeoutMs: options.callTimeoutMs,
    needsApproval: call.invalid === undefined && options.service.needsApproval(call),
  }));

  return {
    calls,
    act: {
      runId: options.runId,
      turn: options.turn,
      calls: planned,
      concurrency: serialReason !== undefined ? 1 : options.concurrency,
      inOrder: !dag,
      steerPending: options.steerPending,
    },
    schedule: {
      turn: options.turn,
      mode: serialReason !== undefined ? 'serial' : dag ? 'dag' : 'groups',
      concurrency: options.concurrency,
      groups,
      claims: calls.map((c) => ({ callId: c.callId, tool: c.tool, claim: c.claim, label: describeClaim(c.claim) })),
      boundaries: groups
        .slice(1)
        .map(([start]) => explainBoundary(calls, groups, start, duplicateOf[start], serialReason)),
      ...(dag ? { deps: planned.map((p) => p.deps) } : {}),
    },
  };
}

/**
 * A call whose argument text was not a JSON object never reaches the tool: it fails with
 * `invalid_arguments`, quoting the text so the model can see what it wrote and try again.
 */
function admitCall(call: ToolCallRequest, service: ToolService): AdmittedCall {
  const raw =
    'malformedArguments' in call && typeof call.malformedArguments === 'string' ? call.malformedArguments : undefined;
  if (raw === undefined) return service.admit(call);
  return {
    callId: call.id,
    tool: call.name,
    args: call.args,
    input: call.args,
    claim: Claims.global(),
    rewritten: false,
    invalid: {
      code: 'invalid_arguments',
      message:
        `the arguments of ${call.name} are not a JSON object: ${JSON.stringify(truncate(raw))}; call ` +
        `${call.name} again with one JSON object matching its schema`,
    },
  };
}

function truncate(text: string, max = 2000): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/**
 * Index of the first identical call (same tool, same canonical arguments) for each repeat.
 * Malformed calls all carry `{}`: their error, which quotes the model's text, tells them apart.
 */
function findDuplicates(calls: AdmittedCall[]): (number | undefined)[] {
  const first = new Map<string, number>();
  return calls.map((call, index) => {
    const key = `${call.tool}\u0000${canonicalJson(call.args)}\u0000${call.invalid?.message ?? ''}`;
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, index);
    return earlier;
  });
}

/** A group holding a call whose arguments a hook rewrote runs serially: one call per group. */
function splitRewrittenGroups(groups: [number, number][], calls: AdmittedCall[]): [number, number][] {
  return groups.flatMap(([start, end]): [number, number][] => {
    const rewritten = calls.slice(start, end).some((c) => c.rewritten);
    if (!rewritten) return [[start, end]];
    return Array.from({ length: end - start }, (_, k): [number, number] => [start + k, start + k + 1]);
  });
}

function previousGroup(groups: [number, number][], index: number): number[] {
  const g = groups.findIndex(([start, end]) => index >= start && index < end);
  if (g <= 0) return [];
  const [start, end] = groups[g - 1]!;
  return Array.from({ length: end - start }, (_, k) => start + k);
}

function conflictingEarlier(claims: AdmittedCall['claim'][], index: number, duplicate: number | undefined): number[] {
  const deps: number[] = [];
  for (let j = 0; j < index; j++) if (j === duplicate || claimsConflict(claims[j]!, claims[index]!)) deps.push(j);
  return deps;
}

function explainBoundary(
  calls: AdmittedCall[],
  groups: [number, number][],
  start: number,
  duplicate: number | undefined,
  serialReason: string | undefined,
): ScheduleBoundary {
  const next = calls[start]!;
  const g = groups.findIndex(([s]) => s === start);
  const [prevStart, prevEnd] = groups[g - 1]!;
  for (let j = prevStart; j < prevEnd; j++) {
    const reason = conflictReason(calls[j]!.claim, next.claim);
    if (reason !== undefined) return { index: start, previous: calls[j]!.callId, next: next.callId, reason };
  }
  const previous = calls[prevEnd - 1]!.callId;
  if (duplicate !== undefined)
    return { index: start, previous: calls[duplicate]!.callId, next: next.callId, reason: 'duplicate' };
  if (calls.slice(prevStart, start + 1).some((c) => c.rewritten)) {
    return {
      index: start,
      previous,
      next: next.callId,
      reason: 'serial: arguments rewritten after the claim was computed',
    };
  }
  return { index: start, previous, next: next.callId, reason: serialReason ?? 'serial' };
}
