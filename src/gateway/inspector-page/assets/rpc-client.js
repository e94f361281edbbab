// @ts-check
/*
 * The page's JSON-RPC 2.0 client over the gateway's WebSocket. src/client/ imports `ws` and
 * cannot run in a browser; this speaks the same frames: requests {jsonrpc, id, method, params}
 * with increasing numeric ids, answers matched to their call through a map of pending calls,
 * every pending call rejected when the socket closes, notifications {method, params} without
 * an id (docs/protocol.md). It connects again after a close, backing off to 8 s.
 */

/** @typedef {import('./wire-types.js').MethodName} MethodName */
/** @typedef {import('./wire-types.js').MethodResults} MethodResults */
/** @typedef {import('./wire-types.js').Notifications} Notifications */
/** @typedef {import('./wire-types.js').RpcErrorBody} RpcErrorBody */
/** @typedef {import('./wire-types.js').Call} Call */
/** @typedef {{ [N in keyof Notifications]: { method: N, params: Notifications[N] } }[keyof Notifications]} Notification */
/** @typedef {'connecting' | 'live' | 'down' | 'error'} ConnectionState */
/** @typedef {{ jsonrpc?: string, id?: number | string | null, result?: unknown, error?: RpcErrorBody, method?: string, params?: unknown }} Frame */

const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 8000;

/**
 * @param {{
 *   url: string,
 *   onOpen(): void,
 *   onNotification(notification: Notification): void,
 *   onConnection(state: ConnectionState, text: string): void,
 * }} options
 */
export function createRpcClient({ url, onOpen, onNotification, onConnection }) {
  /** @type {WebSocket | undefined} */
  let socket;
  let nextId = 1;
  /** @type {Map<number, { resolve(result: unknown): void, reject(error: Error): void }>} */
  const pending = new Map();
  let retryMs = FIRST_RETRY_MS;

  /** @type {Call} */
  function call(method, params) {
    return new Promise((resolve, reject) => {
      if (!socket || socket.readyState !== WebSocket.OPEN) {
        reject(new Error('not connected'));
        return;
      }
      const id = nextId++;
      pending.set(id, { resolve: (result) => resolve(/** @type {MethodResults[typeof method]} */ (result)), reject });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** @param {Frame} frame */
  function receive(frame) {
    if (frame.id !== undefined && frame.id !== null) {
      const waiter = typeof frame.id === 'number' ? pending.get(frame.id) : undefined;
      if (!waiter || typeof frame.id !== 'number') return;
      pending.delete(frame.id);
      if (frame.error) waiter.reject(new Error(frame.error.message));
      else waiter.resolve(frame.result);
      return;
    }
    if ((frame.method === 'inspect' || frame.method === 'event') && frame.params)
      onNotification(/** @type {Notification} */ ({ method: frame.method, params: frame.params }));
  }

  function connect() {
    const current = new WebSocket(url);
    socket = current;
    onConnection('connecting', 'connecting…');
    current.addEventListener('open', () => {
      retryMs = FIRST_RETRY_MS;
      onConnection('live', 'live');
      onOpen();
    });
    current.addEventListener('message', (message) => {
      /** @type {unknown} */
      let frame;
      try {
        frame = JSON.parse(String(message.data));
      } catch {
        return;
      }
      if (frame && typeof frame === 'object' && !Array.isArray(frame)) receive(/** @type {Frame} */ (frame));
    });
    current.addEventListener('close', (event) => {
      for (const waiter of pending.values()) waiter.reject(new Error('connection closed'));
      pending.clear();
      const why = event.code === 1006 ? 'gateway unreachable' : `closed (${event.code})`;
      onConnection('down', `${why} — retrying in ${Math.round(retryMs / 100) / 10} s`);
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    });
  }

  return {
    call,
    connect,
    get open() {
      return socket !== undefined && socket.readyState === WebSocket.OPEN;
    },
  };
}
