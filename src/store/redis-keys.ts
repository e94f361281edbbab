/*
 * Every key the Redis store writes, under one prefix ([store] key_prefix). docs/cluster.md
 * lists them with their types; the cluster's own keys (leases, permits, nodes) sit beside
 * these under the same prefix.
 */
import type { RunList } from './run-index.js';

export class RedisKeys {
  constructor(readonly prefix: string) {}

  /** STRING: the run record (JSON). */
  run(runId: string): string {
    return `${this.prefix}run:${runId}`;
  }

  /** What the runs index's keys begin with (the placement script adds the rest). */
  runIndex(): string {
    return `${this.prefix}runs-`;
  }

  /** STRING counter: the last position given to a run (queryRuns; run-index.ts). */
  runPositions(): string {
    return `${this.runIndex()}position`;
  }

  /** HASH run id -> "position, state, outcome" where the runs index has it. */
  runPlaces(): string {
    return `${this.runIndex()}place`;
  }

  /** ZSET of run ids scored by position: one list of the runs index (run-index.ts). */
  runList(list: RunList): string {
    switch (list.kind) {
      case 'all':
        return `${this.runIndex()}by:all`;
      case 'session':
        return `${this.runIndex()}by:session:${list.sessionId}`;
      case 'state':
        return `${this.runIndex()}by:state:${list.state}`;
      case 'outcome':
        return `${this.runIndex()}by:outcome:${list.state}:${list.outcome}`;
    }
  }

  /** ZSET of the runs not ended, scored by position. */
  unendedRuns(): string {
    return `${this.runIndex()}by:unended`;
  }

  /** ZSET of runs that may still be open, scored by creation time: all, or one session's. */
  open(sessionId?: string): string {
    return sessionId === undefined ? `${this.prefix}open` : `${this.prefix}open:${sessionId}`;
  }

  /** STREAM of a run's events, entry id `<seq>-0`. */
  runEvents(runId: string): string {
    return `${this.prefix}events:${runId}`;
  }

  /** STREAM of a session's events, entry id `<sessionSeq>-0`. */
  sessionEvents(sessionId: string): string {
    return `${this.prefix}session-events:${sessionId}`;
  }

  /** STREAM of every run's events, capped: what live subscribers to all runs follow. */
  feed(): string {
    return `${this.prefix}feed`;
  }

  /** LIST of a session's conversation messages (JSON). */
  conversation(sessionId: string): string {
    return `${this.prefix}conversation:${sessionId}`;
  }

  /** STRING: a session's wait lane (JSON), absent when empty. */
  lane(sessionId: string): string {
    return `${this.prefix}lane:${sessionId}`;
  }

  /** SET of sessions whose lane is not empty. */
  lanes(): string {
    return `${this.prefix}lanes`;
  }

  /** HASH session id -> its approval grants (JSON array of fingerprints). */
  grants(): string {
    return `${this.prefix}grants`;
  }

  /** STRING: the steer record (JSON). */
  steer(steerId: string): string {
    return `${this.prefix}steer:${steerId}`;
  }

  /** ZSET of pending steers, scored by creation time: all, or one session's. */
  pendingSteers(sessionId?: string): string {
    return sessionId === undefined ? `${this.prefix}steers:pending` : `${this.prefix}steers:pending:${sessionId}`;
  }

  /** STRING counter: a session's fencing token, raised by every new owner (docs/cluster.md). */
  fence(sessionId: string): string {
    return `${this.prefix}fence:${sessionId}`;
  }

  /** STRING counter: writes refused because their fencing token was stale. */
  refusedWrites(): string {
    return `${this.prefix}stats:refused-writes`;
  }
}
