/**
 * Gateway fan-out: events per second delivered to 50 WebSocket clients subscribed to all runs
 * (`events.subscribe {}`) while an engine publishes the events of many instant scripted runs —
 * against a raw `ws` broadcast of the same frames (one engine event stream, each event
 * serialized once, sent to 50 plain ws clients), driven by the same workload in the same run.
 * Both sides pay the engine's production; the difference is what the gateway adds
 * (per-connection subscriptions, backpressure, per-connection serialization).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket, { WebSocketServer } from 'ws';
import { createEngine, type Engine } from '../src/engine/index.js';
import { startGateway } from '../src/gateway/index.js';
import { notificationFrame, toJson } from '../src/gateway/protocol.js';
import { scriptedModel } from '../src/model/index.js';
import type { BenchFigure, Benchmark } from './types.js';

const CLIENTS = 50;
const RUNS = 300;
const SESSIONS = 100;
const ROUNDS = 3;
const EVENT_PREFIX = Buffer.from('{"jsonrpc":"2.0","method":"event"');

interface Round {
  ms: number;
  events: number;
}

/** A client that counts event notifications and remembers when it got the last one. */
class CountingClient {
  count = 0;
  lastAt = 0;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      if (
        data.length >= EVENT_PREFIX.length &&
        data.compare(EVENT_PREFIX, 0, EVENT_PREFIX.length, 0, EVENT_PREFIX.length) === 0
      ) {
        this.count += 1;
        this.lastAt = performance.now();
      }
    });
  }

  static async open(url: string, headers: Record<string, string> = {}): Promise<CountingClient> {
    const ws = new WebSocket(url, { headers, perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return new CountingClient(ws);
  }
}

function engineOf(): Promise<Engine> {
  return createEngine({
    models: { scripted: scriptedModel([{ text: 'ok' }]) },
    config: {
      execution: { max_runs_global: 8, max_runs_per_agent: 8, wait_lane_capacity: RUNS, busy_policy: 'queue' },
    },
  });
}

/** Publishes the workload; resolves with the number of events the engine streamed, once every client has all of them. */
async function publish(engine: Engine, clients: CountingClient[]): Promise<Round> {
  const stream = engine.events({});
  let events = 0;
  const counting = (async () => {
    for await (const _event of stream) events += 1;
  })();
  const started = performance.now();
  const submitted = [];
  for (let i = 0; i < RUNS; i++)
    submitted.push(await engine.submit({ sessionId: `s${i % SESSIONS}`, input: `message ${i}` }));
  await Promise.all(submitted.map((s) => engine.wait(s.runId)));
  // Every event is out once each client holds as many as the engine streamed, and that stays so.
  let stableSince = performance.now();
  let seen = -1;
  while (performance.now() - stableSince < 50) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const snapshot = events + clients.reduce((n, c) => n + c.count, 0);
    if (snapshot !== seen || clients.some((c) => c.count !== events)) {
      seen = snapshot;
      stableSince = performance.now();
    }
  }
  stream.close();
  await counting;
  return { ms: Math.max(...clients.map((c) => c.lastAt)) - started, events };
}

async function gatewayRound(): Promise<Round> {
  const dataDir = await mkdtemp(join(tmpdir(), 'switchyard-bench-gateway-'));
  const engine = await engineOf();
  const gateway = await startGateway({ engine, port: 0, dataDir, heartbeatMs: 0, logger: { warn: () => {} } });
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, () =>
      CountingClient.open(gateway.url, { Authorization: `Bearer ${gateway.token}` }),
    ),
  );
  await Promise.all(
    clients.map(
      (client, i) =>
        new Promise<void>((resolve) => {
          const onAnswer = (data: Buffer) => {
            if (!data.toString().includes('"subscriptionId"')) return;
            client.ws.off('message', onAnswer);
            resolve();
          };
          client.ws.on('message', onAnswer);
          client.ws.send(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'events.subscribe', params: {} }));
        }),
    ),
  );
  const round = await publish(engine, clients);
  for (const client of clients) client.ws.terminate();
  await gateway.close();
  await engine.close();
  await rm(dataDir, { recursive: true, force: true });
  return round;
}

async function rawRound(): Promise<Round> {
  const engine = await engineOf();
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  wss.on('connection', (ws) => sockets.push(ws));
  const { port } = wss.address() as { port: number };
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, () => CountingClient.open(`ws://127.0.0.1:${port}`)),
  );
  while (sockets.length < CLIENTS) await new Promise((resolve) => setImmediate(resolve));
  const source = engine.events({});
  const broadcasting = (async () => {
    for await (const event of source) {
      const frame = notificationFrame('event', `{"subscriptionId":"sub-1","event":${toJson(event)}}`);
      for (const ws of sockets) ws.send(frame);
    }
  })();
  const round = await publish(engine, clients);
  source.close();
  await broadcasting;
  for (const client of clients) client.ws.terminate();
  await new Promise<void>((resolve) => wss.close(() => resolve()));
  await engine.close();
  return round;
}

const rate = ({ ms, events }: Round) => (events * CLIENTS * 1000) / ms;

const benchmark: Benchmark = async () => {
  await gatewayRound();
  await rawRound();
  let gatewayBest: Round | undefined;
  let rawBest: Round | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const g = await gatewayRound();
    const r = await rawRound();
    if (!gatewayBest || rate(g) > rate(gatewayBest)) gatewayBest = g;
    if (!rawBest || rate(r) > rate(rawBest)) rawBest = r;
  }
  const gatewayRate = rate(gatewayBest!);
  const rawRate = rate(rawBest!);
  const figures: BenchFigure[] = [
    {
      figure: `gateway: events/s delivered to ${CLIENTS} subscribed clients (${RUNS} runs)`,
      value: gatewayRate,
      unit: 'events/s',
      baseline: rawRate,
      ratio: gatewayRate / rawRate,
      target: '>= 0.5',
      note:
        `${gatewayBest!.events} events × ${CLIENTS} clients in ${gatewayBest!.ms.toFixed(0)} ms; raw ws ` +
        `broadcast of the same frames: ${rawBest!.events} × ${CLIENTS} in ${rawBest!.ms.toFixed(0)} ms ` +
        `(best of ${ROUNDS})`,
    },
  ];
  return figures;
};

export default benchmark;
