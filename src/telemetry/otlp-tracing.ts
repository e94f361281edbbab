/*
 * The OpenTelemetry SDK and its OTLP/HTTP exporter, loaded only when `[telemetry]
 * otlp_endpoint` is set: a process without it never imports them. Spans leave in batches, in
 * the background, as OTLP JSON; close() sends what is left.
 */
import type { TracerProvider } from '@opentelemetry/api';

export interface OtlpTracing {
  provider: TracerProvider;
  /** Exports the spans still buffered, then stops. */
  close(): Promise<void>;
}

/** A collector's base URL (http://host:4318) gets the traces path; a full traces URL stays as it is. */
export function tracesUrlOf(endpoint: string): string {
  const url = new URL(endpoint);
  if (!url.pathname.endsWith('/v1/traces')) url.pathname = `${url.pathname.replace(/\/$/, '')}/v1/traces`;
  return url.toString();
}

export async function startOtlpTracing(options: { endpoint: string; serviceName: string }): Promise<OtlpTracing> {
  const [{ TracerProvider: SdkTracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] =
    await Promise.all([
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
    ]);
  const provider = new SdkTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: tracesUrlOf(options.endpoint) }) }),
    ],
  });
  return { provider, close: () => provider.shutdown() };
}
