/*
 * The WebSocket upgrade, handled here rather than by ws so that a request without the token
 * (401), from a foreign browser origin (403), with an unknown role or a node nobody takes
 * (403), or during shutdown (503) is answered before any WebSocket exists.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket, WebSocketServer } from 'ws';
import { GatewayCloseCode } from './close-codes.js';
import { connectionRoleOf } from './nodes/node-handshake.js';
import { checkRequest, rejectUpgrade, type GuardOptions } from './request-guard.js';

export interface UpgradeOptions {
  wss: WebSocketServer;
  guard: GuardOptions;
  /** True once shutdown has begun. */
  closing(): boolean;
  /** Whether node clients are taken (the gateway has a node registry). */
  takesNodes: boolean;
  /** An accepted client socket. */
  onClient(ws: WebSocket, req: IncomingMessage): void;
  /** An accepted node socket, with the node's name. */
  onNode(ws: WebSocket, req: IncomingMessage, name: string): void;
}

export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export function upgradeHandler(options: UpgradeOptions): UpgradeListener {
  return (req, socket, head) => {
    // A client that resets mid-handshake must not bring the server down.
    const onSocketError = () => socket.destroy();
    socket.on('error', onSocketError);
    if (options.closing()) {
      rejectUpgrade(socket, 503, 'the server is shutting down');
      return;
    }
    const verdict = checkRequest(req, options.guard);
    if (!verdict.ok) {
      rejectUpgrade(socket, verdict.status, verdict.reason);
      return;
    }
    const role = connectionRoleOf(req);
    if (role.kind === 'refused' || (role.kind === 'node' && !options.takesNodes)) {
      rejectUpgrade(
        socket,
        403,
        role.kind === 'refused'
          ? role.reason
          : 'this gateway takes no node clients (it was started without a node registry)',
      );
      return;
    }
    options.wss.handleUpgrade(req, socket, head, (ws) => {
      socket.off('error', onSocketError);
      if (options.closing()) {
        ws.close(GatewayCloseCode.GoingAway, 'the server is shutting down');
        return;
      }
      if (role.kind === 'node') options.onNode(ws, req, role.name);
      else options.onClient(ws, req);
    });
  };
}
