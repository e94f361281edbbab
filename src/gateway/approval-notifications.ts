/*
 * approval.requested notifications go to every client connection, whatever it subscribed
 * to: a human at any client may answer.
 */
import type { EventStream } from '../engine/index.js';
import type { RunEventOf } from '../core/run-events.js';
import type { ConnectionRegistry } from './connection-registry.js';
import type { GatewayLogger } from './logger.js';
import { toJson } from './protocol.js';

/** Reads the engine-wide stream until it is closed. */
export async function forwardApprovals(
  stream: EventStream,
  registry: ConnectionRegistry,
  logger: GatewayLogger,
): Promise<void> {
  try {
    for await (const event of stream) {
      if (event.type !== 'approval.requested') continue;
      const { approvalId, runId, callId, action } = event as RunEventOf<'approval.requested'>;
      registry.notifyClients('approval.requested', toJson({ approvalId, runId, callId, action }));
    }
  } catch (error) {
    logger.error('approval notifications stopped', error);
  }
}
