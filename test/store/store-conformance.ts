/*
 * The Store contract as a table of behaviours, run against every implementation: MemoryStore
 * defines it, a file store must answer the same. Each case writes without waiting, then asks
 * the harness for the store to read from (the same one: read-your-writes; or a reopened one:
 * persistence), then reads.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import type { RunEvent } from '../../src/core/run-events.js';
import { admitRequest } from '../../src/core/run-request.js';
import type { Message } from '../../src/model/types.js';
import type { RunRecord, RunState, SteerRecord, Store } from '../../src/store/index.js';

export interface StoreHarness {
  /** A new, empty store. */
  open(): Promise<Store>;
  /** The store to read from after writing to `store` (itself, or the same data reopened). */
  reread(store: Store): Promise<Store>;
}

export function runRecord(runId: string, state: RunState, sessionId = 's1', createdAt = '2026-01-01T00:00:00.000Z'): RunRecord {
  return {
    runId,
    sessionId,
    agentId: 'main',
    // Any string is a valid id to a store, also one a request would refuse.
    request: { ...admitRequest({ sessionId: 'any', input: `input of ${runId}` }, defaultConfig()), runId, sessionId },
    state,
    createdAt,
    ...(state === 'completed' ? { output: 'done', endedAt: createdAt } : {}),
    ...(state === 'failed' ? { error: { code: 'boom', message: 'it broke' }, endedAt: createdAt } : {}),
  };
}

export function runEvent(runId: string, sessionId: string, seq: number, sessionSeq: number): RunEvent {
  return { type: 'turn.started', runId, sessionId, seq, sessionSeq, at: '2026-01-01T00:00:00.000Z', turn: seq };
}

const seqs = (events: RunEvent[]) => events.map((e) => [e.runId, e.seq, e.sessionSeq]);

export function describeStoreConformance(name: string, harness: StoreHarness): void {
  describe(`${name} meets the Store contract`, () => {
    let store: Store;

    beforeEach(async () => {
      store = await harness.open();
    });

    afterEach(async () => {
      await store.close();
    });

    async function reread(): Promise<Store> {
      store = await harness.reread(store);
      return store;
    }

    describe('runs', () => {
      it('an unknown run is undefined', async () => {
        expect(await (await reread()).getRun('nope')).toBeUndefined();
      });

      it('a saved run reads back; a later save replaces it', async () => {
        void store.saveRun(runRecord('r1', 'queued'));
        void store.saveRun(runRecord('r2', 'running'));
        void store.saveRun(runRecord('r1', 'completed'));
        const read = await reread();
        expect(await read.getRun('r1')).toEqual(runRecord('r1', 'completed'));
        expect(await read.getRun('r2')).toEqual(runRecord('r2', 'running'));
      });

      const seeded: [string, RunState][] = [
        ['a', 'queued'],
        ['b', 'running'],
        ['c', 'completed'],
        ['d', 'failed'],
        ['e', 'cancelled'],
        ['f', 'queued'],
      ];
      it.each<[RunState[], string[]]>([
        [['queued'], ['a', 'f']],
        [['running', 'queued'], ['a', 'b', 'f']],
        [['running'], ['b']],
        [['completed'], ['c']],
        [['completed', 'failed', 'cancelled'], ['c', 'd', 'e']],
        [['queued', 'running', 'completed', 'failed', 'cancelled'], ['a', 'b', 'c', 'd', 'e', 'f']],
        [[], []],
      ])('listRuns(%j) finds %j, in the order they were created', async (states, expected) => {
        seeded.forEach(([runId, state], i) => void store.saveRun(runRecord(runId, state, 's1', `2026-01-01T00:00:0${i}.000Z`)));
        const found = await (await reread()).listRuns(states);
        expect(found.map((r) => r.runId)).toEqual(expected);
      });

      it('listRuns follows a run through its states', async () => {
        void store.saveRun(runRecord('r1', 'queued'));
        void store.saveRun(runRecord('r1', 'running'));
        void store.saveRun(runRecord('r2', 'queued'));
        void store.saveRun(runRecord('r1', 'completed'));
        const read = await reread();
        expect((await read.listRuns(['queued', 'running'])).map((r) => r.runId)).toEqual(['r2']);
        expect((await read.listRuns(['completed'])).map((r) => r.runId)).toEqual(['r1']);
      });
    });

    describe('events', () => {
      function appendRun(runId: string, sessionId: string, count: number, firstSessionSeq: number): void {
        for (let seq = 1; seq <= count; seq++) void store.appendEvent(runEvent(runId, sessionId, seq, firstSessionSeq + seq - 1));
      }

      it.each<[number | undefined, number[]]>([
        [undefined, [1, 2, 3, 4, 5]],
        [0, [1, 2, 3, 4, 5]],
        [2, [3, 4, 5]],
        [4, [5]],
        [5, []],
        [99, []],
      ])('readEvents(run, %j) returns seqs %j', async (afterSeq, expected) => {
        appendRun('r1', 's1', 5, 1);
        appendRun('r2', 's1', 3, 6);
        const events = await (await reread()).readEvents('r1', afterSeq);
        expect(events.map((e) => e.seq)).toEqual(expected);
        expect(events.every((e) => e.runId === 'r1')).toBe(true);
      });

      it('a run with no events has an empty log', async () => {
        expect(await (await reread()).readEvents('nope')).toEqual([]);
      });

      it('an event reads back whole', async () => {
        const event: RunEvent = {
          type: 'tool.finished',
          runId: 'r1',
          sessionId: 's1',
          seq: 1,
          sessionSeq: 1,
          at: '2026-01-01T00:00:00.000Z',
          callId: 'c1',
          ok: true,
          output: { lines: ['a', 'b'], nested: { n: 1.5, flag: false, none: null } },
          durationMs: 12,
        };
        void store.appendEvent(event);
        expect(await (await reread()).readEvents('r1')).toEqual([event]);
      });

      // Session s1: r1 seq 1-2, r2 seq 1, r1 seq 3, r2 seq 2 (interleaved); session s2: r3.
      function interleave(): void {
        void store.appendEvent(runEvent('r1', 's1', 1, 1));
        void store.appendEvent(runEvent('r3', 's2', 1, 1));
        void store.appendEvent(runEvent('r1', 's1', 2, 2));
        void store.appendEvent(runEvent('r2', 's1', 1, 3));
        void store.appendEvent(runEvent('r1', 's1', 3, 4));
        void store.appendEvent(runEvent('r3', 's2', 2, 2));
        void store.appendEvent(runEvent('r2', 's1', 2, 5));
      }

      it.each<[string, number | undefined, (string | number)[][]]>([
        ['s1', undefined, [['r1', 1, 1], ['r1', 2, 2], ['r2', 1, 3], ['r1', 3, 4], ['r2', 2, 5]]],
        ['s1', 0, [['r1', 1, 1], ['r1', 2, 2], ['r2', 1, 3], ['r1', 3, 4], ['r2', 2, 5]]],
        ['s1', 3, [['r1', 3, 4], ['r2', 2, 5]]],
        ['s1', 5, []],
        ['s2', 1, [['r3', 2, 2]]],
        ['s3', 0, []],
      ])('readSessionEvents(%s, %j) returns [runId, seq, sessionSeq] %j', async (sessionId, after, expected) => {
        interleave();
        expect(seqs(await (await reread()).readSessionEvents(sessionId, after))).toEqual(expected);
      });
    });

    describe('conversations', () => {
      const m = (role: Message['role'], content: string): Message => ({ role, content });

      it('a session with no messages has an empty conversation', async () => {
        expect(await (await reread()).readConversation('s1')).toEqual([]);
      });

      it('appended messages read back in order, per session', async () => {
        void store.appendMessages('s1', [m('user', 'hi'), m('assistant', 'hello')]);
        void store.appendMessages('s2', [m('user', 'other')]);
        void store.appendMessages('s1', []);
        void store.appendMessages('s1', [
          { role: 'assistant', content: '', toolCalls: [{ id: 't1', name: 'read', args: { path: '/a' } }] },
          { role: 'tool', content: '{"ok":true}', toolCallId: 't1' },
        ]);
        const read = await reread();
        expect(await read.readConversation('s1')).toEqual([
          m('user', 'hi'),
          m('assistant', 'hello'),
          { role: 'assistant', content: '', toolCalls: [{ id: 't1', name: 'read', args: { path: '/a' } }] },
          { role: 'tool', content: '{"ok":true}', toolCallId: 't1' },
        ]);
        expect(await read.readConversation('s2')).toEqual([m('user', 'other')]);
      });

      it('a read conversation is a copy', async () => {
        void store.appendMessages('s1', [m('user', 'hi')]);
        const read = await reread();
        (await read.readConversation('s1')).push(m('user', 'sneaked in'));
        expect(await read.readConversation('s1')).toEqual([m('user', 'hi')]);
      });
    });

    describe('lanes', () => {
      const entry = (runId: string, viaInterrupt = false) => ({ runId, viaInterrupt });

      it.each<[string, [string, ReturnType<typeof entry>[]][], Record<string, ReturnType<typeof entry>[]>]>([
        ['nothing saved', [], {}],
        ['one lane', [['s1', [entry('a'), entry('b', true)]]], { s1: [entry('a'), entry('b', true)] }],
        ['a later save replaces the lane', [['s1', [entry('a'), entry('b')]], ['s1', [entry('b')]]], { s1: [entry('b')] }],
        ['an emptied lane is gone', [['s1', [entry('a')]], ['s2', [entry('c')]], ['s1', []]], { s2: [entry('c')] }],
        ['saving an empty lane for an unknown session changes nothing', [['s9', []]], {}],
      ])('%s', async (_name, saves, expected) => {
        for (const [sessionId, entries] of saves) void store.saveLane(sessionId, entries);
        expect(await (await reread()).readLanes()).toEqual(expected);
      });

      it('a saved lane is a copy of what was passed', async () => {
        const lane = [entry('a')];
        void store.saveLane('s1', lane);
        lane.push(entry('b'));
        expect(await (await reread()).readLanes()).toEqual({ s1: [entry('a')] });
      });
    });

    describe('approval grants', () => {
      it.each<[string, [string, string[]][], Record<string, string[]>]>([
        ['nothing saved', [], {}],
        ['per session', [['s1', ['fp-a', 'fp-b']], ['s2', ['fp-c']]], { s1: ['fp-a', 'fp-b'], s2: ['fp-c'] }],
        ['a later save replaces the set', [['s1', ['fp-a']], ['s1', ['fp-b']]], { s1: ['fp-b'] }],
        ['an empty set is kept', [['s1', ['fp-a']], ['s1', []]], { s1: [] }],
      ])('%s', async (_name, saves, expected) => {
        if (!store.saveGrants || !store.readGrants) throw new Error(`${store.kind} does not keep approval grants`);
        for (const [sessionId, fingerprints] of saves) void store.saveGrants(sessionId, fingerprints);
        expect(await (await reread()).readGrants?.()).toEqual(expected);
      });
    });

    describe('open runs (what recovery repairs)', () => {
      const terminalEvent = (runId: string, seq: number, sessionSeq: number): RunEvent => ({
        type: 'run.cancelled',
        runId,
        sessionId: 's1',
        seq,
        sessionSeq,
        at: '2026-01-01T00:00:00.000Z',
        reason: 'stopped',
      });

      it('a run is open until both its record and its log have ended', async () => {
        void store.saveRun(runRecord('waiting', 'queued'));
        void store.saveRun(runRecord('working', 'running'));
        void store.saveRun(runRecord('record-only', 'queued'));
        void store.saveRun(runRecord('record-only', 'cancelled'));
        void store.saveRun(runRecord('done', 'queued'));
        void store.saveRun(runRecord('done', 'cancelled'));
        void store.appendEvent(terminalEvent('done', 1, 1));
        // A run whose terminal event is still being written is open: a crash could lose the event.
        await store.durable();
        expect((await (await reread()).openRuns()).map((r) => r.runId).sort()).toEqual(['record-only', 'waiting', 'working']);
      });
    });

    describe('steers', () => {
      const steer = (steerId: string, state: SteerRecord['state'], createdAt = '2026-01-01T00:00:00.000Z'): SteerRecord => ({
        steerId,
        sessionId: 's1',
        into: 'r1',
        state,
        createdAt,
        request: runRecord(steerId, 'queued').request,
      });

      it('an unknown steer is undefined', async () => {
        expect(await (await reread()).getSteer('nope')).toBeUndefined();
      });

      it('a steer reads back as saved, the latest save winning', async () => {
        void store.saveSteer(steer('st1', 'pending'));
        void store.saveSteer({ ...steer('st1', 'consumed'), consumedAtTurn: 2 });
        expect(await (await reread()).getSteer('st1')).toEqual({ ...steer('st1', 'consumed'), consumedAtTurn: 2 });
      });

      it('pendingSteers lists the pending ones, oldest first', async () => {
        void store.saveSteer(steer('late', 'pending', '2026-01-01T00:00:02.000Z'));
        void store.saveSteer(steer('early', 'pending', '2026-01-01T00:00:01.000Z'));
        void store.saveSteer(steer('read', 'pending'));
        void store.saveSteer(steer('read', 'consumed'));
        void store.saveSteer({ ...steer('carried', 'merged'), followUp: 'early' });
        expect((await (await reread()).pendingSteers()).map((s) => s.steerId)).toEqual(['early', 'late']);
      });
    });

    it('durable resolves once what was written before it is stored', async () => {
      void store.saveRun(runRecord('r1', 'queued'));
      void store.appendEvent(runEvent('r1', 's1', 1, 1));
      await store.durable();
      expect(await store.getRun('r1')).toBeDefined();
      expect(await store.readEvents('r1')).toEqual([runEvent('r1', 's1', 1, 1)]);
    });

    it('flush resolves and kind names the store', async () => {
      void store.appendEvent(runEvent('r1', 's1', 1, 1));
      await store.flush();
      expect(typeof store.kind).toBe('string');
    });
  });
}
