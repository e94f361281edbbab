/*
 * Spans of runs, model turns and tool calls, following the OpenTelemetry GenAI semantic
 * conventions: a run is an `invoke_agent` span, each model turn a `chat` span and each tool
 * call an `execute_tool` span, both children of their run's span. The run's span is opened by
 * the engine observer when the run starts (so its trace id can go into `run.started`, and a
 * caller's `traceparent` or a delegating run can be its parent); everything else comes from the
 * event stream, timed by the events' own `at`, so a span's times are the engine's, not the
 * moment the stream was read.
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapGetter,
  trace,
  type Attributes,
  type Context,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  ATTR_ERROR_TYPE,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
} from '@opentelemetry/semantic-conventions/incubating';
import type { Config } from '../config/index.js';
import type { EngineObserver, RunEventOf, RunStart, StreamEvent } from '../engine/index.js';
import type { TokenUsage } from '../core/model-usage.js';
import { SWITCHYARD_ATTRIBUTES } from './span-attributes.js';

/** The provider kinds of `[models.<id>] kind`, as gen_ai.provider.name spells them. */
const PROVIDER_NAMES: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  google: 'gcp.gemini',
  scripted: 'switchyard.scripted',
};

interface CallSpan {
  tool: string;
  claim?: string;
  group?: number;
  scheduledAt: number;
  span?: Span;
}

interface TracedRun {
  span: Span;
  context: Context;
  model: { provider: string; name: string };
  conversationId: string;
  turn?: { span: Span; turn: number };
  calls: Map<string, CallSpan>;
}

export class RunTracer {
  private readonly tracer: Tracer;
  private readonly propagator = new W3CTraceContextPropagator();
  private readonly runs = new Map<string, TracedRun>();

  constructor(
    provider: TracerProvider,
    /** `[models]`: which kind of provider each model id is. */
    private readonly models: Config['models'],
  ) {
    this.tracer = provider.getTracer('switchyard');
  }

  /** The engine observer's half: opens the run's span when the run starts. */
  readonly observer: Pick<EngineObserver, 'runStarting'> = {
    runStarting: (run) => {
      try {
        return { traceId: this.openRun(run) };
      } catch {
        // Tracing never stops a run.
        return {};
      }
    },
  };

  record(event: StreamEvent): void {
    if (!('runId' in event)) return;
    const run = this.runs.get(event.runId);
    if (!run) return;
    const at = new Date(event.at);
    switch (event.type) {
      case 'turn.started':
        run.turn?.span.end(at);
        run.turn = { turn: event.turn, span: this.startChat(run, event.turn, at) };
        return;
      case 'model.message':
        return this.endChat(run, event, at);
      case 'tool.scheduled':
        return this.schedule(run, event, at);
      case 'tool.started': {
        const call = run.calls.get(event.callId);
        if (call) call.span = this.startTool(run, event.callId, call, at);
        return;
      }
      case 'tool.finished':
        return this.endTool(run, event, at);
      case 'run.completed':
      case 'run.cancelled':
      case 'run.failed':
        return this.endRun(run, event, at);
      default:
        return;
    }
  }

  /** Ends the spans of runs still open (the engine closed under them). */
  endAll(): void {
    const now = new Date();
    for (const run of this.runs.values()) {
      run.turn?.span.end(now);
      for (const call of run.calls.values()) call.span?.end(now);
      run.span.end(now);
    }
    this.runs.clear();
  }

  private openRun(run: RunStart): string {
    const model = this.modelOf(run.model);
    const parent = this.parentOf(run);
    const span = this.tracer.startSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${run.agentId}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: new Date(run.at),
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
          [ATTR_GEN_AI_AGENT_NAME]: run.agentId,
          [ATTR_GEN_AI_CONVERSATION_ID]: run.sessionId,
          [ATTR_GEN_AI_PROVIDER_NAME]: model.provider,
          [ATTR_GEN_AI_REQUEST_MODEL]: model.name,
          [SWITCHYARD_ATTRIBUTES.runId]: run.runId,
          [SWITCHYARD_ATTRIBUTES.sessionId]: run.sessionId,
          [SWITCHYARD_ATTRIBUTES.busyPolicy]: run.busyPolicy,
          ...(run.parentRunId !== undefined ? { [SWITCHYARD_ATTRIBUTES.parentRunId]: run.parentRunId } : {}),
        },
      },
      parent,
    );
    this.runs.set(run.runId, {
      span,
      context: trace.setSpan(ROOT_CONTEXT, span),
      model,
      conversationId: run.sessionId,
      calls: new Map(),
    });
    return span.spanContext().traceId;
  }

  /** A delegated run continues its parent run's trace; a caller's traceparent, the caller's. */
  private parentOf(run: RunStart): Context {
    const delegating = run.parentRunId !== undefined ? this.runs.get(run.parentRunId) : undefined;
    if (delegating) return delegating.context;
    if (run.traceparent === undefined) return ROOT_CONTEXT;
    return this.propagator.extract(ROOT_CONTEXT, { traceparent: run.traceparent }, defaultTextMapGetter);
  }

  /** "provider:model" or a bare provider id, as the provider kind and the model it asks for. */
  private modelOf(model: string): { provider: string; name: string } {
    const colon = model.indexOf(':');
    const id = colon < 0 ? model : model.slice(0, colon);
    const configured = this.models[id];
    const name = colon < 0 ? (configured?.model ?? id) : model.slice(colon + 1);
    return { provider: PROVIDER_NAMES[configured?.kind ?? id] ?? id, name };
  }

  private startChat(run: TracedRun, turn: number, at: Date): Span {
    return this.tracer.startSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_CHAT} ${run.model.name}`,
      {
        kind: SpanKind.CLIENT,
        startTime: at,
        attributes: {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
          [ATTR_GEN_AI_PROVIDER_NAME]: run.model.provider,
          [ATTR_GEN_AI_REQUEST_MODEL]: run.model.name,
          [ATTR_GEN_AI_CONVERSATION_ID]: run.conversationId,
          [SWITCHYARD_ATTRIBUTES.turn]: turn,
        },
      },
      run.context,
    );
  }

  private endChat(run: TracedRun, event: RunEventOf<'model.message'>, at: Date): void {
    const open = run.turn;
    if (!open || open.turn !== event.turn) return;
    if (event.finishReason !== undefined)
      open.span.setAttribute(ATTR_GEN_AI_RESPONSE_FINISH_REASONS, [event.finishReason]);
    if (event.usage) open.span.setAttributes(usageAttributes(event.usage));
    open.span.end(at);
    run.turn = undefined;
  }

  private schedule(run: TracedRun, event: RunEventOf<'tool.scheduled'>, at: Date): void {
    run.calls = new Map(
      event.claims.map((claim, index) => [
        claim.callId,
        {
          tool: claim.tool,
          claim: claim.label,
          group: event.groups.findIndex(([start, end]) => index >= start && index < end),
          scheduledAt: at.getTime(),
        },
      ]),
    );
  }

  private startTool(run: TracedRun, callId: string, call: CallSpan, at: Date): Span {
    const attributes: Attributes = {
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [ATTR_GEN_AI_TOOL_NAME]: call.tool,
      [ATTR_GEN_AI_TOOL_CALL_ID]: callId,
      [ATTR_GEN_AI_TOOL_TYPE]: 'function',
      [SWITCHYARD_ATTRIBUTES.waitMs]: Math.max(0, at.getTime() - call.scheduledAt),
      ...(call.claim !== undefined ? { [SWITCHYARD_ATTRIBUTES.claim]: call.claim } : {}),
      ...(call.group !== undefined && call.group >= 0 ? { [SWITCHYARD_ATTRIBUTES.group]: call.group } : {}),
    };
    return this.tracer.startSpan(
      `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${call.tool}`,
      { kind: SpanKind.INTERNAL, startTime: at, attributes },
      run.context,
    );
  }

  private endTool(run: TracedRun, event: RunEventOf<'tool.finished'>, at: Date): void {
    const span = run.calls.get(event.callId)?.span;
    run.calls.delete(event.callId);
    if (!span) return;
    span.setAttribute(SWITCHYARD_ATTRIBUTES.toolOutcome, event.ok ? 'ok' : (event.error?.code ?? 'error'));
    if (event.synthetic) span.setAttribute(SWITCHYARD_ATTRIBUTES.synthetic, true);
    if (!event.ok) {
      span.setAttribute(ATTR_ERROR_TYPE, event.error?.code ?? 'error');
      span.setStatus({ code: SpanStatusCode.ERROR, ...(event.error ? { message: event.error.message } : {}) });
    }
    span.end(at);
  }

  private endRun(run: TracedRun, event: RunEventOf<'run.completed' | 'run.cancelled' | 'run.failed'>, at: Date): void {
    this.runs.delete(event.runId);
    const state = event.type.slice('run.'.length);
    const error = event.type === 'run.failed' ? event.error : undefined;
    // A turn still open when the run ends is the turn that ended it (a model error, a cancel).
    if (run.turn) {
      if (error) run.turn.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      run.turn.span.end(at);
    }
    for (const call of run.calls.values()) call.span?.end(at);
    const code = event.type === 'run.completed' ? 'ok' : event.type === 'run.failed' ? event.error.code : event.reason;
    run.span.setAttributes({ [SWITCHYARD_ATTRIBUTES.outcome]: state, [SWITCHYARD_ATTRIBUTES.outcomeCode]: code });
    if (event.type === 'run.completed') {
      const { turns: _turns, ...usage } = event.usage;
      if (usage.inputTokens !== undefined && usage.outputTokens !== undefined)
        run.span.setAttributes(usageAttributes(usage as TokenUsage));
    }
    if (error) {
      run.span.setAttribute(ATTR_ERROR_TYPE, error.code);
      run.span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    }
    run.span.end(at);
  }
}

function usageAttributes(usage: TokenUsage): Attributes {
  return {
    [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: usage.inputTokens,
    [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: usage.outputTokens,
    ...(usage.cachedTokens !== undefined ? { [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: usage.cachedTokens } : {}),
  };
}
