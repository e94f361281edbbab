/*
 * The socket under the Stately bridge: the adapter that @statelyai/inspect's createInspector
 * hands each event to, sending it to an inspector server (`createInspectorServer` of
 * `@statelyai/inspect/server`) as JSON text. It stands in for the package's WebSocketAdapter,
 * whose retry sleeps 5 s on a timer its stop() does not clear (a stopped process stays alive,
 * then connects again) and whose buffer drops events without counting them. Here, while the
 * server is away the newest events are kept and the dropped ones counted, attempts back off,
 * every timer is unref'd, stop() ends everything, and each change of connection is one log line.
 */
import WebSocket from 'ws';
import { systemClock, type Clock } from '../../core/clock.js';

export interface StatelySocketOptions {
  /** The inspector server, e.g. "ws://127.0.0.1:8080". */
  url: string;
  /** Events kept while the server is away; beyond it the oldest are dropped (and counted). */
  maxBuffered: number;
  /** Bytes the open socket may hold unsent; an event beyond them (a slow server) is dropped. Default 4 MiB. */
  maxSocketBytes?: number;
  /** The wait before the first retry, doubled after each failure up to `maxRetryMs`. Default 250. */
  firstRetryMs?: number;
  /** Default 30,000. */
  maxRetryMs?: number;
  /** The clock the retry waits run on (tests pass a SimulatedClock). Default: the system clock. */
  clock?: Clock;
  /** One line per change of connection; must not throw. */
  log: (level: 'info' | 'warn', message: string) => void;
}

export interface StatelySocketStats {
  connected: boolean;
  /** Events handed to the socket. */
  sent: number;
  /** Events waiting for the server. */
  buffered: number;
  /** Events dropped: the oldest while the server was away, or any while it read too slowly. */
  dropped: number;
  /** Connection attempts that failed, since the last success. */
  failures: number;
}

const CLOSE_TIMEOUT_MS = 1000;

export class StatelySocket {
  private ws: WebSocket | undefined;
  private readonly buffer: string[] = [];
  private retry: unknown;
  private stopped = true;
  private sent = 0;
  private dropped = 0;
  /** `dropped` when the last connection opened: what the next one reports. */
  private droppedAtConnect = 0;
  private failures = 0;
  private lastError = '';

  constructor(private readonly options: StatelySocketOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  /** Closes the socket and forgets the buffer; no timer or connection is left behind. */
  stop(): void {
    this.stopped = true;
    if (this.retry !== undefined) (this.options.clock ?? systemClock).clearTimeout(this.retry);
    this.retry = undefined;
    const ws = this.ws;
    this.ws = undefined;
    this.buffer.length = 0;
    if (!ws) return;
    ws.removeAllListeners();
    // An error after this point has no one to tell.
    ws.on('error', () => {});
    if (ws.readyState === WebSocket.OPEN) ws.close(1000, 'switchyard stopped');
    else ws.terminate();
  }

  /** One event (a JSON-safe object) to the server, or to the buffer while it is away. */
  send(event: unknown): void {
    if (this.stopped) return;
    const text = JSON.stringify(event);
    const ws = this.ws;
    if (ws?.readyState === WebSocket.OPEN) {
      if (ws.bufferedAmount > (this.options.maxSocketBytes ?? 4 * 1024 * 1024)) this.dropped += 1;
      else {
        ws.send(text);
        this.sent += 1;
      }
      return;
    }
    this.buffer.push(text);
    if (this.buffer.length > this.options.maxBuffered) {
      this.buffer.shift();
      this.dropped += 1;
    }
  }

  stats(): StatelySocketStats {
    return {
      connected: this.ws?.readyState === WebSocket.OPEN,
      sent: this.sent,
      buffered: this.buffer.length,
      dropped: this.dropped,
      failures: this.failures,
    };
  }

  private connect(): void {
    this.retry = undefined;
    // closeTimeout (ws 8.19+) bounds stop()'s closing handshake; @types/ws does not declare it yet.
    const ws = new WebSocket(this.options.url, {
      closeTimeout: CLOSE_TIMEOUT_MS,
      handshakeTimeout: 10_000,
    } as WebSocket.ClientOptions);
    this.ws = ws;
    let opened = false;
    ws.on('open', () => {
      opened = true;
      const droppedWhileAway = this.dropped - this.droppedAtConnect;
      this.droppedAtConnect = this.dropped;
      this.failures = 0;
      const dropped =
        droppedWhileAway > 0 ? `; ${droppedWhileAway} inspection events were dropped while it was away` : '';
      this.options.log(
        'info',
        `Stately inspector: connected to ${this.options.url}, sending ${this.buffer.length} buffered events${dropped}`,
      );
      for (const text of this.buffer.splice(0)) {
        ws.send(text);
        this.sent += 1;
      }
    });
    ws.on('error', (error: Error & { code?: string }) => {
      this.lastError = error.code ?? error.message;
    });
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (!this.stopped) this.scheduleRetry(opened);
    });
  }

  private scheduleRetry(wasOpen: boolean): void {
    const first = this.options.firstRetryMs ?? 250;
    const max = this.options.maxRetryMs ?? 30_000;
    const delay = Math.min(max, first * 2 ** Math.min(this.failures, 20));
    this.failures += 1;
    if (this.failures === 1) {
      const what = wasOpen
        ? `lost the connection to ${this.options.url}`
        : `cannot reach ${this.options.url}${this.lastError ? ` (${this.lastError})` : ''}`;
      this.options.log(
        'warn',
        `Stately inspector: ${what}; keeping the newest ${this.options.maxBuffered} inspection events ` +
          `for it and retrying, backing off to every ${max / 1000} s (is an inspector server, ` +
          `createInspectorServer() of @statelyai/inspect/server, listening there?)`,
      );
    }
    this.lastError = '';
    this.retry = (this.options.clock ?? systemClock).setTimeout(() => this.connect(), delay);
    // Waiting for the inspector never keeps the process alive.
    (this.retry as { unref?: () => void }).unref?.();
  }
}
