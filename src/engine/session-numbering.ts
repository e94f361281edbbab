/*
 * A session's event numbering (`sessionSeq`): loaded from the stored session log before the
 * session's first event in this process, forgotten when the session goes idle or another
 * process takes it, so the numbering always continues the stored log without a gap.
 */
import type { Store } from '../store/types.js';
import type { EventLog } from './event-log.js';

export class SessionNumbering {
  /** Sessions whose sessionSeq counter is in memory (known to continue the stored log). */
  private readonly loaded = new Set<string>();

  constructor(private readonly deps: { store: Store; log: EventLog }) {}

  /** True when the session's numbering is known without reading the store. */
  isLoaded(sessionId: string): boolean {
    return this.loaded.has(sessionId);
  }

  /** Continues the session's event numbering from its stored log. */
  async load(sessionId: string): Promise<void> {
    const last = await this.stored(sessionId);
    if (!this.loaded.has(sessionId)) this.deps.log.restoreSessionSeq(sessionId, last);
    this.loaded.add(sessionId);
  }

  /** The last sessionSeq the store holds for the session (0 for none). */
  async stored(sessionId: string): Promise<number> {
    const store = this.deps.store;
    if (store.lastSessionSeq) return store.lastSessionSeq(sessionId);
    return (await store.readSessionEvents(sessionId)).at(-1)?.sessionSeq ?? 0;
  }

  /** Marks the session's numbering as restored (by recovery). */
  markLoaded(sessionId: string): void {
    this.loaded.add(sessionId);
  }

  /** The session keeps nothing in memory any more: its numbering is reloaded on its next event. */
  forget(sessionId: string): void {
    this.deps.log.forgetSession(sessionId);
    this.loaded.delete(sessionId);
  }
}
