/*
 * The life of one WebSocket peer, written once for every connection the gateway speaks on:
 * a client or node connection on the server, the node client's connection to the gateway.
 *
 * - Every frame passes one prelude before it is dispatched: nothing once the socket is
 *   closing; a binary frame or text that is not JSON is answered with an error (id null) and
 *   the connection stays open. Frames over the socket's maxPayload never get here: ws closes
 *   the connection with 1009.
 * - A heartbeat (heartbeat.ts) pings through ping(); a peer that did not answer the previous
 *   ping is terminated.
 * - close() sends a close frame and destroys the socket if the peer has not finished the
 *   handshake within closeTimeoutMs: a peer that never reads never sees the close frame.
 * - `closed` resolves once, however the socket ends, after onClosed has run.
 */
import type { RawData, WebSocket } from 'ws';
import { closeReason } from './close-codes.js';
import { errorAnswer, readJsonFrame } from './protocol.js';

/** Where the socket's own frames go; stop() ends sending for good (the socket is closing). */
export interface FrameSender {
  send(frame: string): boolean;
  stop(): void;
}

export interface PeerSocketOptions {
  sender: FrameSender;
  /** How long a close handshake may take before the socket is destroyed. */
  closeTimeoutMs: number;
  /** The error a binary frame is answered with: it says what to send instead. */
  binaryMessage: string;
  /** A JSON frame. Contract: must not throw; answers go through the sender. */
  onFrame(value: unknown): void;
  /** Runs once, when close() or terminate() starts: release what must not outlive the connection. */
  onClosing?(): void;
  /** Runs once, when the socket has closed, before `closed` resolves. Must not throw. */
  onClosed?(code: number, reason: string): void;
  /** ws reports an error; a close always follows (1009 frame too big, 1007 bad UTF-8, a reset). */
  onError(error: Error): void;
}

export class PeerSocket {
  private closing = false;
  private alive = true;
  private terminateTimer: NodeJS.Timeout | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(
    private readonly ws: WebSocket,
    private readonly options: PeerSocketOptions,
  ) {
    this.closed = new Promise((resolve) => {
      ws.once('close', (code, reason) => {
        clearTimeout(this.terminateTimer);
        this.closing = true;
        const text = reason.toString();
        options.onClosed?.(code, text);
        resolve({ code, reason: text });
      });
    });
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    ws.on('pong', () => (this.alive = true));
    ws.on('error', (error) => options.onError(error));
  }

  /** Open and not on its way out. */
  get open(): boolean {
    return !this.closing && this.ws.readyState === this.ws.OPEN;
  }

  /** One heartbeat: false when the previous ping went unanswered (the caller terminates). */
  ping(): boolean {
    if (!this.alive) return false;
    this.alive = false;
    if (this.ws.readyState === this.ws.OPEN) this.ws.ping();
    return true;
  }

  close(code: number, reason: string): void {
    if (this.closing) return;
    this.startClosing();
    this.ws.close(code, closeReason(reason));
    this.terminateTimer = setTimeout(() => this.ws.terminate(), this.options.closeTimeoutMs).unref();
  }

  /** Destroys the socket now, also one that is already closing. */
  terminate(): void {
    if (!this.closing) this.startClosing();
    this.ws.terminate();
  }

  private startClosing(): void {
    this.closing = true;
    this.options.sender.stop();
    this.options.onClosing?.();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.closing) return;
    const parsed = readJsonFrame(data, isBinary, this.options.binaryMessage);
    if (!parsed.ok) {
      this.options.sender.send(errorAnswer(null, parsed.code, parsed.message));
      return;
    }
    this.options.onFrame(parsed.value);
  }
}

/** A sender without a buffer limit: frames go out while the socket is open, and are dropped after. */
export function directSender(ws: WebSocket): FrameSender {
  let stopped = false;
  return {
    send: (frame) => {
      if (stopped || ws.readyState !== ws.OPEN) return false;
      ws.send(frame);
      return true;
    },
    stop: () => {
      stopped = true;
    },
  };
}
