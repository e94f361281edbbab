/*
 * The Prometheus registries and the `GET /metrics` handler. prom-client's default process
 * metrics (CPU, memory, GC, event-loop lag), named `switchyard_process_*` and
 * `switchyard_nodejs_*`, watch the process, not an engine: they are collected once per
 * process, into a registry of their own that every /metrics answer includes, so a process
 * that starts telemetry again (tests, benchmarks) does not stack up GC and event-loop monitors.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry, collectDefaultMetrics } from 'prom-client';

let processRegistry: Registry | undefined;

/** The process metrics, started on first use. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'switchyard_' });
  }
  return processRegistry;
}

/** A registry for one engine's metrics. */
export function createMetricsRegistry(): Registry {
  processMetrics();
  return new Registry();
}

/** Answers GET (and HEAD) with the engine's metrics and the process's, in the Prometheus text format. */
export function metricsRoute(registry: Registry): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    const body = (await Promise.all([registry.metrics(), processMetrics().metrics()])).join('');
    res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
