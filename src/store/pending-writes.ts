/*
 * The writes a store has started and not yet finished, so a caller can wait for exactly
 * those that were asked for before it (Store.durable) without waiting for later ones.
 */
export class PendingWrites {
  private readonly pending = new Set<Promise<void>>();

  /** Tracks `write` until it settles; returns it unchanged. */
  track(write: Promise<void>): Promise<void> {
    this.pending.add(write);
    const done = () => this.pending.delete(write);
    write.then(done, done);
    return write;
  }

  /** Resolves once every write tracked so far has completed; rejects with the first failure. */
  settled(): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return Promise.all(this.pending).then(() => {});
  }
}
