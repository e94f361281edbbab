/*
 * Renders run events as a readable timeline, one line per event: time since start, session,
 * a short run label, and what happened.
 */
import type { StreamEvent } from '../core/run-events.js';

export interface TimelineOptions {
  /** Milliseconds of the first event; times are shown relative to it. */
  startedAt?: number;
  color?: boolean;
}

const COLORS: Record<string, string> = {
  'run.completed': '32',
  'run.failed': '31',
  'run.cancelled': '33',
  'run.steered': '36',
  'run.queued': '90',
  'run.started': '1',
};

export class Timeline {
  private readonly labels = new Map<string, string>();
  private startedAt: number | undefined;

  constructor(private readonly options: TimelineOptions = {}) {
    this.startedAt = options.startedAt;
  }

  /** One line for the event, or undefined for events not worth a line (text deltas). */
  format(event: StreamEvent): string | undefined {
    if (event.type === 'model.delta') return undefined;
    const at = Date.parse(event.at);
    this.startedAt ??= at;
    const time = `+${((at - this.startedAt) / 1000).toFixed(3)}s`.padStart(9);
    if (!('runId' in event)) return `${time}  ${'engine'.padEnd(18)} ${event.type} ${describe(event)}`;
    const who = `${event.sessionId.slice(0, 8).padEnd(8)} ${this.label(event.runId).padEnd(9)}`;
    const line = `${time}  ${who} ${event.type.padEnd(14)} ${describe(event)}`.trimEnd();
    const color = COLORS[event.type];
    return this.options.color && color ? `\x1b[${color}m${line}\x1b[0m` : line;
  }

  label(runId: string): string {
    let label = this.labels.get(runId);
    if (!label) {
      label = `run#${this.labels.size + 1}`;
      this.labels.set(runId, label);
    }
    return label;
  }
}

function describe(event: StreamEvent): string {
  switch (event.type) {
    case 'run.queued':
      return `position ${event.position} (${event.reason === 'limits' ? 'waiting for a permit' : 'session busy'})`;
    case 'run.started':
      return `agent ${event.agentId}, model ${event.model}`;
    case 'run.steered':
      return `"${clip(event.text)}" -> seen at turn ${event.consumedAtTurn ?? '?'}`;
    case 'turn.started':
    case 'turn.finished':
      return `turn ${event.turn}`;
    case 'model.message':
      return event.toolCalls.length > 0
        ? `calls ${event.toolCalls.map((c) => `${c.name}(${clip(JSON.stringify(c.args), 30)})`).join(', ')}`
        : `"${clip(event.text)}"`;
    case 'run.steer_escalated':
      return `steer ${event.steerId} not read in time -> ${event.to}`;
    case 'tool.waiting':
      return `[${event.callId}] waits for ${event.blockedBy.tool} of run ${event.blockedBy.runId} (${event.resource})`;
    case 'tool.started':
      return `${event.tool} [${event.callId}]`;
    case 'tool.finished':
      return `[${event.callId}] ${event.ok ? 'ok' : `error ${event.error?.code}`} in ${event.durationMs} ms${event.synthetic ? ' (synthetic)' : ''}`;
    case 'tool.scheduled':
      return `groups ${event.groups.map(([a, b]) => `[${a},${b})`).join(' ')}`;
    case 'run.completed':
      return `"${clip(event.output)}" after ${event.usage.turns} turn(s), ${event.toolCalls} tool call(s)`;
    case 'run.cancelled':
      return `reason: ${event.reason}`;
    case 'run.failed':
      return `${event.error.code}: ${event.error.message}`;
    case 'engine.running':
      return `running: ${event.running.length}`;
    case 'limits.changed':
      return `global ${event.max_runs_global}, per agent ${event.max_runs_per_agent}`;
    default:
      return '';
  }
}

function clip(text: string, max = 48): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
