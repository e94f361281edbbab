/*
 * MCP tools over Streamable HTTP, against a real SDK server on a real socket: unannotated and
 * idempotent-only tools stay global, mixed content, structured-only results, server errors,
 * cancellation, timeouts and an unreachable server.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolError, type ToolContext } from '../../src/tools/index.js';
import { connectMcpServer, type McpConnection, type McpTool } from '../../src/tools/mcp/index.js';

const PIXEL = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');

function demoServer(): McpServer {
  const server = new McpServer({ name: 'demo', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echoes its text', inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text }],
  }));
  server.registerTool(
    'put',
    { description: 'Stores a value', inputSchema: { key: z.string() }, annotations: { idempotentHint: true } },
    () => ({ content: [{ type: 'text', text: 'stored' }] }),
  );
  server.registerTool(
    'picture',
    { description: 'A caption and a picture', annotations: { readOnlyHint: true } },
    () => ({
      content: [
        { type: 'text', text: 'a pixel' },
        { type: 'image', data: PIXEL, mimeType: 'image/png' },
      ],
    }),
  );
  server.registerTool(
    'stats',
    { description: 'Structured only', outputSchema: { count: z.number() }, annotations: { readOnlyHint: true } },
    () => ({ content: [], structuredContent: { count: 3 } }),
  );
  server.registerTool('fail', { description: 'Always fails' }, () => {
    throw new Error('the backend said no');
  });
  server.registerTool('slow', { description: 'Waits until cancelled' }, (extra) => {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: 'late' }] }), 10_000);
      extra.signal.addEventListener('abort', () => clearTimeout(timer));
    });
  });
  return server;
}

async function startHttpServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  const mcp = demoServer();
  await mcp.connect(transport);
  const http: Server = createServer((req, res) => void transport.handleRequest(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async stop() {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
      await mcp.close();
    },
  };
}

function context(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    signal: new AbortController().signal,
    workspace: '/w',
    callId: 'c1',
    runId: 'r1',
    sessionId: 's1',
    ...overrides,
  };
}

let server: Awaited<ReturnType<typeof startHttpServer>>;
let connection: McpConnection;

function tool(name: string): McpTool {
  const found = connection.tools.find((t) => t.name === `demo__${name}`);
  if (!found) throw new Error(`the demo server has no tool ${name}`);
  return found;
}

beforeAll(async () => {
  server = await startHttpServer();
  connection = await connectMcpServer('demo', { url: server.url });
});

afterAll(async () => {
  await connection?.close();
  await server?.stop();
});

describe('an MCP server over Streamable HTTP', () => {
  it('an unannotated tool is global and needs confirmation (fail closed)', () => {
    const echo = tool('echo');
    expect(echo).toMatchObject({
      readOnly: false,
      destructive: true,
      requiresConfirmation: false,
      description: 'Echoes its text',
    });
    expect(echo.concurrencyClaim?.({ text: 'x' }, { workspace: '/w', sessionId: 's1' })).toEqual({
      kind: 'exclusive',
      scope: { kind: 'global' },
    });
    expect(echo.jsonSchema).toMatchObject({ type: 'object', properties: { text: { type: 'string' } } });
  });

  it('idempotentHint alone does not make a tool shared', () => {
    const put = tool('put');
    expect(put).toMatchObject({ readOnly: false, idempotent: true });
    expect(put.concurrencyClaim?.({ key: 'k' }, { workspace: '/w', sessionId: 's1' })).toEqual({
      kind: 'exclusive',
      scope: { kind: 'global' },
    });
  });

  it('calls a tool and returns its text', async () => {
    await expect(tool('echo').execute({ text: 'hello' }, context())).resolves.toBe('hello');
  });

  it('mixed content comes back as { content } with every part', async () => {
    await expect(tool('picture').execute({}, context())).resolves.toEqual({
      content: [
        { type: 'text', text: 'a pixel' },
        { type: 'image', data: PIXEL, mimeType: 'image/png' },
      ],
    });
  });

  it('empty content falls back to the structured content', async () => {
    await expect(tool('stats').execute({}, context())).resolves.toEqual({ count: 3 });
  });

  it('a tool error is ToolError mcp_error with the server message', async () => {
    const error = await tool('fail')
      .execute({}, context())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({ code: 'mcp_error', message: expect.stringContaining('the backend said no') });
  });

  it('cancellation rejects with the signal reason', async () => {
    const controller = new AbortController();
    const reason = new ToolError('cancelled', 'run cancelled');
    setTimeout(() => controller.abort(reason), 50);
    // 'slow' never answers by itself: only the abort can end this call (else the test times out).
    await expect(tool('slow').execute({}, context({ signal: controller.signal }))).rejects.toBe(reason);
  });

  it('ctx.timeoutMs bounds the call: ToolError timeout', async () => {
    await expect(tool('slow').execute({}, context({ timeoutMs: 100 }))).rejects.toMatchObject({ code: 'timeout' });
  });
});

describe('an unreachable HTTP server', () => {
  it('a call to a server that went away is mcp_unavailable', async () => {
    const gone = await startHttpServer();
    const own = await connectMcpServer('gone', { url: gone.url });
    await gone.stop();
    const echo = own.tools.find((t) => t.name === 'gone__echo');
    await expect(echo?.execute({ text: 'x' }, context())).rejects.toMatchObject({ code: 'mcp_unavailable' });
    await own.close();
  });

  it('connecting to nothing is McpConnectionError mcp_unavailable', async () => {
    await expect(connectMcpServer('nothing', { url: 'http://127.0.0.1:1/mcp' })).rejects.toMatchObject({
      name: 'McpConnectionError',
      code: 'mcp_unavailable',
      message: expect.stringContaining('[mcp.nothing]'),
    });
  });

  it.each([
    ['both command and url', { command: 'x', url: 'http://127.0.0.1:1/' }, /exactly one/],
    ['neither', {}, /exactly one/],
    ['a bad url', { url: 'not a url' }, /not a valid URL/],
  ])('a config with %s is refused before connecting', async (_, cfg, message) => {
    await expect(connectMcpServer('bad', cfg)).rejects.toMatchObject({
      code: 'mcp_unavailable',
      message: expect.stringMatching(message),
    });
  });
});
