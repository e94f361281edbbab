/*
 * Session grants: the fingerprints a person allowed with `allow_session`, per session. Plain
 * data (toJSON/fromJSON) so a store can persist it; onChange reports every change for that.
 */

/** The persisted form: session id -> granted fingerprints, in the order they were granted. */
export type SessionGrantsData = Record<string, string[]>;

export interface SessionGrantsOptions {
  /** Called after a session's grants changed, with all of that session's fingerprints. */
  onChange?(sessionId: string, fingerprints: string[]): void;
}

export class SessionGrants {
  private readonly bySession = new Map<string, Set<string>>();

  constructor(private readonly options: SessionGrantsOptions = {}) {}

  static fromJSON(data: SessionGrantsData, options: SessionGrantsOptions = {}): SessionGrants {
    const grants = new SessionGrants(options);
    for (const [sessionId, fingerprints] of Object.entries(data)) {
      if (fingerprints.length > 0) grants.bySession.set(sessionId, new Set(fingerprints));
    }
    return grants;
  }

  has(sessionId: string, fingerprint: string): boolean {
    return this.bySession.get(sessionId)?.has(fingerprint) ?? false;
  }

  /** Grants the fingerprint for the session; false (and no onChange) when it already was. */
  add(sessionId: string, fingerprint: string): boolean {
    let set = this.bySession.get(sessionId);
    if (set?.has(fingerprint)) return false;
    if (!set) this.bySession.set(sessionId, (set = new Set()));
    set.add(fingerprint);
    this.options.onChange?.(sessionId, [...set]);
    return true;
  }

  /** Loads grants persisted earlier (after a restart), without reporting them as changes. */
  restore(sessionId: string, fingerprints: readonly string[]): void {
    if (fingerprints.length === 0) return;
    const set = this.bySession.get(sessionId) ?? new Set<string>();
    for (const fingerprint of fingerprints) set.add(fingerprint);
    this.bySession.set(sessionId, set);
  }

  toJSON(): SessionGrantsData {
    return Object.fromEntries([...this.bySession].map(([sessionId, set]) => [sessionId, [...set]]));
  }
}
