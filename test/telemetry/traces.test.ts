/*
 * The spans of runs, through the OpenTelemetry SDK into an in-memory exporter: the tree of a
 * run with a tool batch (an invoke_agent span, chat spans per turn and execute_tool spans per
 * call under it, with the GenAI attributes), the trace id in run.started, a caller's
 * traceparent becoming the run's parent, a delegated run under its parent run, and the OTLP
 * path to a real HTTP collector when `[telemetry] otlp_endpoint` is set.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/index.js';
import type { RunEventOf } from '../../src/engine/index.js';
import { startTelemetry, type TelemetryOptions } from '../../src/telemetry/index.js';
import { engineFixture } from '../engine/fixtures.js';
import { brokenTool, lookupTool, meteredModel, USAGE } from './fixtures.js';

const makeEngine = engineFixture();

const MODELS: Config['models'] = { metered: { kind: 'scripted', model: 'metered-v1', max_retry_wait_seconds: 60 } };

const FIRST_TURNS = {
  tools: {
    toolCalls: [
      { name: 'lookup', args: { key: 'a' } },
      { name: 'lookup', args: { key: 'b' } },
      { name: 'broken', args: {} },
    ],
  },
  delegate: { toolCalls: [{ name: 'session_send', args: { session: 'helper', message: 'help me' } }] },
} as const;

async function tracedEngine(options: TelemetryOptions = {}) {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const telemetry = await startTelemetry({ telemetry: { metrics: false }, models: MODELS, tracerProvider, ...options });
  const engine = await makeEngine({
    observer: telemetry.observer,
    models: {
      metered: meteredModel((input) => FIRST_TURNS[input as keyof typeof FIRST_TURNS] ?? { text: 'plain answer' }),
    },
    tools: [lookupTool, brokenTool],
    config: { execution: { default_model: 'metered' } },
  });
  await telemetry.attach(engine);
  return { engine, telemetry, exporter };
}

/** Every span of the run is exported: its own span ends last, with its terminal event. */
async function finishedSpans(
  telemetry: { close(): Promise<void> },
  exporter: InMemorySpanExporter,
): Promise<ReadableSpan[]> {
  await telemetry.close();
  return exporter.getFinishedSpans();
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('traces', () => {
  it('a run with a tool batch: invoke_agent over chat and execute_tool spans, with GenAI attributes', async () => {
    const { engine, telemetry, exporter } = await tracedEngine();
    const { runId } = await engine.submit({ sessionId: 'traced', input: 'tools' });
    expect(await engine.wait(runId)).toMatchObject({ state: 'completed' });
    const history = await engine.history(runId);
    const spans = await finishedSpans(telemetry, exporter);

    const run = spans.filter((s) => s.name === 'invoke_agent main');
    expect(run).toHaveLength(1);
    const root = run[0]!;
    expect(parentOf(root)).toBeUndefined();
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'main',
      'gen_ai.conversation.id': 'traced',
      'gen_ai.provider.name': 'switchyard.scripted',
      'gen_ai.request.model': 'metered-v1',
      'gen_ai.usage.input_tokens': USAGE.inputTokens * 2,
      'gen_ai.usage.output_tokens': USAGE.outputTokens * 2,
      'switchyard.run.id': runId,
      'switchyard.session.id': 'traced',
      'switchyard.busy_policy': 'steer',
      'switchyard.run.outcome': 'completed',
      'switchyard.run.outcome_code': 'ok',
    });
    const started = history.find((e): e is RunEventOf<'run.started'> => e.type === 'run.started')!;
    expect(started.traceId).toBe(root.spanContext().traceId);
    expect(spans.every((s) => s.spanContext().traceId === started.traceId)).toBe(true);

    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    expect(
      chats.map((s) => [
        s.name,
        parentOf(s),
        s.attributes['switchyard.turn'],
        s.attributes['gen_ai.response.finish_reasons'],
      ]),
    ).toEqual([
      ['chat metered-v1', root.spanContext().spanId, 0, ['tool_calls']],
      ['chat metered-v1', root.spanContext().spanId, 1, ['stop']],
    ]);
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({
        'gen_ai.request.model': 'metered-v1',
        'gen_ai.provider.name': 'switchyard.scripted',
        'gen_ai.usage.input_tokens': USAGE.inputTokens,
        'gen_ai.usage.output_tokens': USAGE.outputTokens,
        'gen_ai.usage.cache_read.input_tokens': USAGE.cachedTokens,
      });
    }

    const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
    const scheduled = history.find((e): e is RunEventOf<'tool.scheduled'> => e.type === 'tool.scheduled')!;
    expect(tools.map((s) => s.attributes['gen_ai.tool.call.id']).sort()).toEqual(['call_0', 'call_1', 'call_2']);
    for (const span of tools) {
      const index = scheduled.claims.findIndex((c) => c.callId === span.attributes['gen_ai.tool.call.id']);
      expect(parentOf(span)).toBe(root.spanContext().spanId);
      expect(span.name).toBe(`execute_tool ${scheduled.claims[index]!.tool}`);
      expect(span.attributes).toMatchObject({
        'gen_ai.tool.name': scheduled.claims[index]!.tool,
        'gen_ai.tool.type': 'function',
        'switchyard.tool.claim': scheduled.claims[index]!.label,
        // Three read-only calls: one group.
        'switchyard.tool.group': 0,
      });
      expect(span.attributes['switchyard.tool.wait_ms']).toBeGreaterThanOrEqual(0);
    }
    const broken = tools.find((s) => s.name === 'execute_tool broken')!;
    expect(broken.status).toMatchObject({ code: 2, message: 'the lookup service is down' });
    expect(broken.attributes['error.type']).toBe('lookup_failed');
    expect(tools.filter((s) => s.status.code === 2)).toEqual([broken]);

    // Children lie within their run.
    const ms = ([s, ns]: [number, number]) => s * 1000 + ns / 1e6;
    for (const child of [...chats, ...tools]) {
      expect(ms(child.startTime)).toBeGreaterThanOrEqual(ms(root.startTime));
      expect(ms(child.endTime)).toBeLessThanOrEqual(ms(root.endTime));
    }
    expect(spans).toHaveLength(1 + 2 + 3);
  });

  it('a traceparent on submit becomes the parent of the run span', async () => {
    const { engine, telemetry, exporter } = await tracedEngine();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentSpanId = '00f067aa0ba902b7';
    const { runId } = await engine.submit({
      sessionId: 'caller',
      input: 'hello',
      traceparent: `00-${traceId}-${parentSpanId}-01`,
    });
    await engine.wait(runId);
    const history = await engine.history(runId);
    const spans = await finishedSpans(telemetry, exporter);
    const root = spans.find((s) => s.name === 'invoke_agent main')!;
    expect(root.spanContext().traceId).toBe(traceId);
    expect(root.parentSpanContext).toMatchObject({ traceId, spanId: parentSpanId, isRemote: true });
    expect(history.find((e) => e.type === 'run.started')).toMatchObject({ traceId });
    expect(spans.every((s) => s.spanContext().traceId === traceId)).toBe(true);
  });

  it('a traceparent that is not one is refused at submit, naming the field', async () => {
    const { engine, telemetry } = await tracedEngine();
    await expect(engine.submit({ sessionId: 'caller', input: 'x', traceparent: 'not-a-trace' })).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('traceparent: must be a W3C traceparent'),
    });
    await telemetry.close();
  });

  it('a delegated run (session_send) is a child of the run that delegated it', async () => {
    const { engine, telemetry, exporter } = await tracedEngine();
    const { runId } = await engine.submit({ sessionId: 'lead', input: 'delegate' });
    expect(await engine.wait(runId)).toMatchObject({ state: 'completed' });
    const spans = await finishedSpans(telemetry, exporter);
    const runs = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'invoke_agent');
    const lead = runs.find((s) => s.attributes['switchyard.run.id'] === runId)!;
    const helper = runs.find((s) => s.attributes['gen_ai.conversation.id'] === 'helper')!;
    expect(parentOf(helper)).toBe(lead.spanContext().spanId);
    expect(helper.attributes['switchyard.parent_run.id']).toBe(runId);
    expect(helper.spanContext().traceId).toBe(lead.spanContext().traceId);
  });

  it('with tracing off, run.started carries no trace id', async () => {
    const telemetry = await startTelemetry({ telemetry: { metrics: false } });
    expect(telemetry.observer).toEqual({});
    const engine = await makeEngine({ observer: telemetry.observer });
    await telemetry.attach(engine);
    const { runId } = await engine.submit({ sessionId: 'plain', input: 'hi' });
    await engine.wait(runId);
    expect((await engine.history(runId)).find((e) => e.type === 'run.started')).not.toHaveProperty('traceId');
    await telemetry.close();
  });

  it('[telemetry] otlp_endpoint sends the spans to a collector as OTLP/HTTP', async () => {
    const received: { path: string; contentType: string; body: OtlpTraces }[] = [];
    const collector = createServer((req, res) => {
      void readBody(req).then((text) => {
        received.push({
          path: req.url ?? '',
          contentType: req.headers['content-type'] ?? '',
          body: JSON.parse(text) as OtlpTraces,
        });
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    try {
      const port = (collector.address() as AddressInfo).port;
      const telemetry = await startTelemetry({
        telemetry: { metrics: false, otlp_endpoint: `http://127.0.0.1:${port}`, service_name: 'switchyard-test' },
      });
      const engine = await makeEngine({ observer: telemetry.observer });
      await telemetry.attach(engine);
      const { runId } = await engine.submit({ sessionId: 'exported', input: 'hi' });
      await engine.wait(runId);
      await engine.history(runId);
      // close() exports what the batch processor still holds.
      await telemetry.close();
      expect(received.map((r) => r.path)).toEqual(['/v1/traces']);
      expect(received[0]!.contentType).toBe('application/json');
      const resource = received[0]!.body.resourceSpans[0]!;
      expect(resource.resource.attributes).toContainEqual({
        key: 'service.name',
        value: { stringValue: 'switchyard-test' },
      });
      const names = resource.scopeSpans.flatMap((scope) => scope.spans.map((s) => s.name));
      expect(names.sort()).toEqual(['chat scripted', 'invoke_agent main']);
    } finally {
      collector.close();
    }
  });
});

interface OtlpTraces {
  resourceSpans: {
    resource: { attributes: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { spans: { name: string }[] }[];
  }[];
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
