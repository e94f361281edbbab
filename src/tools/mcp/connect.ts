/**
 * Connects to one configured MCP server (`[mcp.<id>]`, README "Configuration") over stdio or
 * Streamable HTTP and lists its tools as Switchyard tools.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Tool as McpToolDescriptor } from '@modelcontextprotocol/sdk/types.js';
import { adaptMcpTool, type McpTool } from './mcp-tool.js';

export interface McpServerConfig {
  /** A local server: the program to spawn, talking MCP on its stdin/stdout. */
  command?: string;
  args?: string[];
  /** Merged over the engine's own environment for the spawned server. */
  env?: Record<string, string>;
  cwd?: string;
  /** A remote server reached over Streamable HTTP. Exactly one of `command` and `url`. */
  url?: string;
}

export interface McpConnection {
  id: string;
  tools: McpTool[];
  /** Ends the session; for a stdio server, ends its process. Safe to call twice. */
  close(): Promise<void>;
}

/** Connecting or listing failed; the message says which server and why. */
export class McpConnectionError extends Error {
  override readonly name = 'McpConnectionError';
  readonly code = 'mcp_unavailable';
  constructor(
    readonly serverId: string,
    message: string,
  ) {
    super(message);
  }
}

const CLIENT_INFO = { name: 'switchyard', version: '0.1.0' };
/** How much of a stdio server's stderr is kept to explain a failed start. */
const STDERR_TAIL_CHARS = 2048;

export async function connectMcpServer(id: string, cfg: McpServerConfig): Promise<McpConnection> {
  const { transport, stderrTail } = openTransport(id, cfg);
  const client = new Client(CLIENT_INFO);
  try {
    await client.connect(transport);
    const descriptors = await listAllTools(client);
    const tools = descriptors.map((descriptor) => adaptMcpTool(id, client, descriptor));
    return { id, tools, close: closeOnce(client, transport) };
  } catch (error) {
    await client.close().catch(() => undefined);
    const detail = error instanceof Error ? error.message : String(error);
    const stderr = stderrTail().trim();
    const where = cfg.command !== undefined ? `command ${JSON.stringify(cfg.command)}` : `url ${cfg.url}`;
    throw new McpConnectionError(
      id,
      `MCP server "${id}" (${where}) did not start: ${detail}` +
        (stderr ? `\nits stderr ends with:\n${stderr}` : '') +
        `\ncheck [mcp.${id}] in the config and that the server runs on its own`,
    );
  }
}

function openTransport(id: string, cfg: McpServerConfig): { transport: Transport; stderrTail: () => string } {
  const { command, url } = cfg;
  if ((command === undefined) === (url === undefined)) {
    throw new McpConnectionError(
      id,
      `[mcp.${id}] needs exactly one of "command" (a local server) and "url" (a remote server)`,
    );
  }
  if (command === undefined)
    return { transport: new StreamableHTTPClientTransport(parseUrl(id, url)), stderrTail: () => '' };
  const transport = new StdioClientTransport({
    command,
    args: cfg.args ?? [],
    env: { ...inheritedEnv(), ...cfg.env },
    ...(cfg.cwd !== undefined ? { cwd: cfg.cwd } : {}),
    // Piped so the server's logs do not interleave with ours; kept only to explain a failed start.
    stderr: 'pipe',
  });
  let tail = '';
  transport.stderr?.on('data', (chunk: Buffer | string) => {
    tail = (tail + chunk.toString()).slice(-STDERR_TAIL_CHARS);
  });
  return { transport, stderrTail: () => tail };
}

function parseUrl(id: string, url: string | undefined): URL {
  try {
    return new URL(url ?? '');
  } catch {
    throw new McpConnectionError(id, `[mcp.${id}] url ${JSON.stringify(url)} is not a valid URL`);
  }
}

/** The SDK's safe subset (HOME, PATH, SHELL, …): the engine's secrets stay out of servers. */
function inheritedEnv(): Record<string, string> {
  return getDefaultEnvironment();
}

async function listAllTools(client: Client): Promise<McpToolDescriptor[]> {
  if (!client.getServerCapabilities()?.tools) return [];
  const tools: McpToolDescriptor[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}

function closeOnce(client: Client, transport: Transport): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      // Ends the server-side session of an HTTP server; servers that do not support it answer 405.
      if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => undefined);
      await client.close();
    })();
    return closing;
  };
}
