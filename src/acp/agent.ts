/*
 * The ACP agent: Switchyard behind the Agent Client Protocol (v1, the SDK's stable entry
 * point). initialize advertises what we do; session/new and session/load open a session on the
 * backend; session/prompt is a run; session/cancel stops the session's work; session/set_mode
 * picks the approval tier. The SDK parses every request's params and answers malformed frames;
 * what a handler throws becomes a JSON-RPC error.
 */
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import {
  agent,
  methods,
  PROTOCOL_VERSION,
  RequestError,
  type AgentApp,
  type AgentContext,
  type InitializeResponse,
  type McpServer,
} from '@agentclientprotocol/sdk';
import type { AcpBackend } from './backend.js';
import { AcpSession } from './acp-session.js';
import { replayUpdates } from './session-replay.js';
import { isApprovalTier, sessionModeState } from './session-modes.js';

export interface AgentOptions {
  backend: AcpBackend;
  /** Switchyard's version, for agentInfo. */
  version: string;
  /** Where warnings go: stderr, since stdout carries the protocol. */
  warn(message: string): void;
  /**
   * Whether a session's cwd can be checked here (it exists and is a directory). False behind a
   * gateway, whose engine sees its own file system.
   */
  checkCwd: boolean;
}

export function switchyardAgent(options: AgentOptions): AgentApp {
  const { backend, warn } = options;
  const sessions = new Map<string, AcpSession>();
  let client: AgentContext | undefined;

  const sessionOf = (sessionId: string): AcpSession => {
    const session = sessions.get(sessionId);
    if (!session) throw RequestError.sessionNotFound(sessionId);
    return session;
  };

  const open = async (
    sessionId: string,
    cwd: string,
    mcpServers: readonly McpServer[],
    mode = backend.defaultTier,
  ): Promise<AcpSession> => {
    if (!client) throw RequestError.internalError(undefined, 'the connection is not open');
    await checkCwd(cwd, options.checkCwd);
    sessions.get(sessionId)?.close();
    const session = new AcpSession({ sessionId, cwd, mode, backend, client, warn });
    sessions.set(sessionId, session);
    if (backend.connectMcpServers) await backend.connectMcpServers(sessionId, mcpServers, cwd);
    else if (mcpServers.length > 0)
      warn(
        `session ${sessionId}: ${mcpServers.length} MCP server(s) left out: behind a gateway they cannot be connected`,
      );
    return session;
  };

  const app = agent({ name: 'switchyard' })
    .onConnect((connection) => {
      client = connection.client;
      void connection.closed.then(() => {
        for (const session of sessions.values()) session.close();
        sessions.clear();
      });
    })
    .onRequest(methods.agent.initialize, (): InitializeResponse => ({
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: backend.storedSession !== undefined,
        // Text and resource links are the baseline every agent takes; nothing beyond it.
        promptCapabilities: { image: false, audio: false, embeddedContext: false },
        // Stdio servers (the baseline) only, and only in process.
        mcpCapabilities: { http: false, sse: false },
      },
      agentInfo: { name: 'switchyard', title: 'Switchyard', version: options.version },
      authMethods: [],
    }))
    .onRequest(methods.agent.session.new, async ({ params }) => {
      const session = await open(randomUUID(), params.cwd, params.mcpServers);
      await session.follow();
      return { sessionId: session.id, modes: sessionModeState(session.mode) };
    })
    .onRequest(methods.agent.session.prompt, async ({ params }) => ({
      stopReason: await sessionOf(params.sessionId).prompt(params.prompt),
    }))
    .onNotification(methods.agent.session.cancel, async ({ params }) => {
      await sessions.get(params.sessionId)?.cancel();
    })
    .onRequest(methods.agent.session.setMode, ({ params }) => {
      const session = sessionOf(params.sessionId);
      if (!isApprovalTier(params.modeId)) {
        throw RequestError.invalidParams(
          { modeId: params.modeId },
          `no mode "${params.modeId}"; the modes are plan, ask, auto and full`,
        );
      }
      session.mode = params.modeId;
      return {};
    });

  const { storedSession } = backend;
  if (storedSession) {
    app.onRequest(methods.agent.session.load, async ({ params }) => {
      const stored = await storedSession(params.sessionId);
      if (!stored) throw RequestError.sessionNotFound(params.sessionId);
      const session = await open(
        params.sessionId,
        params.cwd,
        params.mcpServers,
        stored.lastTier ?? backend.defaultTier,
      );
      await session.send(replayUpdates(stored, session.updates));
      await session.follow(stored.events.at(-1)?.sessionSeq ?? 0);
      return { modes: sessionModeState(session.mode) };
    });
  }
  return app;
}

async function checkCwd(cwd: string, onThisMachine: boolean): Promise<void> {
  if (!isAbsolute(cwd)) throw RequestError.invalidParams({ cwd }, `cwd must be an absolute path, not "${cwd}"`);
  if (!onThisMachine) return;
  const info = await stat(cwd).catch(() => undefined);
  if (!info?.isDirectory())
    throw RequestError.invalidParams({ cwd }, `cwd ${cwd} is not a directory here; open a project folder`);
}
