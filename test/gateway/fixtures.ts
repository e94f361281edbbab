/*
 * What the gateway and client suites share: an engine behind a real gateway on 127.0.0.1,
 * port 0, with a temporary data dir — all closed after each test — plus raw WebSocket
 * helpers for the tests that speak the protocol by hand.
 */
import { join } from 'node:path';
import { afterEach, expect } from 'vitest';
import WebSocket from 'ws';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { createEngine, type Engine, type EngineOptions } from '../../src/engine/index.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway/index.js';
import { withWorkspaceRoot } from '../engine/fixtures.js';

export interface GatewayHarness {
  engine: Engine;
  gateway: Gateway;
  dataDir: string;
  /** A client on the gateway, closed after the test. */
  client(): Promise<SwitchyardClient>;
  /** A raw ws socket (token in the header), open; closed after the test. */
  raw(options?: { headers?: Record<string, string>; path?: string }): Promise<WebSocket>;
}

import { tempDirs } from '../support/temp-dirs.js';

export { tempDirs };

export interface HarnessOptions {
  engine?: EngineOptions;
  gateway?: Partial<Omit<GatewayOptions, 'engine'>>;
  /** Reuse a data dir (restart tests); otherwise a fresh temporary one. */
  dataDir?: string;
}

/** One engine + gateway per call; everything is closed after the test, no engine error allowed. */
export function gatewayFixture(): (options?: HarnessOptions) => Promise<GatewayHarness> {
  const cleanups: (() => Promise<void>)[] = [];
  const errors: unknown[] = [];
  const tempDir = tempDirs();
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    expect(errors.splice(0)).toEqual([]);
  });
  return async (options = {}) => {
    const dataDir = options.dataDir ?? (await tempDir());
    const engine = await createEngine({
      onError: (error) => errors.push(error),
      ...options.engine,
      config: withWorkspaceRoot(options.engine?.config, join(dataDir, 'workspaces')),
    });
    cleanups.push(() => engine.close());
    const gateway = await startGateway({ engine, port: 0, dataDir, logger: quietLogger(errors), ...options.gateway });
    cleanups.push(() => gateway.close());
    return {
      engine,
      gateway,
      dataDir,
      client: async () => {
        const client = await connect(gateway.url, { token: gateway.token });
        cleanups.push(() => client.close());
        return client;
      },
      raw: async ({ headers = {}, path = '/' } = {}) => {
        const ws = new WebSocket(`${gateway.url}${path}`, {
          headers: { Authorization: `Bearer ${gateway.token}`, ...headers },
        });
        cleanups.push(async () => closeRaw(ws));
        await new Promise<void>((resolve, reject) => {
          ws.once('open', () => resolve());
          ws.once('error', reject);
        });
        return ws;
      },
    };
  };
}

/** Unexpected gateway errors fail the test; warnings (a dropped slow consumer) are expected. */
function quietLogger(errors: unknown[]): GatewayOptions['logger'] {
  return {
    info: () => {},
    warn: () => {},
    error: (message, error) => errors.push(new Error(`${message}: ${String(error)}`)),
  };
}

export async function closeRaw(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return;
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
  else ws.close();
  await closed;
}

/** The next frame the socket receives, parsed. */
export function nextFrame(ws: WebSocket): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMessage = (data: WebSocket.RawData) => {
      cleanup();
      resolve(JSON.parse(String(data)) as Record<string, unknown>);
    };
    const onClose = (code: number) => {
      cleanup();
      reject(new Error(`closed with ${code} before a frame arrived`));
    };
    const cleanup = () => {
      ws.off('message', onMessage);
      ws.off('close', onClose);
    };
    ws.on('message', onMessage);
    ws.on('close', onClose);
  });
}

/** Sends a request frame and resolves with the answer whose id matches. */
export function request(
  ws: WebSocket,
  method: string,
  params?: unknown,
  id: string | number = nextId(),
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const onMessage = (data: WebSocket.RawData) => {
      const frame = JSON.parse(String(data)) as Record<string, unknown>;
      if (frame['id'] !== id) return;
      cleanup();
      resolve(frame);
    };
    const onClose = (code: number) => {
      cleanup();
      reject(new Error(`closed with ${code}`));
    };
    const cleanup = () => {
      ws.off('message', onMessage);
      ws.off('close', onClose);
    };
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params !== undefined ? { params } : {}) }));
  });
}

let ids = 0;
function nextId(): number {
  ids += 1;
  return ids;
}

/** Resolves with the close code (and reason) of the socket. */
export function closeOf(ws: WebSocket): Promise<{ code: number; reason: string }> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.reject(new Error('already closed'));
  return new Promise((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

/** The HTTP status a WebSocket handshake was refused with (via ws's unexpected-response). */
export function handshakeStatus(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.once('open', () => {
      ws.terminate();
      reject(new Error('the handshake was accepted'));
    });
    ws.once('error', () => {});
  });
}
