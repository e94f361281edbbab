/*
 * Per-connection backpressure: every frame to a client goes through here. What the client
 * has not read yet waits in the socket's user-space buffer (ws.bufferedAmount); once that
 * would pass the limit, the client is a slow consumer: it is closed with 4008 and sent
 * nothing more, so one slow client can never grow the server's memory without bound.
 * Streams that can wait (subscriptions) pause above a high-water mark until the client has
 * caught up, so a large replay to a fast client is not mistaken for a slow one; a client
 * that does not catch up within the drain timeout is a slow consumer too.
 */
import type { WebSocket } from 'ws';

/** Bytes go out as a text frame too: they are a JSON frame's UTF-8. */
const TEXT = { binary: false } as const;

export interface BoundedSenderOptions {
  limitBytes: number;
  /** Called once, when the limit is passed; the caller closes the connection. */
  onOverflow: (pendingBytes: number) => void;
}

export class BoundedSender {
  private dropped = false;
  private readonly drainWaiters = new Set<() => void>();
  /** The most user-space bytes ever waiting on this connection (for stats and tests). */
  maxPendingBytes = 0;
  /** Called as each frame leaves: one function for every frame, not one made per frame. */
  private readonly written = () => this.wake();

  constructor(
    private readonly ws: WebSocket,
    private readonly options: BoundedSenderOptions,
  ) {}

  get pending(): number {
    return this.ws.bufferedAmount;
  }

  get limit(): number {
    return this.options.limitBytes;
  }

  /**
   * Sends a text frame, as a string or as its UTF-8 bytes (one Buffer shared by all the
   * sockets a frame goes to); false when the connection is gone or was just dropped as too slow.
   */
  send(frame: string | Buffer): boolean {
    if (this.dropped || this.ws.readyState !== this.ws.OPEN) return false;
    const size = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.length;
    const pending = this.pending;
    // A single frame larger than the limit still goes out when nothing else waits: memory
    // stays bounded by the larger of the limit and the largest answer the server builds.
    if (pending > 0 && pending + size > this.options.limitBytes) {
      this.drop(pending + size);
      return false;
    }
    this.ws.send(frame, TEXT, this.written);
    this.maxPendingBytes = Math.max(this.maxPendingBytes, this.pending);
    return true;
  }

  /**
   * Resolves true once at most `lowWaterBytes` wait to be read, false if that takes longer
   * than `maxWaitMs` (or the connection is dropped meanwhile).
   */
  drained(lowWaterBytes: number, maxWaitMs: number): Promise<boolean> {
    if (this.dropped) return Promise.resolve(false);
    if (this.pending <= lowWaterBytes) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = (drained: boolean) => {
        clearTimeout(timer);
        this.drainWaiters.delete(check);
        resolve(drained);
      };
      const check = () => {
        if (this.dropped) done(false);
        else if (this.pending <= lowWaterBytes) done(true);
      };
      const timer = setTimeout(() => done(false), maxWaitMs);
      this.drainWaiters.add(check);
    });
  }

  /** Declares the client a slow consumer (it did not catch up in time). */
  overflow(): void {
    if (!this.dropped) this.drop(this.pending);
  }

  /** Stops sending for good (the connection is closing); wakes anything waiting for a drain. */
  stop(): void {
    this.dropped = true;
    this.wake();
  }

  private drop(pendingBytes: number): void {
    this.stop();
    this.options.onOverflow(pendingBytes);
  }

  private wake(): void {
    if (this.drainWaiters.size === 0) return;
    for (const check of [...this.drainWaiters]) check();
  }
}
