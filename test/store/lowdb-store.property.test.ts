/*
 * LowdbStore behaves as MemoryStore for all operation sequences: random event appends over
 * four runs in two sessions, run saves in every state, messages, lane saves, reopens (close,
 * then open the directory again) and full comparisons of every read, with segments of 1 to 5
 * items so that every boundary is crossed. Writes are never awaited between operations.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { LowdbStore, MemoryStore, type RunState, type Store } from '../../src/store/index.js';
import { runEvent, runRecord } from './store-conformance.js';
import { tempDirs } from '../support/temp-dirs.js';

const RUNS = ['r0', 'r1', 'r2', 'r3'];
const SESSIONS = ['s0', 's1'];
const STATES: RunState[] = ['queued', 'running', 'completed', 'cancelled', 'failed'];
const sessionOf = (run: number) => SESSIONS[run % 2]!;

type Operation =
  | { kind: 'append'; run: number; count: number }
  | { kind: 'save'; run: number; state: RunState }
  | { kind: 'say'; session: number; count: number }
  | { kind: 'lane'; session: number; runs: number[] }
  | { kind: 'reopen' }
  | { kind: 'compare' };

const operation: fc.Arbitrary<Operation> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      run: fc.nat(3),
      count: fc.integer({ min: 1, max: 7 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('save' as const), run: fc.nat(3), state: fc.constantFrom(...STATES) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('say' as const),
      session: fc.nat(1),
      count: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('lane' as const),
      session: fc.nat(1),
      runs: fc.array(fc.nat(3), { maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'compare' as const }) },
);

const tempDir = tempDirs('switchyard-model-', 'afterAll');

async function everything(store: Store) {
  const sortedIds = async (states: RunState[]) => (await store.listRuns(states)).map((r) => r.runId).sort();
  return {
    runs: await Promise.all(RUNS.map((id) => store.getRun(id))),
    events: await Promise.all(RUNS.flatMap((id) => [0, 1, 3, 8].map((after) => store.readEvents(id, after)))),
    sessionEvents: await Promise.all(
      SESSIONS.flatMap((id) => [0, 2, 5, 13].map((after) => store.readSessionEvents(id, after))),
    ),
    conversations: await Promise.all(SESSIONS.map((id) => store.readConversation(id))),
    lanes: await store.readLanes(),
    open: await sortedIds(['queued', 'running']),
    all: await sortedIds(STATES),
  };
}

it('LowdbStore answers every read as MemoryStore does, for all operation sequences', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 5 }),
      fc.array(operation, { maxLength: 40 }),
      async (segmentItems, operations) => {
        const dir = await tempDir();
        const model = new MemoryStore();
        let store = await LowdbStore.open(dir, { segmentItems });
        const seq = RUNS.map(() => 0);
        const sessionSeq = SESSIONS.map(() => 0);
        let said = 0;
        try {
          for (const op of operations) {
            switch (op.kind) {
              case 'append':
                for (let i = 0; i < op.count; i++) {
                  const event = runEvent(RUNS[op.run]!, sessionOf(op.run), ++seq[op.run]!, ++sessionSeq[op.run % 2]!);
                  model.appendEvent(event);
                  void store.appendEvent(event);
                }
                break;
              case 'save': {
                const record = runRecord(
                  RUNS[op.run]!,
                  op.state,
                  sessionOf(op.run),
                  `2026-01-01T00:00:0${op.run}.000Z`,
                );
                model.saveRun(record);
                void store.saveRun(record);
                break;
              }
              case 'say': {
                const messages = Array.from({ length: op.count }, () => ({
                  role: 'user' as const,
                  content: `m${++said}`,
                }));
                model.appendMessages(SESSIONS[op.session]!, messages);
                void store.appendMessages(SESSIONS[op.session]!, messages);
                break;
              }
              case 'lane': {
                const entries = op.runs.map((run) => ({ runId: RUNS[run]!, viaInterrupt: run % 2 === 0 }));
                model.saveLane(SESSIONS[op.session]!, entries);
                void store.saveLane(SESSIONS[op.session]!, entries);
                break;
              }
              case 'reopen':
                await store.close();
                store = await LowdbStore.open(dir, { segmentItems });
                break;
              case 'compare':
                expect(await everything(store)).toEqual(await everything(model));
                break;
            }
          }
          expect(await everything(store)).toEqual(await everything(model));
        } finally {
          await store.close();
        }
      },
    ),
    { numRuns: 40 },
  );
});
