/*
 * /healthz and /readyz: unauthenticated, answering yes or no and, for /readyz, which kind of
 * check failed — never an id, a path or an error message. /readyz turns
 * 503 when the store stops answering and when a graceful shutdown begins — checked on
 * `switchyard serve` itself (in-process, signalled through an emitter), while /healthz still
 * answers 200 during the grace period.
 */
import { EventEmitter } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serveCommand } from '../../src/cli/serve.js';
import { connect } from '../../src/client/index.js';
import { defaultConfig } from '../../src/config/index.js';
import { readToken } from '../../src/gateway/index.js';
import { LowdbStore } from '../../src/store/index.js';
import { readinessProbe } from '../../src/telemetry/index.js';
import { until } from '../support/eventually.js';
import { gatewayFixture, tempDirs } from '../gateway/fixtures.js';

// Registered first, so its cleanup runs last: the store is closed before its directory goes.
const tempDir = tempDirs();
const harness = gatewayFixture();

async function get(url: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.json() };
}

describe('health endpoints', () => {
  it('answer without the token; /readyz says no once the store fails, and only which check failed', async () => {
    const store = await LowdbStore.open(join(await tempDir(), 'store'));
    const reasons: string[] = [];
    const h = await harness({
      engine: { store },
      gateway: {
        readiness: readinessProbe({ store, config: () => defaultConfig(), notReady: (reason) => reasons.push(reason) }),
      },
    });
    expect(await get(`${h.gateway.httpUrl}/healthz`)).toEqual({ status: 200, body: { ok: true } });
    expect(await get(`${h.gateway.httpUrl}/readyz`)).toEqual({ status: 200, body: { ready: true } });
    expect((await fetch(`${h.gateway.httpUrl}/readyz`, { method: 'POST' })).status).toBe(405);

    await store.close();
    expect(await get(`${h.gateway.httpUrl}/readyz`)).toEqual({
      status: 503,
      body: { ready: false, details: ['store: failed'] },
    });
    expect(await get(`${h.gateway.httpUrl}/healthz`)).toEqual({ status: 200, body: { ok: true } });
    // The why goes to the log, not to whoever asked.
    expect(reasons).toEqual([expect.stringMatching(/^the store failed: /)]);
  });

  it('/readyz is 503 from the moment the gateway stops admitting', async () => {
    const h = await harness();
    expect((await get(`${h.gateway.httpUrl}/readyz`)).status).toBe(200);
    h.gateway.stopAdmitting();
    expect(await get(`${h.gateway.httpUrl}/readyz`)).toEqual({ status: 503, body: { ready: false } });
  });

  it(
    'switchyard serve: /readyz flips to 503 on SIGTERM while /healthz still answers, then the server stops',
    { timeout: 60_000 },
    async () => {
      const dataDir = await tempDir();
      const script = join(dataDir, 'slow.json');
      await writeFile(script, JSON.stringify([{ text: 'too slow', delayMs: 600_000 }]));
      const config = join(dataDir, 'switchyard.toml');
      await writeFile(
        config,
        [
          '[execution]',
          'default_model = "slow"',
          '[models.slow]',
          'kind = "scripted"',
          `script = ${JSON.stringify(script)}`,
          '[sandbox]',
          `workspace_root = ${JSON.stringify(await tempDir())}`,
        ].join('\n'),
      );
      const out: string[] = [];
      const signals = new EventEmitter();
      const serving = serveCommand(
        ['--port', '0', '--data-dir', join(dataDir, 'data'), '--config', config, '--grace-seconds', '120'],
        { out: (line) => out.push(line), err: (line) => out.push(line), color: false },
        signals,
      );
      const logged = () => out.map((line) => JSON.parse(line) as { msg: string; url?: string });
      await until(() => logged().some((line) => line.msg.includes('gateway token')), 'serve has started', 30_000);
      const wsUrl = logged().find((line) => line.msg.startsWith('listening on'))!.url!;
      const httpUrl = wsUrl.replace(/^ws:/, 'http:');
      expect(await get(`${httpUrl}/readyz`)).toEqual({ status: 200, body: { ready: true } });

      const client = await connect(wsUrl, { token: (await readToken(join(dataDir, 'data', 'token')))! });
      const { runId } = await client.submit({ sessionId: 's', input: 'take all the time you need' });
      signals.emit('SIGTERM', 'SIGTERM');
      await until(() => logged().some((line) => line.msg.startsWith('SIGTERM: shutting down')), 'shutdown begins');
      // The grace period: the run still runs, the process is up, but it takes no new runs.
      expect(await get(`${httpUrl}/readyz`)).toEqual({ status: 503, body: { ready: false } });
      expect(await get(`${httpUrl}/healthz`)).toEqual({ status: 200, body: { ok: true } });
      await client.cancel(runId);
      expect(await serving).toBe(0);
      await client.close();
      expect(logged().at(-1)).toMatchObject({ msg: 'stopped' });
    },
  );
});
