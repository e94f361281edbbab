/*
 * The gateway backend (`switchyard acp --gateway URL`): the same ACP front in front of a running
 * gateway or cluster, through the typed client. The gateway's engine runs the tools, on its
 * machine: a session's cwd must exist there (the same machine, or a shared file system). It
 * neither loads sessions (no gateway method returns a session's stored events and inputs) nor
 * connects the editor's MCP servers (they would run here, the tools there).
 */
import type { SwitchyardClient } from '../client/index.js';
import type { AcpBackend } from './backend.js';

export function gatewayBackend(client: SwitchyardClient): AcpBackend {
  return {
    // The gateway's [approval] tier is not visible to clients; a session starts in the default.
    defaultTier: 'auto',
    submit: (request) => client.submit(request),
    wait: (runId) => client.wait(runId),
    history: (runId) => client.history(runId),
    follow(sessionId, fromSeq) {
      const subscription = client.subscribe({ sessionId, ...(fromSeq !== undefined ? { fromSeq } : {}) });
      return { events: subscription, ready: subscription.ready, close: () => subscription.close() };
    },
    stopSession: async (sessionId) => {
      await client.stopSession(sessionId);
    },
    respondApproval: (approvalId, decision) => client.respondApproval(approvalId, decision),
    close: () => client.close(),
  };
}
