/*
 * The socket lifecycle every connection shares (src/gateway/peer-socket.ts, heartbeat.ts),
 * seen from real peers: a client or a node that stops answering pings is terminated while
 * one that answers stays; a peer that never reads does not hold the gateway's shutdown past
 * closeTimeoutMs; and the node client, on its side, reads frames through the same prelude
 * and gives up on a gateway that stops answering its pings, then reconnects.
 */
import { randomBytes } from 'node:crypto';
import { connect as tcpConnect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { runNodeClient } from '../../src/gateway/nodes/index.js';
import { RpcErrorCode, type Gateway } from '../../src/gateway/index.js';
import { until } from '../support/eventually.js';
import { nodeGatewayFixture } from '../nodes/fixtures.js';
import { closeOf, closeRaw } from './fixtures.js';
import { tempDirs } from '../support/temp-dirs.js';

const start = nodeGatewayFixture();
const tempDir = tempDirs('switchyard-lifecycle-test-');
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A WebSocket that never answers a ping (ws answers them by default). */
async function deafSocket(url: string, token: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` }, autoPong: false });
  cleanups.push(() => closeRaw(ws));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return ws;
}

/** Completes a WebSocket handshake by hand, then never reads again: no pong, no close frame. */
async function frozenPeer(gateway: Gateway): Promise<Socket> {
  const socket = tcpConnect(gateway.port, gateway.host);
  cleanups.push(async () => void socket.destroy());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  socket.write(
    [
      'GET / HTTP/1.1',
      `Host: ${gateway.host}:${gateway.port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      `Authorization: Bearer ${gateway.token}`,
      '',
      '',
    ].join('\r\n'),
  );
  const head = await new Promise<string>((resolve) =>
    socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))),
  );
  expect(head).toMatch(/^HTTP\/1\.1 101 /);
  socket.pause();
  return socket;
}

describe('the gateway side', () => {
  it('a client that stops answering pings is terminated; one that answers stays', async () => {
    const { gateway, raw } = await start({ gateway: { heartbeatMs: 250 } });
    const deaf = await deafSocket(gateway.url, gateway.token);
    const live = await raw();
    let pings = 0;
    live.on('ping', () => (pings += 1));
    expect((await closeOf(deaf)).code).toBe(1006);
    await until(() => pings >= 3, 'three heartbeats');
    expect(live.readyState).toBe(WebSocket.OPEN);
    await until(() => gateway.connections() === 1, 'the terminated connection is forgotten');
  });

  it('a node that stops answering pings is terminated and unregistered', async () => {
    const { gateway, nodes } = await start({ gateway: { heartbeatMs: 250 } });
    const deaf = await deafSocket(`${gateway.url}/?role=node&name=deaf`, gateway.token);
    await until(() => nodes.list().length === 1, 'the node registers');
    expect((await closeOf(deaf)).code).toBe(1006);
    await until(() => nodes.list().length === 0, 'the node is unregistered');
  });

  it('a peer that never reads does not hold shutdown past closeTimeoutMs (ws alone would wait 30 s)', async () => {
    const { gateway } = await start({ gateway: { heartbeatMs: 0, closeTimeoutMs: 200 } });
    await frozenPeer(gateway);
    await until(() => gateway.connections() === 1, 'the frozen peer is connected');
    const closing = Date.now();
    await gateway.close();
    expect(Date.now() - closing).toBeLessThan(10_000);
    expect(gateway.connections()).toBe(0);
  });
});

describe('the node client side', () => {
  async function fakeGateway(
    onConnection: (ws: WebSocket) => void,
  ): Promise<{ url: string; connections: () => number }> {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0, autoPong: false });
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    let connections = 0;
    server.on('connection', (ws) => {
      connections += 1;
      onConnection(ws);
    });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const { port } = server.address() as { port: number };
    return { url: `ws://127.0.0.1:${port}`, connections: () => connections };
  }

  async function nodeClient(url: string, heartbeatMs: number): Promise<void> {
    const workspace = await tempDir();
    const controller = new AbortController();
    const done = runNodeClient({
      url,
      token: 't',
      name: 'w',
      executor: { workspace, backend: 'none' },
      signal: controller.signal,
      heartbeatMs,
      reconnectDelayMs: 20,
    });
    cleanups.push(async () => {
      controller.abort();
      await done.catch(() => {});
    });
  }

  it('gives up on a gateway that stops answering pings, and connects again', async () => {
    const gateway = await fakeGateway(() => {});
    await nodeClient(gateway.url, 100);
    await until(() => gateway.connections() >= 2, 'a second connection after the first went silent');
  });

  it('answers a binary frame -32600 and text that is not JSON -32700 (id null), and stays connected', async () => {
    const replies: unknown[] = [];
    let socket: WebSocket | undefined;
    const gateway = await fakeGateway((ws) => {
      socket = ws;
      ws.on('message', (data) => replies.push(JSON.parse(String(data))));
      ws.send(Buffer.from([1, 2, 3]), { binary: true });
      ws.send('not json');
    });
    await nodeClient(gateway.url, 0);
    await until(() => replies.length === 2, 'two error answers');
    expect(replies).toEqual([
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: RpcErrorCode.InvalidRequest, message: 'binary frames are not supported' },
      },
      {
        jsonrpc: '2.0',
        id: null,
        error: { code: RpcErrorCode.ParseError, message: 'parse error: the frame is not valid JSON' },
      },
    ]);
    expect(socket?.readyState).toBe(WebSocket.OPEN);
    expect(gateway.connections()).toBe(1);
  });
});
