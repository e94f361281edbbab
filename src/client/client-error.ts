/*
 * Every failure a client call can end in: the server's JSON-RPC error (code, message, data;
 * an engine error's own code is `data.code`), or the connection closing under the call.
 */
import type { RpcErrorBody } from '../gateway/protocol.js';

/** Client-side code (in JSON-RPC's implementation range) for "the connection closed first". */
export const CONNECTION_CLOSED = -32099;

export class ClientError extends Error {
  override readonly name = 'ClientError';
  constructor(
    /** The JSON-RPC error code (-32602 invalid params, -32000 engine error, …). */
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  /** The EngineError code (`lane_full`, `not_found`, `invalid_request`, …) when there is one. */
  get engineCode(): string | undefined {
    const code = (this.data as { code?: unknown } | undefined)?.code;
    return typeof code === 'string' ? code : undefined;
  }

  static fromBody(body: RpcErrorBody): ClientError {
    return new ClientError(body.code, body.message, body.data);
  }

  static connectionClosed(closeCode: number, reason: string): ClientError {
    const why = reason ? `: ${reason}` : '';
    return new ClientError(CONNECTION_CLOSED, `the connection closed (${closeCode}${why})`, { closeCode, reason });
  }
}
