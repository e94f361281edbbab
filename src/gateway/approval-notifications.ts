/*
 * approval.requested notifications go to every client connection, whatever it subscribed
 * to: a human at any client may answer. The engine tells the gateway through its
 * onApprovalRequested listener (a cluster node: of the approvals of every process).
 */
import type { ConnectionRegistry } from './connection-registry.js';
import type { GatewayEngine } from './method-handlers.js';
import { toJson } from './protocol.js';

/** Returns the function that stops forwarding. */
export function forwardApprovals(
  engine: Pick<GatewayEngine, 'onApprovalRequested'>,
  registry: ConnectionRegistry,
): () => void {
  return engine.onApprovalRequested(({ approvalId, runId, callId, action }) =>
    registry.notifyClients('approval.requested', toJson({ approvalId, runId, callId, action })),
  );
}
