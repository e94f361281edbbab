/*
 * The Stately bridge against @statelyai/inspect's own pieces, offline: its inspector server
 * (createInspectorServer, no browser) on a loopback port and its WebSocket receiver connected
 * as the browser's page would be. What the receiver gets is what Stately's Inspector would
 * draw: each actor with its definition and parent, the events with their senders, the
 * snapshots in order.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import { createWebSocketReceiver } from '@statelyai/inspect';
import { createInspectorServer } from '@statelyai/inspect/server';
import type { Engine } from '../../src/engine/index.js';
import { actorIdOf } from '../../src/gateway/inspection/inspect-serialize.js';
import { startStatelyBridge, type StatelyBridgeOptions } from '../../src/gateway/inspection/stately-bridge.js';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, look, holdTool } from '../engine/fixtures.js';
import { until } from '../support/eventually.js';
import { RecordingClock } from '../support/recording-clock.js';

const engineOf = engineFixture();
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SECRET = 'sk-abcdefghijklmnopqrstuvwx';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The package's inspector server and a receiver connected as the browser would be. */
async function inspectorServer(port: number): Promise<{ received: StatelyInspectionEvent[] }> {
  const server = createInspectorServer({ port, autoOpen: false });
  const received: StatelyInspectionEvent[] = [];
  let open = false;
  const receiver = createWebSocketReceiver({ server: `ws://127.0.0.1:${port}` });
  const subscription = receiver.subscribe((event) => {
    if (event.type === ('probe' as string)) open = true;
    else received.push(event);
  });
  // The receiver says nothing when it is open: a probe relayed to it says so.
  const probe = new WebSocket(`ws://127.0.0.1:${port}`);
  await new Promise((resolve, reject) => probe.once('open', resolve).once('error', reject));
  await until(() => {
    if (!open) probe.send(JSON.stringify({ type: 'probe' }));
    return open;
  }, 'the receiver is connected');
  probe.close();
  cleanups.push(() => {
    subscription.unsubscribe();
    server.stop();
  });
  return { received };
}

async function bridgeTo(engine: Engine, port: number, options: Partial<StatelyBridgeOptions> = {}) {
  const lines: string[] = [];
  const bridge = await startStatelyBridge(engine, {
    url: `ws://127.0.0.1:${port}`,
    log: (level, line) => lines.push(`${level}: ${line}`),
    ...options,
  });
  cleanups.push(() => bridge.stop());
  return { bridge, lines };
}

/** A session whose run holds in a tool batch, takes a steer, then answers. */
async function sessionWithSteerAndBatch(
  engine: Engine,
  hold: ReturnType<typeof holdTool>,
  sessionId = 's',
): Promise<{ runId: string; steerId: string }> {
  const run = await engine.submit({ sessionId, input: 'main task' });
  await until(() => hold.isHolding(run.runId), 'the run is inside its tool batch');
  const steer = await engine.submit({ sessionId, input: `also: the key is ${SECRET}` });
  expect(steer.outcome).toBe('steered');
  hold.release(run.runId);
  await engine.wait(run.runId);
  return { runId: run.runId, steerId: steer.runId };
}

async function steeringEngine(): Promise<{ engine: Engine; hold: ReturnType<typeof holdTool> }> {
  const hold = holdTool();
  const model = scriptedModel((ctx) =>
    ctx.turn === 0
      ? {
          toolCalls: [
            { name: 'look', args: { n: 1 } },
            { name: 'hold', args: {} },
          ],
        }
      : { text: `answered at turn ${ctx.turn}` },
  );
  const engine = await engineOf({ tools: [look, hold.tool], models: { scripted: model } });
  return { engine, hold };
}

const definitionId = (event: StatelyInspectionEvent) =>
  event.type === '@xstate.actor' && event.definition ? (JSON.parse(event.definition) as { id?: string }).id : undefined;

describe('the Stately bridge', () => {
  it('sends each actor with its definition and parent, the events with their senders, and the snapshots in order', async () => {
    const port = await freePort();
    const { received } = await inspectorServer(port);
    const { engine, hold } = await steeringEngine();
    // What the engine's own inspection says, to compare with.
    const expected: { actorId: string; value: unknown; event: string }[] = [];
    const stopWatching = engine.inspect((event) => {
      if (event.type === '@xstate.snapshot')
        expected.push({
          actorId: actorIdOf(event.actorRef),
          value: (event.snapshot as { value?: unknown }).value,
          event: event.event.type,
        });
    });
    const { bridge } = await bridgeTo(engine, port);
    await until(() => bridge.stats().connected, 'the bridge is connected');

    const { runId } = await sessionWithSteerAndBatch(engine, hold);
    stopWatching();
    await until(
      () => received.filter((e) => e.type === '@xstate.snapshot').length >= expected.length,
      'every snapshot arrived',
      5000,
    );

    const run = `run:${runId}`;
    const actors = new Map(received.filter((e) => e.type === '@xstate.actor').map((e) => [e.sessionId, e]));
    const expectActor = (actorId: string, machine: string | undefined, parentId: string | undefined) => {
      const actor = actors.get(actorId);
      expect(actor, actorId).toBeDefined();
      expect(definitionId(actor!), actorId).toBe(machine);
      expect(actor!.parentId, actorId).toBe(parentId);
      expect(actor!.rootId, actorId).toBe(actorId.split('/')[0]);
      expect(actor!._version).toBe('0.7.2');
    };
    expectActor('limiter', 'limiter', undefined);
    expectActor('session:s', 'session', undefined);
    expectActor(run, 'run', undefined);
    expectActor(`${run}/act`, 'act', run);
    const calls = [...actors.keys()].filter((id) => id.startsWith(`${run}/act/`) && id.split('/').length === 3);
    expect(calls).toHaveLength(2);
    for (const call of calls) expectActor(call, 'toolCall', `${run}/act`);
    // The async work the charts asked for, with no definition: each model turn under the run,
    // each tool's execution under its call, and each ended as it did.
    expectActor(`${run}/turn:0`, undefined, run);
    expectActor(`${run}/turn:1`, undefined, run);
    for (const call of calls) expectActor(`${call}/exec`, undefined, call);
    const statusesOf = (actorId: string) =>
      received
        .filter((e) => e.type === '@xstate.snapshot' && e.sessionId === actorId)
        .map((e) => (e as Extract<StatelyInspectionEvent, { type: '@xstate.snapshot' }>).snapshot.status);
    expect(statusesOf(`${run}/turn:0`)).toEqual(['active', 'done']);
    for (const call of calls) expect(statusesOf(`${call}/exec`)).toEqual(['active', 'done']);

    // Each actor is announced before anything else is said of it.
    const seen = new Set<string>();
    for (const event of received) {
      if (event.type === '@xstate.actor') seen.add(event.sessionId);
      else expect(seen.has(event.sessionId), `${event.type} of ${event.sessionId} before its actor`).toBe(true);
    }

    // The events the run took, with their senders: the batch's end comes from the batch.
    const runEvents = received.filter((e) => e.type === '@xstate.event' && e.sessionId === run) as Extract<
      StatelyInspectionEvent,
      { type: '@xstate.event' }
    >[];
    expect(runEvents.map((e) => e.event.type)).toEqual(
      expect.arrayContaining(['GRANTED', 'MODEL_REPLY', 'STEER', 'xstate.done.actor.act']),
    );
    expect(runEvents.find((e) => e.event.type === 'xstate.done.actor.act')?.sourceId).toBe(`${run}/act`);

    // Every snapshot, in the order the engine made it, with its state value and the event that led to it.
    const snapshots = received.filter((e) => e.type === '@xstate.snapshot') as Extract<
      StatelyInspectionEvent,
      { type: '@xstate.snapshot' }
    >[];
    expect(
      snapshots.map((e) => ({
        actorId: e.sessionId,
        value: (e.snapshot as { value?: unknown }).value,
        event: e.event.type,
      })),
    ).toEqual(expected);
    const lastOfRun = snapshots.filter((e) => e.sessionId === run).at(-1)!.snapshot as unknown;
    expect(lastOfRun).toMatchObject({ status: 'done', context: { sessionId: 's' } });

    // Secrets never leave: the steer's text is there, its key is not.
    const text = JSON.stringify(received);
    expect(text).toContain('also: the key is sk-***');
    expect(text).not.toContain(SECRET);
  });

  it('sends only the session or the run asked for', async () => {
    const port = await freePort();
    const { received } = await inspectorServer(port);
    const { engine, hold } = await steeringEngine();
    const { bridge: ofSession } = await bridgeTo(engine, port, { sessionId: 'a' });
    await until(() => ofSession.stats().connected, 'the bridge is connected');
    const { runId } = await sessionWithSteerAndBatch(engine, hold, 'a');
    await sessionWithSteerAndBatch(engine, hold, 'b');
    ofSession.stop();
    await until(
      () =>
        received.some(
          (e) =>
            e.type === '@xstate.snapshot' &&
            e.sessionId === `run:${runId}` &&
            (e.snapshot as { status: string }).status === 'done',
        ),
      'the run of a arrived',
    );
    const roots = new Set(received.map((e) => e.sessionId.split('/')[0]));
    expect([...roots].sort()).toEqual([`run:${runId}`, 'session:a'].sort());

    received.length = 0;
    const { bridge: ofRun } = await bridgeTo(engine, port, { runId });
    await until(() => ofRun.stats().connected, 'the bridge is connected');
    const other = await sessionWithSteerAndBatch(engine, hold, 'a');
    // The run asked for has ended: nothing of the session's next run is sent.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(received.filter((e) => e.sessionId.startsWith(`run:${other.runId}`) || e.sessionId === 'session:a')).toEqual(
      [],
    );
  });

  it('while the inspector is away: keeps the newest events, counts the dropped ones, backs off, says so once, and catches up when it comes', async () => {
    const port = await freePort();
    const { engine, hold } = await steeringEngine();
    const { bridge, lines } = await bridgeTo(engine, port, { maxBuffered: 20, firstRetryMs: 10, maxRetryMs: 40 });
    await until(() => bridge.stats().failures >= 3, 'a few attempts failed');
    await sessionWithSteerAndBatch(engine, hold);
    expect(bridge.stats()).toMatchObject({ connected: false, buffered: 20, sent: 0 });
    const dropped = bridge.stats().dropped;
    expect(dropped).toBeGreaterThan(20);
    expect(lines.filter((line) => line.startsWith('warn:'))).toEqual([
      expect.stringContaining(`cannot reach ws://127.0.0.1:${port} (ECONNREFUSED)`),
    ]);

    const { received } = await inspectorServer(port);
    await until(() => bridge.stats().connected, 'the bridge reconnected');
    await until(() => received.length === 20, 'the buffered events arrived');
    expect(lines.at(-1)).toBe(
      `info: Stately inspector: connected to ws://127.0.0.1:${port}, sending 20 buffered events; ${dropped} inspection events were dropped while it was away`,
    );
    // The newest: the run's last snapshot is among them.
    expect(received.at(-1)).toMatchObject({ type: '@xstate.snapshot' });
  });

  it('stop() leaves no timer or connection behind, even in the middle of retrying', async () => {
    // A server that takes each connection and drops it: every attempt fails, and is counted.
    let attempts = 0;
    const server: Server = createServer((socket) => {
      attempts += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as { port: number };
    const { engine } = await steeringEngine();

    // The retry waits run on a clock the test moves: each failed attempt leaves one wait.
    const clock = new RecordingClock();
    const { bridge } = await bridgeTo(engine, port, { firstRetryMs: 20, maxRetryMs: 80, clock });
    for (let attempt = 1; attempt <= 3; attempt++) {
      await until(() => clock.pending() === 1, `attempt ${attempt} failed and a retry waits`);
      expect(attempts).toBe(attempt);
      if (attempt < 3) clock.increment(clock.delays.at(-1)!);
    }
    expect(clock.delays).toEqual([20, 40, 80]);

    bridge.stop();
    // The pending retry is cancelled: nothing is left to fire, however far the clock moves.
    expect(clock.pending()).toBe(0);
    clock.increment(3_600_000);
    expect(bridge.stats()).toMatchObject({ connected: false, buffered: 0 });
    expect(clock.delays).toHaveLength(3);
  });

  it('says what to install when the optional package is missing', async () => {
    const { engine } = await steeringEngine();
    const missing = startStatelyBridge(engine, {
      url: 'ws://127.0.0.1:9',
      log: () => {},
      load: () => import('@statelyai/not-installed' as string),
    });
    await expect(missing).rejects.toThrow(/install it with `npm install @statelyai\/inspect@0\.7\.2`/);
  });
});
