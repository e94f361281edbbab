/*
 * The port through which an engine shares its sessions and its permits with other processes
 * (the cluster in src/cluster/, docs/cluster.md). An engine alone has none: every session is
 * its own, the limiter is the limiter actor, a delegated run is submitted to itself — the
 * behaviour of a single process. With one, the cluster decides which process owns a session
 * and holds the permits in Redis; the engine asks it only the questions below.
 */
import type { AnyActorRef } from 'xstate';
import type { Priority, PriorityWeights } from '../../machines/limiter.machine.js';
import { ToolError } from '../core/errors.js';
import type { RunRequest } from '../core/run-request.js';
import type { RunResult } from '../core/run-status.js';
import type { AnyTool } from '../tools/tool.js';
import type { LimiterFigures, LimiterHandlers } from './limiter.host.js';

/** What the engine asks of a limiter; the limiter host is the one of a single process. */
export interface Limiter {
  /**
   * Asks for a global and a per-agent permit; the answer comes through the handlers. A limiter
   * may ignore the priority class (the cluster's Redis limiter grants in arrival order).
   */
  acquire(runId: string, agentId: string, priority?: Priority): void;
  release(runId: string): void;
  reconfigure(maxGlobal: number, maxPerAgent: number, weights?: PriorityWeights): void;
  figures(): LimiterFigures;
  stop(): void;
  /** The limiter's actor, when it is one (for inspection). */
  readonly ref?: AnyActorRef;
  /**
   * Resolves once acquire(runId) was answered (granted or waiting) when the answer comes later;
   * undefined when acquire answers before it returns, as the limiter host does.
   */
  answered?(runId: string): Promise<void> | undefined;
}

export interface SessionOwnership {
  /** This process's name; `run.started` carries it as `node`. */
  readonly nodeId: string;
  /** Builds the engine's limiter. `sessionOf` names the session of a run the engine knows. */
  limiter(
    handlers: LimiterHandlers,
    limits: { maxGlobal: number; maxPerAgent: number },
    sessionOf: (runId: string) => string | undefined,
  ): Limiter;
  /**
   * Whether this process may still act for the session: false once its lease ran out (a long
   * pause), so a run stops before its next model turn or tool call instead of acting twice.
   * Must not throw.
   */
  mayAct(sessionId: string): boolean;
  /** session_send: submits the delegated run where its session lives and resolves with its result. */
  delegate(request: RunRequest): Promise<RunResult>;
}

/** The error a run fails with when its process may no longer act for its session. */
export const OWNER_LOST = {
  code: 'interrupted',
  message:
    'this process lost its lease on the session (it stalled longer than [cluster] lease_seconds); another process continues the session',
} as const;

/** Throws the run's failure (code `interrupted`) when this process may no longer act for the session. */
export function assertMayAct(ownership: Pick<SessionOwnership, 'mayAct'> | undefined, sessionId: string): void {
  if (ownership && !ownership.mayAct(sessionId))
    throw Object.assign(new Error(OWNER_LOST.message), { code: OWNER_LOST.code });
}

/** A session's tools in a cluster: each checks that this process may still act before it executes. */
export function leaseCheckedTools(
  tools: ReadonlyMap<string, AnyTool>,
  sessionId: string,
  ownership: Pick<SessionOwnership, 'mayAct'>,
): ReadonlyMap<string, AnyTool> {
  // Object.create keeps whatever the tool has, own or inherited; only execute is put in front.
  const checked = (tool: AnyTool): AnyTool =>
    Object.create(tool, {
      execute: {
        value: (input: unknown, ctx: Parameters<AnyTool['execute']>[1]) => {
          if (!ownership.mayAct(sessionId)) throw new ToolError(OWNER_LOST.code, OWNER_LOST.message);
          return tool.execute(input, ctx);
        },
      },
    }) as AnyTool;
  return new Map([...tools].map(([name, tool]) => [name, checked(tool)]));
}
