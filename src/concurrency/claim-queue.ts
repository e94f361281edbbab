/*
 * The claim queue of one workspace (docs/claims.md, "Claims across runs"): every tool call of
 * every run working there, in arrival order, each holding its whole claim or waiting for it.
 * One rule decides: a call holds when no earlier call of another run conflicts with it. So a
 * call takes its whole claim at once or nothing (a waiter holds nothing: no deadlock), waiters
 * on one resource are served first come, first served, and a later call that conflicts with
 * nobody ahead of it goes at once. Calls of one run never wait here for each other: their
 * batch already ordered them. Pure bookkeeping: no clock, no I/O.
 */
import type { ClaimBlock, ClaimHolder } from '../../machines/vocabulary.js';
import type { Claim } from './claims.js';
import { conflictReason } from './conflict.js';

export type { ClaimBlock, ClaimHolder };

export interface QueuedClaim extends ClaimHolder {
  /** Unique per entry: a ticket number. */
  key: string;
  claim: Claim;
}

interface Entry extends QueuedClaim {
  held: boolean;
}

/**
 * Whether a call's claim is held across runs. A delegation (`session_send`, a sessions claim)
 * holds nothing: its footprint is its child run's, whose calls pass the registry themselves,
 * and a parent waiting on its child must not block it.
 */
export function holdsAcrossRuns(claim: Claim): boolean {
  return !(claim.kind === 'exclusive' && claim.scope.kind === 'sessions');
}

export class ClaimQueue {
  private readonly entries: Entry[] = [];

  get size(): number {
    return this.entries.length;
  }

  /** Adds a call at the back: undefined when it holds its claim now, else what it waits for. */
  enter(claim: QueuedClaim): ClaimBlock | undefined {
    const entry: Entry = { ...claim, held: false };
    this.entries.push(entry);
    const block = this.blockOf(this.entries.length - 1);
    entry.held = block === undefined;
    return block;
  }

  /** Removes a call (holding or waiting); returns the calls that hold their claim because of it. */
  leave(key: string): QueuedClaim[] {
    const at = this.entries.findIndex((e) => e.key === key);
    if (at < 0) return [];
    this.entries.splice(at, 1);
    const now: QueuedClaim[] = [];
    for (let i = at; i < this.entries.length; i++) {
      const entry = this.entries[i]!;
      if (entry.held || this.blockOf(i) !== undefined) continue;
      entry.held = true;
      const { held: _held, ...claim } = entry;
      now.push(claim);
    }
    return now;
  }

  /** What the entry at `index` waits for: the first conflicting holder ahead of it, else the first conflicting waiter. */
  private blockOf(index: number): ClaimBlock | undefined {
    const entry = this.entries[index]!;
    let waiter: ClaimBlock | undefined;
    for (let j = 0; j < index; j++) {
      const ahead = this.entries[j]!;
      if (ahead.runId === entry.runId) continue;
      const resource = conflictReason(ahead.claim, entry.claim);
      if (resource === undefined) continue;
      const block = { blockedBy: { runId: ahead.runId, callId: ahead.callId, tool: ahead.tool }, resource };
      if (ahead.held) return block;
      waiter ??= block;
    }
    return waiter;
  }
}
