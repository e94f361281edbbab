/*
 * The MCP servers an editor passes with session/new or session/load, connected for that
 * session only: their tools reach the session's runs through createEngine({ sessionTools })
 * and no other session's. Stdio servers only (what we advertise); a server that fails to start
 * is reported and left out, so one broken server in the editor's settings does not block the
 * session.
 */
import type { McpServer } from '@agentclientprotocol/sdk';
import { connectMcpServer, type McpConnection } from '../tools/mcp/index.js';
import type { AnyTool } from '../tools/tool.js';

export class SessionMcpServers {
  private readonly bySession = new Map<string, McpConnection[]>();

  /** `warn`: where a server that was left out is reported (stderr). */
  constructor(private readonly warn: (message: string) => void) {}

  /** Connects `servers` for the session, replacing the ones it had (a session loaded again). */
  async connect(sessionId: string, servers: readonly McpServer[], cwd: string): Promise<void> {
    const connections: McpConnection[] = [];
    const ids = new Set<string>();
    for (const server of servers) {
      if (!('command' in server)) {
        this.warn(`MCP server "${server.name}" (${server.type}) left out: only stdio servers are supported`);
        continue;
      }
      // Tool names are <id>__<tool>: two servers with one name must not collide.
      let id = server.name;
      for (let n = 2; ids.has(id); n++) id = `${server.name}_${n}`;
      ids.add(id);
      try {
        connections.push(
          await connectMcpServer(id, {
            command: server.command,
            args: server.args,
            env: Object.fromEntries(server.env.map((variable) => [variable.name, variable.value])),
            cwd,
          }),
        );
      } catch (error) {
        this.warn(`MCP server "${server.name}" left out: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    await this.disconnect(sessionId);
    if (connections.length > 0) this.bySession.set(sessionId, connections);
  }

  /** The tools of the session's servers (what sessionTools answers). */
  tools(sessionId: string): AnyTool[] {
    return (this.bySession.get(sessionId) ?? []).flatMap((connection) => connection.tools);
  }

  async disconnect(sessionId: string): Promise<void> {
    const connections = this.bySession.get(sessionId) ?? [];
    this.bySession.delete(sessionId);
    await Promise.all(connections.map((connection) => connection.close()));
  }

  async close(): Promise<void> {
    await Promise.all([...this.bySession.keys()].map((sessionId) => this.disconnect(sessionId)));
  }
}
