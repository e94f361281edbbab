/*
 * Who gets in: the bearer token (header or ?token=) is checked before the WebSocket upgrade
 * (401 otherwise), browsers only from the gateway's own origin or an allowed one (403), and
 * the token lives in <dataDir>/token with mode 0600, the same across restarts.
 */
import { stat, writeFile, chmod, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { connect } from '../../src/client/index.js';
import { createEngine } from '../../src/engine/index.js';
import { ensureToken, startGateway, tokensEqual } from '../../src/gateway/index.js';
import { closeRaw, gatewayFixture, handshakeStatus, request, tempDirs } from './fixtures.js';

const harness = gatewayFixture();
const tempDir = tempDirs();

describe('the token on the upgrade request', () => {
  it.each([
    ['no token at all', {}, ''],
    ['a wrong bearer token', { Authorization: 'Bearer not-the-token-at-all' }, ''],
    ['a malformed Authorization header', { Authorization: 'Basic dXNlcjpwYXNz' }, ''],
    ['a wrong ?token=', {}, '?token=wrong'],
    ['an empty ?token=', {}, '?token='],
  ])('%s is answered 401 before any upgrade', async (_name, headers, query) => {
    const { gateway } = await harness();
    expect(await handshakeStatus(`${gateway.url}/${query}`, headers)).toBe(401);
    expect(gateway.connections()).toBe(0);
  });

  it('a right bearer token connects', async () => {
    const { gateway, raw } = await harness();
    const ws = await raw();
    expect((await request(ws, 'engine.snapshot'))['result']).toMatchObject({ global: { max: 8 } });
    expect(gateway.connections()).toBe(1);
  });

  it('?token= in the URL connects (what the inspector page uses)', async () => {
    const { gateway } = await harness();
    const ws = new WebSocket(`${gateway.url}/?token=${encodeURIComponent(gateway.token)}`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    expect((await request(ws, 'engine.snapshot'))['result']).toMatchObject({ waiting: 0 });
    await closeRaw(ws);
  });

  it('the client refuses to connect with a wrong token and says why', async () => {
    const { gateway } = await harness();
    await expect(connect(gateway.url, { token: 'wrong' })).rejects.toMatchObject({
      message: expect.stringContaining('401'),
    });
  });

  it('tokens compare by value, whatever their lengths', () => {
    expect(tokensEqual('abc', 'abc')).toBe(true);
    expect(tokensEqual('abc', 'abd')).toBe(false);
    expect(tokensEqual('abc', 'abcd')).toBe(false);
    expect(tokensEqual('', 'abc')).toBe(false);
  });
});

describe('the Origin of browser clients', () => {
  it('a foreign origin is answered 403, even with the right token', async () => {
    const { gateway } = await harness();
    const status = await handshakeStatus(gateway.url, {
      Authorization: `Bearer ${gateway.token}`,
      Origin: 'http://evil.example',
    });
    expect(status).toBe(403);
  });

  it('a DNS-rebinding origin on the same port is still foreign', async () => {
    const { gateway } = await harness();
    const status = await handshakeStatus(gateway.url, {
      Authorization: `Bearer ${gateway.token}`,
      Origin: `http://evil.example:${gateway.port}`,
    });
    expect(status).toBe(403);
  });

  it.each(['127.0.0.1', 'localhost'])('the gateway’s own origin (http://%s:port) is accepted', async (host) => {
    const { gateway, raw } = await harness();
    const ws = await raw({ headers: { Origin: `http://${host}:${gateway.port}` } });
    expect((await request(ws, 'engine.snapshot'))['result']).toBeDefined();
  });

  it('an origin in allowedOrigins is accepted', async () => {
    const { raw } = await harness({ gateway: { allowedOrigins: ['https://console.example'] } });
    const ws = await raw({ headers: { Origin: 'https://console.example' } });
    expect((await request(ws, 'engine.snapshot'))['result']).toBeDefined();
  });
});

describe('the token file', () => {
  it('is generated at first start into <dataDir>/token with mode 0600', async () => {
    const dataDir = join(await tempDir(), 'nested', 'data');
    const token = await ensureToken(dataDir);
    expect(token).toMatchObject({ path: join(dataDir, 'token'), created: true });
    expect(token.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await stat(token.path)).mode & 0o777).toBe(0o600);
    expect((await readFile(token.path, 'utf8')).trim()).toBe(token.token);
  });

  it('is the same after a restart on the same data dir', async () => {
    const dataDir = await tempDir();
    const first = await harness({ dataDir });
    await first.gateway.close();
    const engine = await createEngine();
    const second = await startGateway({ engine, port: 0, dataDir });
    try {
      expect(first.gateway.tokenCreated).toBe(true);
      expect(second.tokenCreated).toBe(false);
      expect(second.token).toBe(first.gateway.token);
      const client = await connect(second.url, { token: first.gateway.token });
      await client.close();
    } finally {
      await second.close();
      await engine.close();
    }
  });

  it('gets its mode fixed when it was loosened', async () => {
    const dataDir = await tempDir();
    const path = join(dataDir, 'token');
    await writeFile(path, 'an-existing-token-of-enough-length\n');
    await chmod(path, 0o644);
    const token = await ensureToken(dataDir);
    expect(token).toMatchObject({ token: 'an-existing-token-of-enough-length', created: false });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('is replaced when it holds no usable token', async () => {
    const dataDir = await tempDir();
    await writeFile(join(dataDir, 'token'), '\n');
    const token = await ensureToken(dataDir);
    expect(token.created).toBe(true);
    expect(token.token.length).toBeGreaterThan(40);
  });
});

describe('HTTP routes', () => {
  it('GET /healthz needs no token', async () => {
    const { gateway } = await harness();
    const res = await fetch(`${gateway.httpUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it('/inspect is 404 until a handler is registered', async () => {
    const { gateway } = await harness();
    expect((await fetch(`${gateway.httpUrl}/inspect?token=${gateway.token}`)).status).toBe(404);
  });

  it('a registered route requires the token', async () => {
    const { gateway } = await harness({
      gateway: { httpRoutes: { '/inspect': (_req, res) => void res.end('the page') } },
    });
    expect((await fetch(`${gateway.httpUrl}/inspect`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect?token=wrong`)).status).toBe(401);
    const ok = await fetch(`${gateway.httpUrl}/inspect?token=${encodeURIComponent(gateway.token)}`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('the page');
    const byHeader = await fetch(`${gateway.httpUrl}/inspect`, {
      headers: { Authorization: `Bearer ${gateway.token}` },
    });
    expect(byHeader.status).toBe(200);
  });

  it('a route that throws is a 500, and the server goes on', async () => {
    const { gateway } = await harness({
      gateway: {
        httpRoutes: {
          '/boom': () => {
            throw new Error('boom');
          },
        },
        logger: { error: () => {} },
      },
    });
    expect((await fetch(`${gateway.httpUrl}/boom?token=${gateway.token}`)).status).toBe(500);
    expect((await fetch(`${gateway.httpUrl}/healthz`)).status).toBe(200);
  });
});
