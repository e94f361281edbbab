/*
 * The heartbeat of a set of peers (the gateway's connections, or the node client's one):
 * every interval each peer is pinged, and one that has not answered the previous ping with
 * a pong is terminated — a peer that vanished without a close (a pulled cable, a frozen
 * process) is noticed within two intervals.
 */

/** What a heartbeat needs of a peer (PeerSocket, or a connection built on one). */
export interface HeartbeatPeer {
  /** Pings; false when the previous ping went unanswered. */
  ping(): boolean;
  terminate(): void;
}

/** Starts beating every `everyMs` (0 or less: off); returns the function that stops it. */
export function startHeartbeat(everyMs: number, peers: () => Iterable<HeartbeatPeer>): () => void {
  if (!(everyMs > 0)) return () => {};
  const timer = setInterval(() => {
    for (const peer of [...peers()]) if (!peer.ping()) peer.terminate();
  }, everyMs).unref();
  return () => clearInterval(timer);
}
