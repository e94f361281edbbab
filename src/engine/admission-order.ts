/*
 * Decisions for a session are made in the order its messages arrived, whatever each submit
 * awaits before deciding (a duplicate-id lookup, the session's numbering): a submit takes a
 * ticket on arrival and decides only once every earlier ticket of its session is done. With
 * no earlier ticket pending there is nothing to wait for, and the submit decides at once, in
 * the same tick (a burst of interrupts is decided together, before any of them starts).
 */
export interface AdmissionTicket {
  /** Resolves once every earlier submit of the session has decided; undefined when none is pending. */
  ready: Promise<void> | undefined;
  /** This submit has decided (or given up): the next one may go. Call it once. */
  done(): void;
}

interface Line {
  tail: Promise<void>;
  pending: number;
}

export class AdmissionOrder {
  private readonly lines = new Map<string, Line>();

  enter(sessionId: string): AdmissionTicket {
    const line = this.lines.get(sessionId);
    const ready = line?.tail;
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const next: Line = line ?? { tail: mine, pending: 0 };
    next.tail = ready ? ready.then(() => mine) : mine;
    next.pending += 1;
    this.lines.set(sessionId, next);
    return {
      ready,
      done: () => {
        release();
        next.pending -= 1;
        if (next.pending === 0 && this.lines.get(sessionId) === next) this.lines.delete(sessionId);
      },
    };
  }
}
