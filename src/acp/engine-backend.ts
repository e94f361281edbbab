/*
 * The in-process backend: an engine in this process (`switchyard acp` without --gateway), on
 * the store the command opened, with the editor's MCP servers connected per session. Sessions
 * can be loaded: the store holds their events and each run's input.
 */
import type { McpServer } from '@agentclientprotocol/sdk';
import type { ApprovalTier } from '../approval/index.js';
import { createEngine } from '../engine/index.js';
import type { RunEvent } from '../core/run-events.js';
import type { Store } from '../store/types.js';
import type { AcpBackend, SessionFeed, StoredSession } from './backend.js';
import { SessionMcpServers } from './session-mcp-servers.js';

export interface EngineBackendOptions {
  /** A TOML config file; without it, the embedded defaults. */
  config?: string;
  /** The store the engine keeps everything in; read directly to load sessions. */
  store: Store;
  /** Where warnings and unexpected errors go (stderr: stdout carries the protocol). */
  warn(message: string): void;
}

export async function engineBackend(options: EngineBackendOptions): Promise<AcpBackend> {
  const mcp = new SessionMcpServers(options.warn);
  const engine = await createEngine({
    ...(options.config !== undefined ? { config: options.config } : {}),
    store: options.store,
    sessionTools: (sessionId) => mcp.tools(sessionId),
    onError: (error) =>
      options.warn(`engine: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`),
  });
  const { store } = options;
  return {
    defaultTier: engine.currentConfig().approval.tier,
    submit: (request) => engine.submit(request),
    wait: (runId) => engine.wait(runId),
    history: (runId) => engine.history(runId),
    follow(sessionId: string, fromSeq?: number): SessionFeed {
      const stream = engine.events({ sessionId, ...(fromSeq !== undefined ? { fromSeq } : {}) });
      return {
        events: runEventsOf(stream),
        ready: Promise.resolve(),
        close: () => stream.close(),
      };
    },
    stopSession: async (sessionId) => {
      await engine.stopSession(sessionId);
    },
    respondApproval: async (approvalId, decision) => engine.respondApproval(approvalId, decision),
    async storedSession(sessionId: string): Promise<StoredSession | undefined> {
      const events = await store.readSessionEvents(sessionId);
      if (events.length === 0) return undefined;
      const inputs = new Map<string, string>();
      let lastTier: ApprovalTier | undefined;
      for (const runId of new Set(events.map((event) => event.runId))) {
        const record = await store.getRun(runId);
        if (!record) continue;
        inputs.set(runId, record.request.input);
        lastTier = record.request.approvalTier ?? lastTier;
      }
      return { events, inputs, ...(lastTier !== undefined ? { lastTier } : {}) };
    },
    connectMcpServers: (sessionId: string, servers: readonly McpServer[], cwd: string) =>
      mcp.connect(sessionId, servers, cwd),
    async close(): Promise<void> {
      await engine.close();
      await mcp.close();
    },
  };
}

/** A session filter yields only run events; the type says so. */
async function* runEventsOf(stream: AsyncIterable<unknown>): AsyncIterable<RunEvent> {
  for await (const event of stream) {
    if (typeof event === 'object' && event !== null && 'runId' in event) yield event as RunEvent;
  }
}
