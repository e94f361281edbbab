/*
 * The log lines of runs, written from the event stream: every line of a run is written by a
 * child logger bound to its runId and sessionId. What a run does in outline (started,
 * approvals, a failing tool call, its end) is `info`; the steps in between (turns, tool calls)
 * are `debug`. The conversation itself never goes to the log: a model answer is logged by the
 * tool calls it asks for and its token counts, a tool call by its name, outcome and duration.
 */
import type { StreamEvent } from '../engine/index.js';
import type { Logger } from './logger.js';

export class RunLog {
  private readonly runs = new Map<string, Logger>();

  constructor(private readonly logger: Logger) {}

  record(event: StreamEvent): void {
    if (!('runId' in event)) {
      if (event.type === 'config.reloaded')
        this.logger.info({ applied: event.applied, restartRequired: event.restartRequired }, 'config reloaded');
      else if (event.type === 'limits.changed')
        this.logger.info(
          { maxRunsGlobal: event.max_runs_global, maxRunsPerAgent: event.max_runs_per_agent },
          'limits changed',
        );
      return;
    }
    const log = this.loggerOf(event.runId, event.sessionId);
    switch (event.type) {
      case 'run.queued':
        return log.debug({ position: event.position, reason: event.reason }, 'run queued');
      case 'run.started':
        return log.info(
          { agentId: event.agentId, model: event.model, parentRunId: event.parentRunId, traceId: event.traceId },
          'run started',
        );
      case 'run.steered':
        return log.info({ steerId: event.steerId, consumedAtTurn: event.consumedAtTurn }, 'steer joined the run');
      case 'turn.started':
        return log.debug({ turn: event.turn }, 'model turn started');
      case 'model.message':
        return log.debug(
          {
            turn: event.turn,
            toolCalls: event.toolCalls.map((call) => call.name),
            finishReason: event.finishReason,
            usage: event.usage && {
              input: event.usage.inputTokens,
              output: event.usage.outputTokens,
              cached: event.usage.cachedTokens,
            },
          },
          'model answered',
        );
      case 'run.retrying':
        return log.warn({ attempt: event.attempt, reason: event.reason }, 'model request retried');
      case 'tool.scheduled':
        return log.debug(
          { turn: event.turn, mode: event.mode, calls: event.claims.length, groups: event.groups.length },
          'tool batch scheduled',
        );
      case 'tool.started':
        return log.debug({ callId: event.callId, tool: event.tool }, 'tool call started');
      case 'tool.finished':
        if (event.ok) return log.debug({ callId: event.callId, durationMs: event.durationMs }, 'tool call finished');
        return log.info(
          { callId: event.callId, error: event.error, durationMs: event.durationMs, synthetic: event.synthetic },
          'tool call failed',
        );
      case 'approval.requested':
        return log.info({ approvalId: event.approvalId, callId: event.callId }, 'approval requested');
      case 'approval.resolved':
        return log.info({ approvalId: event.approvalId, decision: event.decision, by: event.by }, 'approval resolved');
      case 'sandbox.warning':
        return log.warn({ warning: event.message }, 'command ran without a sandbox');
      case 'run.completed':
        this.runs.delete(event.runId);
        return log.info(
          { turns: event.usage.turns, toolCalls: event.toolCalls, denied: event.denied?.length },
          'run completed',
        );
      case 'run.cancelled':
        this.runs.delete(event.runId);
        return log.info({ reason: event.reason }, 'run cancelled');
      case 'run.failed':
        this.runs.delete(event.runId);
        return log.warn({ error: event.error }, 'run failed');
      default:
        return;
    }
  }

  private loggerOf(runId: string, sessionId: string): Logger {
    let log = this.runs.get(runId);
    if (!log) {
      log = this.logger.child({ runId, sessionId });
      this.runs.set(runId, log);
    }
    return log;
  }
}
