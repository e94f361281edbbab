/*
 * startTelemetry(): the metrics, traces and run logs of one engine, each optional, fed from one
 * reader of engine.events({}) plus the engine observer. Off, a part costs nothing: without
 * metrics no registry exists and the store is not wrapped; without tracing the OpenTelemetry
 * SDK is never loaded and the observer opens no span.
 *
 *   const telemetry = await startTelemetry({ telemetry: config.telemetry, models: config.models, logger });
 *   const engine = await createEngine({ store: telemetry.instrumentStore(store), observer: telemetry.observer });
 *   await telemetry.attach(engine, { store });
 */
import type { TracerProvider } from '@opentelemetry/api';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import type { Config } from '../config/index.js';
import type { Engine, EngineObserver, EventStream, StreamEvent } from '../engine/index.js';
import type { GatewayStats } from '../gateway/index.js';
import type { Store } from '../store/index.js';
import { commandVerdictCounter } from './command-verdicts.js';
import { registerEngineGauges } from './engine-gauges.js';
import { EventMetrics } from './event-metrics.js';
import { registerGatewayGauges } from './gateway-gauges.js';
import type { Logger } from './logger.js';
import { createMetricsRegistry, metricsRoute } from './metrics-registry.js';
import { startOtlpTracing } from './otlp-tracing.js';
import { RunLog } from './run-log.js';
import type { RunTracer } from './run-tracer.js';
import { timedStore } from './store-timing.js';

export interface TelemetryOptions {
  /** `[telemetry]`: `metrics` (default on) and `otlp_endpoint` (default unset: no tracing) decide what is on. */
  telemetry?: Partial<Pick<Config['telemetry'], 'metrics' | 'otlp_endpoint' | 'service_name'>>;
  /** `[models]` of the config, to name each run's model provider in its spans. */
  models?: Config['models'];
  /** Spans go here instead of an OTLP exporter (an SDK the host set up, an in-memory exporter in tests). */
  tracerProvider?: TracerProvider;
  /** Where the runs' log lines go; without it runs are not logged. */
  logger?: Logger;
}

export interface Telemetry {
  /** For createEngine({ observer }). */
  readonly observer: Partial<EngineObserver>;
  /** The Prometheus registry, when metrics are on. */
  readonly registry?: Registry;
  /** The `GET /metrics` handler, when metrics are on. */
  readonly metricsRoute?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** The store to hand to createEngine: its appends timed when metrics are on. */
  instrumentStore(store: Store): Store;
  /**
   * Starts reading the engine's events and figures. With the engine's store, runs already
   * queued (before the reader started) are counted as waiting too.
   */
  attach(engine: Engine, options?: { store?: Pick<Store, 'listRuns'> }): Promise<void>;
  /** Adds the gateway's connection figures to the metrics. */
  attachGateway(stats: () => GatewayStats): void;
  /** Stops reading, ends the spans still open and sends the ones not yet exported. */
  close(): Promise<void>;
}

export async function startTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  const registry = (options.telemetry?.metrics ?? true) ? createMetricsRegistry() : undefined;
  const tracing = await tracingOf(options);
  const tracer: RunTracer | undefined = tracing
    ? new (await import('./run-tracer.js')).RunTracer(tracing.provider, options.models ?? {})
    : undefined;
  const runLog = options.logger ? new RunLog(options.logger) : undefined;
  let metrics: EventMetrics | undefined;
  let stream: EventStream | undefined;
  let reading: Promise<void> | undefined;

  const record = (event: StreamEvent) => {
    for (const part of [metrics, tracer, runLog]) {
      try {
        part?.record(event);
      } catch (error) {
        options.logger?.error({ err: error }, 'telemetry could not record an event');
      }
    }
  };

  return {
    observer: {
      ...(tracer ? tracer.observer : {}),
      ...(registry ? { commandJudged: commandVerdictCounter(registry) } : {}),
    },
    ...(registry ? { registry, metricsRoute: metricsRoute(registry) } : {}),
    instrumentStore: (store) => (registry ? timedStore(store, registry) : store),
    async attach(engine, attachOptions = {}) {
      if (!registry && !tracer && !runLog) return;
      if (registry) {
        metrics = new EventMetrics({ registry, agentOf: (runId) => engine.status(runId)?.agentId });
        registerEngineGauges(registry, engine);
      }
      stream = engine.events({});
      const events = stream;
      reading = (async () => {
        for await (const event of events) record(event);
      })();
      // Opened after the stream: a run that starts from now on is seen starting, whatever the order.
      if (metrics && attachOptions.store) {
        for (const run of await attachOptions.store.listRuns(['queued'])) {
          const status = engine.status(run.runId);
          if (status?.state === 'queued')
            metrics.seedWaiting(run.runId, status.agentId, status.queuedFor ?? 'session_busy');
        }
      }
    },
    attachGateway(stats) {
      if (registry) registerGatewayGauges(registry, stats);
    },
    async close() {
      stream?.close();
      await reading;
      tracer?.endAll();
      await tracing?.close();
    },
  };
}

interface Tracing {
  provider: TracerProvider;
  close(): Promise<void>;
}

async function tracingOf(options: TelemetryOptions): Promise<Tracing | undefined> {
  if (options.tracerProvider) return { provider: options.tracerProvider, close: async () => {} };
  const endpoint = options.telemetry?.otlp_endpoint;
  if (endpoint === undefined) return undefined;
  return startOtlpTracing({ endpoint, serviceName: options.telemetry?.service_name ?? 'switchyard' });
}
