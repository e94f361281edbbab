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
import type { RunQuery, RunRecord, RunState, SteerRecord, Store } from '../../src/store/index.js';

export interface StoreHarness {
  /** A new, empty store. */
  open(): Promise<Store>;
  /** The store to read from after writing to `store` (itself, or the same data reopened). */
  reread(store: Store): Promise<Store>;
}

export function runRecord(
  runId: string,
  state: RunState,
  sessionId = 's1',
  createdAt = '2026-01-01T00:00:00.000Z',
): RunRecord {
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
        [
          ['running', 'queued'],
          ['a', 'b', 'f'],
        ],
        [['running'], ['b']],
        [['completed'], ['c']],
        [
          ['completed', 'failed', 'cancelled'],
          ['c', 'd', 'e'],
        ],
        [
          ['queued', 'running', 'completed', 'failed', 'cancelled'],
          ['a', 'b', 'c', 'd', 'e', 'f'],
        ],
        [[], []],
      ])('listRuns(%j) finds %j, in the order they were created', async (states, expected) => {
        seeded.forEach(
          ([runId, state], i) => void store.saveRun(runRecord(runId, state, 's1', `2026-01-01T00:00:0${i}.000Z`)),
        );
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

    describe('queryRuns (the runs list)', () => {
      /** A run that ended: `detail` is a failed run's error code or a cancelled run's reason. */
      const ended = (
        runId: string,
        state: 'completed' | 'failed' | 'cancelled',
        sessionId = 's1',
        detail = 'boom',
      ): RunRecord => {
        const { error: _error, output: _output, ...base } = runRecord(runId, 'running', sessionId);
        if (state === 'completed') return { ...base, state, output: 'done', endedAt: base.createdAt };
        if (state === 'failed')
          return { ...base, state, error: { code: detail, message: 'it broke' }, endedAt: base.createdAt };
        return { ...base, state, reason: detail, endedAt: base.createdAt };
      };
      const ids = (page: { runs: { runId: string }[] }) => page.runs.map((r) => r.runId);

      async function walk(read: Store, query: Omit<RunQuery, 'before'>): Promise<string[][]> {
        const pages: string[][] = [];
        let before: string | undefined;
        do {
          const page = await read.queryRuns({ ...query, ...(before !== undefined ? { before } : {}) });
          pages.push(ids(page));
          before = page.cursor;
        } while (before !== undefined && pages.length < 20);
        return pages;
      }

      it('lists open runs by when they were first saved and ended runs by when they ended, newest first', async () => {
        void store.saveRun(runRecord('a', 'queued'));
        void store.saveRun(runRecord('b', 'running'));
        void store.saveRun(runRecord('c', 'queued'));
        void store.saveRun(runRecord('c', 'running'));
        expect(ids(await store.queryRuns({ limit: 10 }))).toEqual(['c', 'b', 'a']);
        void store.saveRun(runRecord('a', 'running'));
        void store.saveRun(ended('a', 'completed'));
        void store.saveRun(runRecord('d', 'queued'));
        // An ended run saved again as it ended keeps its place.
        void store.saveRun(ended('a', 'completed'));
        const read = await reread();
        expect(ids(await read.queryRuns({ limit: 10 }))).toEqual(['d', 'a', 'c', 'b']);
      });

      it('pages with a cursor that is the last position, until no run is left', async () => {
        for (const runId of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7']) void store.saveRun(ended(runId, 'completed'));
        const read = await reread();
        expect(await walk(read, { limit: 3 })).toEqual([['r7', 'r6', 'r5'], ['r4', 'r3', 'r2'], ['r1']]);
        const first = await read.queryRuns({ limit: 3 });
        expect(first.cursor).toMatch(/^[1-9]\d*$/);
        // Exactly `limit` left: no cursor.
        expect(await walk(read, { limit: 7 })).toEqual([['r7', 'r6', 'r5', 'r4', 'r3', 'r2', 'r1']]);
        expect((await read.queryRuns({ limit: 1, before: '1' })).runs).toEqual([]);
      });

      it('a cursor stays valid for the same data read again (another process, a restart)', async () => {
        for (const runId of ['r1', 'r2', 'r3', 'r4']) void store.saveRun(runRecord(runId, 'queued'));
        const cursor = (await store.queryRuns({ limit: 2 })).cursor!;
        const read = await reread();
        expect(ids(await read.queryRuns({ limit: 2, before: cursor }))).toEqual(['r2', 'r1']);
      });

      it('a run that ends during a walk moves above the first page, and later pages go on where they were', async () => {
        for (const runId of ['a', 'b', 'c', 'd', 'e']) void store.saveRun(runRecord(runId, 'running'));
        const first = await store.queryRuns({ limit: 2 });
        expect(ids(first)).toEqual(['e', 'd']);
        void store.saveRun(ended('b', 'failed'));
        const read = await reread();
        expect(ids(await read.queryRuns({ limit: 2, before: first.cursor! }))).toEqual(['c', 'a']);
        expect(ids(await read.queryRuns({ limit: 2 }))).toEqual(['b', 'e']);
      });

      // Sessions s1 and s2; saved in this order, so each list reads backwards.
      function seedMixed(): void {
        void store.saveRun(ended('s1-done', 'completed', 's1'));
        void store.saveRun(ended('s2-timeout', 'failed', 's2', 'timeout'));
        void store.saveRun(ended('s1-interrupted', 'cancelled', 's1', 'interrupted'));
        void store.saveRun(runRecord('s2-running', 'running', 's2'));
        void store.saveRun(ended('s1-superseded', 'cancelled', 's1', 'superseded'));
        void store.saveRun(ended('s1-cancel-timeout', 'cancelled', 's1', 'timeout'));
        void store.saveRun(runRecord('s1-queued', 'queued', 's1'));
        void store.saveRun(ended('s2-done', 'completed', 's2'));
        void store.saveRun(runRecord('s1-running', 'queued', 's1'));
        void store.saveRun(runRecord('s1-running', 'running', 's1'));
      }

      it.each<[string, Omit<RunQuery, 'limit'>, string[]]>([
        [
          'everything',
          {},
          [
            's1-running',
            's2-done',
            's1-queued',
            's1-cancel-timeout',
            's1-superseded',
            's2-running',
            's1-interrupted',
            's2-timeout',
            's1-done',
          ],
        ],
        ['one session', { sessionId: 's2' }, ['s2-done', 's2-running', 's2-timeout']],
        ['an unknown session', { sessionId: 's9' }, []],
        ['open states', { states: ['queued', 'running'] }, ['s1-running', 's1-queued', 's2-running']],
        ['one open state', { states: ['running'] }, ['s1-running', 's2-running']],
        ['one ended state', { states: ['cancelled'] }, ['s1-cancel-timeout', 's1-superseded', 's1-interrupted']],
        ['open and ended states', { states: ['queued', 'completed'] }, ['s2-done', 's1-queued', 's1-done']],
        [
          'no states means any',
          { states: [] },
          [
            's1-running',
            's2-done',
            's1-queued',
            's1-cancel-timeout',
            's1-superseded',
            's2-running',
            's1-interrupted',
            's2-timeout',
            's1-done',
          ],
        ],
        [
          'an outcome: a failure code and a cancel reason alike',
          { outcome: 'timeout' },
          ['s1-cancel-timeout', 's2-timeout'],
        ],
        ['an outcome in one state', { outcome: 'timeout', states: ['failed'] }, ['s2-timeout']],
        ['an outcome only ended runs can have', { outcome: 'timeout', states: ['running'] }, []],
        ['completed is an outcome', { outcome: 'completed' }, ['s2-done', 's1-done']],
        [
          'a session and a state',
          { sessionId: 's1', states: ['cancelled', 'queued'] },
          ['s1-queued', 's1-cancel-timeout', 's1-superseded', 's1-interrupted'],
        ],
        ['a session and an outcome', { sessionId: 's1', outcome: 'superseded' }, ['s1-superseded']],
        ['a session and an open state', { sessionId: 's2', states: ['running'] }, ['s2-running']],
      ])('filters: %s', async (_name, filters, expected) => {
        seedMixed();
        const read = await reread();
        expect(ids(await read.queryRuns({ ...filters, limit: 50 }))).toEqual(expected);
        // Paged one at a time, the same runs in the same order.
        expect((await walk(read, { ...filters, limit: 1 })).flat()).toEqual(expected);
      });

      it('a filter sees the state of the latest save', async () => {
        void store.saveRun(runRecord('a', 'queued'));
        void store.saveRun(runRecord('b', 'queued'));
        void store.saveRun(runRecord('a', 'running'));
        void store.saveRun(runRecord('b', 'running'));
        void store.saveRun(ended('b', 'cancelled', 's1', 'interrupted'));
        const read = await reread();
        expect(ids(await read.queryRuns({ states: ['queued'], limit: 10 }))).toEqual([]);
        expect(ids(await read.queryRuns({ states: ['running'], limit: 10 }))).toEqual(['a']);
        expect(ids(await read.queryRuns({ outcome: 'interrupted', limit: 10 }))).toEqual(['b']);
        expect(ids(await read.queryRuns({ sessionId: 's1', states: ['running', 'queued'], limit: 10 }))).toEqual(['a']);
      });

      it('a row is the run without its request, with its outcome, counts and the start of its message', async () => {
        const long = 'x'.repeat(500);
        const base = runRecord('r1', 'running');
        void store.saveRun({
          ...ended('r1', 'failed', 's1', 'timeout'),
          request: { ...base.request, input: long, parentRunId: 'parent' },
          startedAt: '2026-01-01T00:00:01.000Z',
          endedAt: '2026-01-01T00:00:03.500Z',
          turns: 3,
          toolCalls: 5,
          carries: ['r1', 'steer-2'],
        });
        void store.saveRun(runRecord('r2', 'queued'));
        const [r2, r1] = (await (await reread()).queryRuns({ limit: 2 })).runs;
        expect(r1).toEqual({
          runId: 'r1',
          sessionId: 's1',
          agentId: 'main',
          state: 'failed',
          createdAt: '2026-01-01T00:00:00.000Z',
          startedAt: '2026-01-01T00:00:01.000Z',
          endedAt: '2026-01-01T00:00:03.500Z',
          outcome: 'timeout',
          error: { code: 'timeout', message: 'it broke' },
          turns: 3,
          toolCalls: 5,
          parentRunId: 'parent',
          carries: ['r1', 'steer-2'],
          input: `${'x'.repeat(199)}…`,
        });
        expect(r2).toEqual({
          runId: 'r2',
          sessionId: 's1',
          agentId: 'main',
          state: 'queued',
          createdAt: '2026-01-01T00:00:00.000Z',
          input: 'input of r2',
        });
      });

      it.each<[string, RunQuery]>([
        ['a limit of 0', { limit: 0 }],
        ['a limit above the maximum', { limit: 501 }],
        ['a fractional limit', { limit: 2.5 }],
        ['a cursor that is not a position', { limit: 5, before: 'abc' }],
        ['a cursor of 0', { limit: 5, before: '0' }],
      ])('rejects %s with a RangeError', async (_name, query) => {
        await expect((await reread()).queryRuns(query)).rejects.toThrow(RangeError);
      });
    });

    describe('events', () => {
      function appendRun(runId: string, sessionId: string, count: number, firstSessionSeq: number): void {
        for (let seq = 1; seq <= count; seq++)
          void store.appendEvent(runEvent(runId, sessionId, seq, firstSessionSeq + seq - 1));
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
        [
          's1',
          undefined,
          [
            ['r1', 1, 1],
            ['r1', 2, 2],
            ['r2', 1, 3],
            ['r1', 3, 4],
            ['r2', 2, 5],
          ],
        ],
        [
          's1',
          0,
          [
            ['r1', 1, 1],
            ['r1', 2, 2],
            ['r2', 1, 3],
            ['r1', 3, 4],
            ['r2', 2, 5],
          ],
        ],
        [
          's1',
          3,
          [
            ['r1', 3, 4],
            ['r2', 2, 5],
          ],
        ],
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
        [
          'a later save replaces the lane',
          [
            ['s1', [entry('a'), entry('b')]],
            ['s1', [entry('b')]],
          ],
          { s1: [entry('b')] },
        ],
        [
          'an emptied lane is gone',
          [
            ['s1', [entry('a')]],
            ['s2', [entry('c')]],
            ['s1', []],
          ],
          { s2: [entry('c')] },
        ],
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
        [
          'per session',
          [
            ['s1', ['fp-a', 'fp-b']],
            ['s2', ['fp-c']],
          ],
          { s1: ['fp-a', 'fp-b'], s2: ['fp-c'] },
        ],
        [
          'a later save replaces the set',
          [
            ['s1', ['fp-a']],
            ['s1', ['fp-b']],
          ],
          { s1: ['fp-b'] },
        ],
        [
          'an empty set is kept',
          [
            ['s1', ['fp-a']],
            ['s1', []],
          ],
          { s1: [] },
        ],
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
        expect((await (await reread()).openRuns()).map((r) => r.runId).sort()).toEqual([
          'record-only',
          'waiting',
          'working',
        ]);
      });
    });

    describe('steers', () => {
      const steer = (
        steerId: string,
        state: SteerRecord['state'],
        createdAt = '2026-01-01T00:00:00.000Z',
      ): SteerRecord => ({
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
