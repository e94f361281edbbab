/*
 * Claims across runs (docs/claims.md, "Claims across runs"): the claim queue of a workspace and
 * the in-process registry over it. A table of rules first, then properties over random
 * workloads: a call holds only when nothing of another run ahead of it conflicts, conflicting
 * waiters are served first come first served, waiters hold nothing (so releasing every holder
 * drains the queue: no deadlock), calls of one run never wait for each other, and workspaces
 * never meet.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ClaimQueue,
  Claims,
  claimsConflict,
  holdsAcrossRuns,
  InProcessClaimRegistry,
} from '../../src/concurrency/index.js';
import type { Claim, ClaimBlock, ClaimTicket } from '../../src/concurrency/index.js';
import { claim as anyClaim } from './arbitraries.js';

const write = (...paths: string[]) => Claims.paths(paths);
const read = (...paths: string[]) => Claims.shared(paths);

interface Entry {
  runId: string;
  claim: Claim;
}

/** Enters each call in order; returns, per call, undefined (it holds) or the runId it waits for. */
function enterAll(entries: Entry[]): (string | undefined)[] {
  const queue = new ClaimQueue();
  return entries.map(
    (e, i) =>
      queue.enter({ key: String(i), runId: e.runId, callId: `c${i}`, tool: 't', claim: e.claim })?.blockedBy.runId,
  );
}

describe('the claim queue, by example', () => {
  const rows: { case: string; entries: Entry[]; waitsFor: (string | undefined)[] }[] = [
    {
      case: 'two runs writing one file: the second waits',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'B', claim: write('/w/a') },
      ],
      waitsFor: [undefined, 'A'],
    },
    {
      case: 'writes to different files go together',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'B', claim: write('/w/b') },
      ],
      waitsFor: [undefined, undefined],
    },
    {
      case: 'a read of a file another run writes waits',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'B', claim: read('/w/a') },
      ],
      waitsFor: [undefined, 'A'],
    },
    {
      case: 'reads never wait for reads',
      entries: [
        { runId: 'A', claim: read('/w/a') },
        { runId: 'B', claim: read('/w/a') },
        { runId: 'C', claim: Claims.shared() },
      ],
      waitsFor: [undefined, undefined, undefined],
    },
    {
      case: 'a directory write meets a write inside it',
      entries: [
        { runId: 'A', claim: write('/w/src') },
        { runId: 'B', claim: write('/w/src/a.ts') },
      ],
      waitsFor: [undefined, 'A'],
    },
    {
      case: 'global meets everything',
      entries: [
        { runId: 'A', claim: Claims.global() },
        { runId: 'B', claim: read('/w/a') },
        { runId: 'C', claim: Claims.nodes(['n1']) },
      ],
      waitsFor: [undefined, 'A', 'A'],
    },
    {
      case: 'calls of one run never wait for each other (their batch ordered them)',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'A', claim: Claims.global() },
      ],
      waitsFor: [undefined, undefined],
    },
    {
      case: 'first come, first served: a later call waits behind an earlier waiter it conflicts with',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'B', claim: write('/w/a', '/w/b') },
        { runId: 'C', claim: write('/w/b') },
      ],
      waitsFor: [undefined, 'A', 'B'],
    },
    {
      case: 'a later call that conflicts with no one ahead goes at once, past the waiters',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'B', claim: write('/w/a') },
        { runId: 'C', claim: write('/w/c') },
      ],
      waitsFor: [undefined, 'A', undefined],
    },
    {
      case: 'the holder in the way is named before an earlier waiter',
      entries: [
        { runId: 'A', claim: write('/w/a') },
        { runId: 'B', claim: write('/w/a', '/w/b') },
        { runId: 'C', claim: write('/w/c') },
        { runId: 'D', claim: write('/w/b', '/w/c') },
      ],
      waitsFor: [undefined, 'A', undefined, 'C'],
    },
  ];
  it.each(rows)('$case', ({ entries, waitsFor }) => {
    expect(enterAll(entries)).toEqual(waitsFor);
  });

  it('names the resource: the conflict reason of the two claims', () => {
    const queue = new ClaimQueue();
    queue.enter({ key: '1', runId: 'A', callId: 'a1', tool: 'file_write', claim: write('/w/a.ts') });
    const block = queue.enter({ key: '2', runId: 'B', callId: 'b1', tool: 'file_edit', claim: write('/w/a.ts') });
    expect(block).toEqual({ blockedBy: { runId: 'A', callId: 'a1', tool: 'file_write' }, resource: 'path /w/a.ts' });
  });

  it('leaving hands the claim to the waiters that now conflict with no one ahead, in arrival order', () => {
    const queue = new ClaimQueue();
    const enter = (key: string, runId: string, claim: Claim) =>
      queue.enter({ key, runId, callId: key, tool: 't', claim });
    enter('1', 'A', write('/w/a', '/w/b'));
    enter('2', 'B', write('/w/a'));
    enter('3', 'C', write('/w/b'));
    enter('4', 'D', write('/w/a'));
    expect(queue.leave('1').map((c) => c.key)).toEqual(['2', '3']);
    expect(queue.leave('3')).toEqual([]);
    expect(queue.leave('2').map((c) => c.key)).toEqual(['4']);
    expect(queue.leave('nope')).toEqual([]);
  });

  it('a waiter that leaves holds nothing and blocks no one any more', () => {
    const queue = new ClaimQueue();
    queue.enter({ key: '1', runId: 'A', callId: 'a', tool: 't', claim: write('/w/a') });
    queue.enter({ key: '2', runId: 'B', callId: 'b', tool: 't', claim: write('/w/a', '/w/b') });
    expect(queue.enter({ key: '3', runId: 'C', callId: 'c', tool: 't', claim: write('/w/b') })?.blockedBy.runId).toBe(
      'B',
    );
    expect(queue.leave('2').map((c) => c.key)).toEqual(['3']);
  });

  it('a delegation (a sessions claim) holds nothing across runs; every other claim does', () => {
    expect(holdsAcrossRuns(Claims.sessions(['review']))).toBe(false);
    for (const held of [Claims.global(), write('/w/a'), read('/w/a'), Claims.shared(), Claims.nodes(['n1'])])
      expect(holdsAcrossRuns(held)).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties over random workloads on the registry.

type Op = { kind: 'acquire'; run: number; workspace: number; claim: Claim } | { kind: 'release'; pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('acquire' as const),
      run: fc.integer({ min: 0, max: 4 }),
      workspace: fc.integer({ min: 0, max: 1 }),
      claim: anyClaim,
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }), weight: 2 },
);

interface Ticket {
  id: number;
  runId: string;
  workspace: string;
  claim: Claim;
  ticket: ClaimTicket;
  held: boolean;
  waitedFor?: ClaimBlock;
  released: boolean;
  heldCount: number;
}

/** Drives a registry through `ops`, checking after every step; returns what is left. */
async function drive(ops: Op[]) {
  const registry = new InProcessClaimRegistry();
  const tickets: Ticket[] = [];
  const check = () => {
    const holding = tickets.filter((t) => t.held && !t.released);
    for (const a of holding) {
      for (const b of holding) {
        if (a.id < b.id && a.runId !== b.runId && a.workspace === b.workspace && claimsConflict(a.claim, b.claim)) {
          throw new Error(
            `tickets ${a.id} (${a.runId}) and ${b.id} (${b.runId}) hold conflicting claims in ${a.workspace} at once`,
          );
        }
      }
    }
    // First come, first served: no waiter is passed by a later conflicting call of another run.
    for (const waiter of tickets.filter((t) => !t.held && !t.released)) {
      const overtaken = holding.find(
        (h) =>
          h.id > waiter.id &&
          h.runId !== waiter.runId &&
          h.workspace === waiter.workspace &&
          claimsConflict(h.claim, waiter.claim),
      );
      if (overtaken)
        throw new Error(`ticket ${overtaken.id} holds a claim that ticket ${waiter.id}, earlier, still waits for`);
    }
    if (tickets.some((t) => t.heldCount > 1)) throw new Error('a ticket heard held() twice');
  };
  for (const o of ops) {
    if (o.kind === 'acquire') {
      const entry: Ticket = {
        id: tickets.length,
        runId: `run${o.run}`,
        workspace: `/ws${o.workspace}`,
        claim: o.claim,
        held: false,
        released: false,
        heldCount: 0,
        ticket: undefined as unknown as ClaimTicket,
      };
      tickets.push(entry);
      entry.ticket = registry.acquire(
        { workspace: entry.workspace, runId: entry.runId, callId: `c${entry.id}`, tool: 't', claim: entry.claim },
        {
          waiting: (block) => {
            if (entry.held || entry.waitedFor) throw new Error(`ticket ${entry.id}: waiting() after held() or twice`);
            entry.waitedFor = block;
          },
          held: () => {
            if (entry.released) throw new Error(`ticket ${entry.id}: held() after release`);
            entry.held = true;
            entry.heldCount += 1;
          },
        },
      );
    } else {
      const open = tickets.filter((t) => !t.released);
      if (open.length === 0) continue;
      const t = open[o.pick % open.length]!;
      t.released = true;
      t.ticket.release();
      t.ticket.release(); // idempotent
    }
    await Promise.resolve(); // grants after a release arrive a microtask later
    check();
  }
  return { registry, tickets, check };
}

describe('the claim registry, properties (fast-check)', () => {
  it(
    'never lets two runs hold conflicting claims in one workspace, serves conflicting waiters in arrival order, ' +
      'and tells each call held() at most once',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
          await drive(ops);
        }),
        { numRuns: 400 },
      );
    },
  );

  it('no deadlock: waiters hold nothing, so releasing every holder, one at a time, lets every call hold in the end', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 60 }), async (ops) => {
        const { registry, tickets, check } = await drive(ops);
        for (let guard = 0; tickets.some((t) => !t.released); guard++) {
          if (guard > tickets.length) throw new Error('open calls remain but none holds');
          const holder = tickets.find((t) => t.held && !t.released);
          if (!holder) throw new Error(`${tickets.filter((t) => !t.released).length} calls wait and nobody holds`);
          holder.released = true;
          holder.ticket.release();
          await Promise.resolve();
          check();
        }
        expect(tickets.every((t) => t.held || t.waitedFor === undefined || t.released)).toBe(true);
        expect(registry.waiting).toBe(0);
      }),
      { numRuns: 400 },
    );
  });

  it('a call waits only for a call of another run in the same workspace, and names it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const { tickets } = await drive(ops);
        for (const t of tickets.filter((x) => x.waitedFor)) {
          const by = tickets.find((x) => `c${x.id}` === t.waitedFor!.blockedBy.callId)!;
          expect(by.runId).not.toBe(t.runId);
          expect(by.workspace).toBe(t.workspace);
          expect(by.id).toBeLessThan(t.id);
          expect(claimsConflict(by.claim, t.claim)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a call that nothing blocks hears held() inside acquire(); one that waits hears it a microtask after the release', async () => {
    const registry = new InProcessClaimRegistry();
    const heard: string[] = [];
    const listener = (name: string) => ({
      waiting: () => heard.push(`${name} waits`),
      held: () => heard.push(`${name} holds`),
    });
    const a = registry.acquire(
      { workspace: '/w', runId: 'A', callId: 'a', tool: 't', claim: write('/w/f') },
      listener('a'),
    );
    expect(heard).toEqual(['a holds']);
    registry.acquire({ workspace: '/w', runId: 'B', callId: 'b', tool: 't', claim: write('/w/f') }, listener('b'));
    registry.acquire({ workspace: '/other', runId: 'C', callId: 'c', tool: 't', claim: write('/w/f') }, listener('c'));
    expect(heard).toEqual(['a holds', 'b waits', 'c holds']);
    a.release();
    heard.push('released a');
    await Promise.resolve();
    expect(heard).toEqual(['a holds', 'b waits', 'c holds', 'released a', 'b holds']);
  });

  it('a waiter released before its grant arrives hears nothing and passes the claim on', async () => {
    const registry = new InProcessClaimRegistry();
    const heard: string[] = [];
    const listener = (name: string) => ({
      waiting: () => heard.push(`${name} waits`),
      held: () => heard.push(`${name} holds`),
    });
    const a = registry.acquire(
      { workspace: '/w', runId: 'A', callId: 'a', tool: 't', claim: write('/w/f') },
      listener('a'),
    );
    const b = registry.acquire(
      { workspace: '/w', runId: 'B', callId: 'b', tool: 't', claim: write('/w/f') },
      listener('b'),
    );
    registry.acquire({ workspace: '/w', runId: 'C', callId: 'c', tool: 't', claim: write('/w/f') }, listener('c'));
    a.release();
    b.release();
    await Promise.resolve();
    expect(heard).toEqual(['a holds', 'b waits', 'c waits', 'c holds']);
  });
});
