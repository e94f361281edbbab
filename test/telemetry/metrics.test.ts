/*
 * GET /metrics during a scripted workload, against the event logs of the same runs: every
 * counter equals what the logs say (exact counts), the gauges show the engine mid-workload,
 * no label carries a session id, and the endpoint wants the gateway token unless it is public.
 * Real parts: a file store, a gateway on a real port, Prometheus text over HTTP.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { evaluateCommand } from '../../src/sandbox/index.js';
import { LowdbStore } from '../../src/store/index.js';
import { startTelemetry, type Telemetry } from '../../src/telemetry/index.js';
import { isTerminalEvent, type RunEvent, type RunEventOf } from '../../src/engine/index.js';
import { holdTool } from '../engine/fixtures.js';
import { until } from '../support/eventually.js';
import { gatewayFixture, tempDirs, type GatewayHarness } from '../gateway/fixtures.js';
import {
  brokenTool,
  lookupTool,
  meteredModel,
  parsePrometheusText,
  series,
  tally,
  USAGE,
  type Sample,
} from './fixtures.js';

// Registered first, so its cleanup runs last (after hooks run as a stack): the store is closed before its directory goes.
const tempDir = tempDirs();
const harness = gatewayFixture();

const FIRST_TURNS = {
  tools: {
    toolCalls: [
      { name: 'lookup', args: { key: 'a' } },
      { name: 'lookup', args: { key: 'b' } },
      { name: 'broken', args: {} },
    ],
  },
  'bash-block': { toolCalls: [{ name: 'bash', args: { command: 'rm -rf /' } }] },
  'bash-warn': { toolCalls: [{ name: 'bash', args: { command: 'sudo ls' } }] },
  hold: {
    toolCalls: [
      { name: 'hold', args: {} },
      { name: 'lookup', args: { key: 'c' } },
    ],
  },
  'model-error': { error: 'the model is down' },
} as const;

async function servedTelemetry(options: { metricsPublic?: boolean } = {}) {
  const hold = holdTool();
  const telemetry: Telemetry = await startTelemetry({});
  const route = { '/metrics': telemetry.metricsRoute! };
  const dataDir = await tempDir();
  const h = await harness({
    dataDir,
    engine: {
      store: telemetry.instrumentStore(await LowdbStore.open(join(dataDir, 'store'))),
      observer: telemetry.observer,
      models: {
        metered: meteredModel((input) => FIRST_TURNS[input as keyof typeof FIRST_TURNS] ?? { text: 'plain answer' }),
      },
      tools: [lookupTool, brokenTool, hold.tool],
      config: { execution: { default_model: 'metered', max_runs_global: 2, busy_policy: 'queue' } },
    },
    gateway: options.metricsPublic ? { publicHttpRoutes: route } : { httpRoutes: route },
  });
  await telemetry.attach(h.engine);
  telemetry.attachGateway(() => h.gateway.stats());
  return { h, hold, telemetry };
}

async function scrape(h: GatewayHarness, token: string | undefined = h.gateway.token): Promise<Sample[]> {
  const response = await fetch(
    `${h.gateway.httpUrl}/metrics`,
    token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } },
  );
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await response.text());
}

const ofType = <K extends RunEvent['type']>(events: RunEvent[], type: K) =>
  events.filter((e): e is RunEventOf<K> => e.type === type);

describe('GET /metrics', () => {
  it('counts exactly what the event logs hold, and shows the engine mid-workload', { timeout: 60_000 }, async () => {
    const { h, hold, telemetry } = await servedTelemetry();
    const { engine } = h;
    expect(evaluateCommand('rm -rf /').action).toBe('block');
    expect(evaluateCommand('sudo ls').action).toBe('warn');
    const client = await h.client();

    // Two permits: "busy" holds one in its tool, "warn" the other waiting for a person.
    const busy = await engine.submit({ sessionId: 'session-busy', input: 'hold' });
    await until(() => hold.isHolding(busy.runId), 'the hold tool holds');
    const laneA = await engine.submit({ sessionId: 'session-busy', input: 'first in lane' });
    const laneB = await engine.submit({ sessionId: 'session-busy', input: 'second in lane' });
    const warn = await engine.submit({ sessionId: 'session-warn', input: 'bash-warn' });
    await until(() => engine.pendingApprovals().length === 1, 'the approval is asked for');
    const tools = await engine.submit({ sessionId: 'session-tools', input: 'tools' });
    expect([laneA.outcome, laneB.outcome, tools.outcome]).toEqual(['queued', 'queued', 'queued']);
    // history() answers once every event so far is stored and published: the reader has them too.
    await engine.history(tools.runId);

    const during = await scrape(h);
    expect(series(during, 'switchyard_runs_running')).toEqual({ 'agent=main': 2 });
    expect(series(during, 'switchyard_runs_waiting')).toEqual({
      'agent=main,reason=session_busy': 2,
      'agent=main,reason=limits': 1,
    });
    expect(series(during, 'switchyard_permits_in_use')).toEqual({ '': 2 });
    expect(series(during, 'switchyard_permits_limit')).toEqual({ '': 2 });
    expect(series(during, 'switchyard_lane_messages')).toEqual({ '': 2 });
    expect(series(during, 'switchyard_lane_depth_max')).toEqual({ '': 2 });
    expect(series(during, 'switchyard_approvals_pending')).toEqual({ '': 1 });
    // The lookup after the hold waits for it (hold claims everything): one call waits on claims.
    expect(series(during, 'switchyard_tool_calls_waiting')).toEqual({ '': 1 });
    expect(series(during, 'switchyard_gateway_connections')).toEqual({ '': 1 });

    await engine.cancel(laneB.runId);
    expect(engine.respondApproval(engine.pendingApprovals()[0]!.approvalId, 'deny')).toBe(true);
    hold.release(busy.runId);
    const block = await engine.submit({ sessionId: 'session-block', input: 'bash-block' });
    const failing = await engine.submit({ sessionId: 'session-down', input: 'model-error' });
    const runIds = [busy, laneA, laneB, warn, tools, block, failing].map((s) => s.runId);
    for (const runId of runIds) await engine.wait(runId);
    const events = (await Promise.all(runIds.map((runId) => engine.history(runId)))).flat();
    await client.close();
    await until(() => h.gateway.connections() === 0, 'the client is gone');
    const after = await scrape(h);

    const started = ofType(events, 'run.started');
    const terminal = events.filter(isTerminalEvent);
    const code = (e: RunEvent) =>
      e.type === 'run.completed'
        ? e.denied
          ? 'denied'
          : 'ok'
        : e.type === 'run.failed'
          ? e.error.code
          : e.type === 'run.cancelled'
            ? e.reason
            : '';
    expect(series(after, 'switchyard_runs_total')).toEqual(
      tally(terminal.map((e) => `code=${code(e)},state=${e.type.slice(4)}`)),
    );
    // The workload is what it was meant to be: every kind of ending is there.
    expect(Object.keys(series(after, 'switchyard_runs_total')).sort()).toEqual(
      [
        'code=cancelled,state=cancelled',
        'code=denied,state=completed',
        'code=model_error,state=failed',
        'code=ok,state=completed',
      ].sort(),
    );
    expect(series(after, 'switchyard_runs_started_total')).toEqual(tally(started.map((e) => `agent=${e.agentId}`)));
    expect(series(after, 'switchyard_runs_queued_total')).toEqual(
      tally(ofType(events, 'run.queued').map((e) => `reason=${e.reason}`)),
    );
    expect(series(after, 'switchyard_admission_wait_seconds_count')).toEqual({ '': started.length });
    expect(series(after, 'switchyard_run_duration_seconds_count')).toEqual(
      tally(terminal.filter((e) => started.some((s) => s.runId === e.runId)).map((e) => `state=${e.type.slice(4)}`)),
    );

    const messages = ofType(events, 'model.message');
    expect(series(after, 'switchyard_model_turn_duration_seconds_count')).toEqual({ 'model=metered': messages.length });
    expect(series(after, 'switchyard_model_tokens_total')).toEqual({
      'model=metered,type=input': USAGE.inputTokens * messages.length,
      'model=metered,type=output': USAGE.outputTokens * messages.length,
      'model=metered,type=cached': USAGE.cachedTokens * messages.length,
    });

    const toolOf = new Map(
      ofType(events, 'tool.scheduled').flatMap((e) => e.claims.map((c) => [`${e.runId}/${c.callId}`, c.tool] as const)),
    );
    const finished = ofType(events, 'tool.finished');
    expect(series(after, 'switchyard_tool_calls_total')).toEqual(
      tally(finished.map((e) => `outcome=${e.ok ? 'ok' : e.error!.code},tool=${toolOf.get(`${e.runId}/${e.callId}`)}`)),
    );
    expect(Object.keys(series(after, 'switchyard_tool_calls_total'))).toEqual(
      expect.arrayContaining([
        'outcome=ok,tool=lookup',
        'outcome=lookup_failed,tool=broken',
        'outcome=command_blocked,tool=bash',
        'outcome=approval_denied,tool=bash',
      ]),
    );
    const startedCalls = ofType(events, 'tool.started');
    expect(series(after, 'switchyard_tool_call_duration_seconds_count')).toEqual(
      tally(startedCalls.map((e) => `tool=${e.tool}`)),
    );
    expect(series(after, 'switchyard_tool_call_wait_seconds_count')).toEqual(
      tally(startedCalls.map((e) => `tool=${e.tool}`)),
    );
    expect(series(after, 'switchyard_tool_calls_waiting')).toEqual({ '': 0 });

    expect(series(after, 'switchyard_approval_wait_seconds_count')).toEqual(
      tally(ofType(events, 'approval.resolved').map((e) => `decision=${e.decision}`)),
    );
    expect(series(after, 'switchyard_approvals_pending')).toEqual({ '': 0 });
    const verdicts = ['rm -rf /', 'sudo ls'].map((command) => evaluateCommand(command));
    expect(series(after, 'switchyard_command_verdicts_total')).toEqual(
      tally(verdicts.map((v) => `action=${v.action},rule=${v.rule}`)),
    );

    // Every event of these runs went through the store once, timed.
    expect(series(after, 'switchyard_store_append_seconds_count')).toEqual({ '': events.length });
    expect(series(after, 'switchyard_runs_running')).toEqual({});
    expect(series(after, 'switchyard_runs_waiting')).toEqual({});
    expect(series(after, 'switchyard_gateway_connections')).toEqual({ '': 0 });
    expect(series(after, 'switchyard_gateway_slow_consumers_dropped_total')).toEqual({ '': 0 });
    expect(after.some((s) => s.name === 'switchyard_nodejs_eventloop_lag_seconds')).toBe(true);

    // Bounded cardinality: no label names a session or a run.
    const ids = new Set([...runIds, 'session-busy', 'session-warn', 'session-tools', 'session-block', 'session-down']);
    expect(after.flatMap((s) => Object.values(s.labels)).filter((value) => ids.has(value))).toEqual([]);
    // Every metric is named switchyard_*, the process and Node.js ones included.
    const names = new Set(after.map((s) => s.name.replace(/_(bucket|sum|count)$/, '')));
    expect([...names].filter((name) => !name.startsWith('switchyard_'))).toEqual([]);
    await telemetry.close();
  });

  it('are each listed in the README ("Operating Switchyard"), and the README lists no other', async () => {
    const { telemetry } = await servedTelemetry();
    const registered = telemetry
      .registry!.getMetricsAsArray()
      .map((metric) => metric.name)
      .sort();
    const readme = await readFile(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
    const section = readme.slice(readme.indexOf('## Operating Switchyard'), readme.indexOf('### Traces'));
    const listed = [...new Set([...section.matchAll(/`(switchyard_[a-z_]+[a-z])`/g)].map((m) => m[1]!))];
    const processMetrics = (name: string) => /^switchyard_(nodejs|process)_/.test(name);
    expect(listed.filter((name) => !processMetrics(name)).sort()).toEqual(registered);
    await telemetry.close();
  });

  it('wants the gateway token, as Prometheus sends it (Authorization: Bearer)', async () => {
    const { h, telemetry } = await servedTelemetry();
    const bare = await fetch(`${h.gateway.httpUrl}/metrics`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe('Bearer');
    expect(
      (await fetch(`${h.gateway.httpUrl}/metrics`, { headers: { Authorization: 'Bearer wrong-token-0123456789' } }))
        .status,
    ).toBe(401);
    expect((await scrape(h)).length).toBeGreaterThan(0);
    await telemetry.close();
  });

  it('answers without the token when it is public ([gateway] metrics_public)', async () => {
    const { h, telemetry } = await servedTelemetry({ metricsPublic: true });
    const samples = await scrape(h, undefined);
    expect(series(samples, 'switchyard_permits_limit')).toEqual({ '': 2 });
    await telemetry.close();
  });
});
