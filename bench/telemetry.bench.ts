/**
 * What telemetry costs: admission throughput (2,000 runs across 200 sessions on an instant
 * scripted model, as in admission.bench.ts) with telemetry off, with Prometheus metrics on,
 * with metrics and traces on (spans exported as OTLP/HTTP to a collector stub in this
 * process, so their serialization is paid here too), and with all of that plus info-level JSON
 * logs, in the same run: the best of several rounds, each running every variant, in an order
 * that rotates from round to round so no variant always follows the same one. Throughput is
 * counted per second of this process's CPU time (user + system, GC included), which a machine
 * shared with other work disturbs far less than wall-clock time.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEngine } from '../src/engine/index.js';
import { scriptedModel } from '../src/model/index.js';
import { MemoryStore } from '../src/store/index.js';
import { createLogger, startTelemetry, type TelemetryOptions } from '../src/telemetry/index.js';
import type { BenchFigure, Benchmark } from './types.js';

const RUNS = 2_000;
const SESSIONS = 200;
const ROUNDS = 8;

type Variant = 'off' | 'metrics' | 'traces' | 'logs';

/** CPU milliseconds the process spent admitting and running RUNS runs. */
async function cpuMs(variant: Variant, collectorUrl: string): Promise<number> {
  const options: TelemetryOptions = {
    telemetry: {
      metrics: true,
      ...(variant === 'traces' || variant === 'logs' ? { otlp_endpoint: collectorUrl } : {}),
    },
    ...(variant === 'logs' ? { logger: await createLogger({ level: 'info', env: {}, write: () => {} }) } : {}),
  };
  const telemetry = variant === 'off' ? undefined : await startTelemetry(options);
  const store = new MemoryStore();
  const engine = await createEngine({
    models: { scripted: scriptedModel([{ text: 'ok' }]) },
    config: {
      execution: { max_runs_global: 8, max_runs_per_agent: 8, wait_lane_capacity: RUNS, busy_policy: 'queue' },
    },
    store: telemetry ? telemetry.instrumentStore(store) : store,
    ...(telemetry ? { observer: telemetry.observer } : {}),
  });
  await telemetry?.attach(engine);
  const started = process.cpuUsage();
  const submitted = [];
  for (let i = 0; i < RUNS; i++) {
    submitted.push(await engine.submit({ sessionId: `s${i % SESSIONS}`, agentId: `a${i % 4}`, input: `message ${i}` }));
  }
  await Promise.all(submitted.map((s) => engine.wait(s.runId)));
  const { user, system } = process.cpuUsage(started);
  const elapsed = (user + system) / 1000;
  await engine.close();
  await telemetry?.close();
  return elapsed;
}

const benchmark: Benchmark = async () => {
  let spansReceived = 0;
  const collector = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      spansReceived += 1;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  const variants: Variant[] = ['off', 'metrics', 'traces', 'logs'];
  const best: Record<Variant, number> = { off: Infinity, metrics: Infinity, traces: Infinity, logs: Infinity };
  try {
    for (const variant of variants) await cpuMs(variant, collectorUrl);
    for (let round = 0; round < ROUNDS; round++) {
      const order = [...variants.slice(round % variants.length), ...variants.slice(0, round % variants.length)];
      for (const variant of order) best[variant] = Math.min(best[variant], await cpuMs(variant, collectorUrl));
    }
  } finally {
    collector.close();
  }
  const rate = (variant: Variant) => (RUNS / best[variant]) * 1000;
  const figure = (variant: Variant, label: string): BenchFigure => ({
    figure: `telemetry: runs per CPU second with ${label}`,
    value: rate(variant),
    unit: 'runs/cpu-s',
    baseline: rate('off'),
    ratio: rate(variant) / rate('off'),
  });
  return [
    { figure: 'telemetry: runs per CPU second with telemetry off', value: rate('off'), unit: 'runs/cpu-s' },
    figure('metrics', 'metrics on'),
    {
      ...figure('traces', 'metrics and traces on (OTLP/HTTP)'),
      note: `${spansReceived} OTLP export requests reached the collector stub`,
    },
    figure('logs', 'metrics, traces and info logs on'),
  ];
};

export default benchmark;
