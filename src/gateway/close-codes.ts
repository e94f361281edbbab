/*
 * What a close frame from the gateway may say: the codes it uses beyond the standard ones,
 * and a reason cut to the length the WebSocket protocol allows. Both ends of a connection
 * (the gateway, the typed client, the node client) read these, so they live apart from the
 * method table and the connections.
 */

/** Close codes the gateway uses beyond the standard ones. */
export const GatewayCloseCode = {
  /** The server is shutting down (standard "going away"). */
  GoingAway: 1001,
  /** A frame larger than maxPayloadBytes (closed by ws). */
  MessageTooBig: 1009,
  /** The client did not read fast enough: resubscribe with fromSeq = the last seq seen. */
  SlowConsumer: 4008,
  /** A node connection was refused: its name is taken or missing, or the gateway takes no nodes. */
  NodeRefused: 4009,
} as const;

/** The longest close reason the WebSocket protocol allows, in bytes. */
const MAX_CLOSE_REASON_BYTES = 123;

/** A close reason cut to what the protocol allows (123 bytes), on a character boundary. */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= MAX_CLOSE_REASON_BYTES) return text;
  let cut = text.slice(0, MAX_CLOSE_REASON_BYTES - 1);
  while (Buffer.byteLength(`${cut}…`) > MAX_CLOSE_REASON_BYTES) cut = cut.slice(0, -1);
  return `${cut}…`;
}
