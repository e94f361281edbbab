/*
 * The limiter's persistent FIFO (machines/wait-queue.ts): every version keeps what it held,
 * whatever is done later to it or to any other version — pushes, pops (with compaction),
 * removals — checked against plain arrays over random histories that branch from old versions.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backOf,
  emptyQueue,
  frontOf,
  itemsOf,
  popped,
  pushed,
  sizeOf,
  someItem,
  withoutItems,
  type WaitQueue,
} from '../../machines/wait-queue.js';

type Op =
  { kind: 'push'; from: number } | { kind: 'pop'; from: number } | { kind: 'remove'; from: number; pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('push' as const), from: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('pop' as const), from: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), from: fc.nat(), pick: fc.nat() }) },
);

describe('WaitQueue, a persistent FIFO', () => {
  it('every version holds what it held when it was made, whatever is done later to it or to others', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), fc.boolean(), (ops, mostlyNewest) => {
        const versions: { queue: WaitQueue<number>; model: number[] }[] = [{ queue: emptyQueue(), model: [] }];
        let next = 0;
        for (const o of ops) {
          // Mostly from the newest version, as a statechart's context evolves; sometimes from an old one.
          const index = mostlyNewest && o.from % 8 !== 0 ? versions.length - 1 : o.from % versions.length;
          const { queue, model } = versions[index]!;
          if (o.kind === 'push') versions.push({ queue: pushed(queue, next), model: [...model, next++] });
          else if (o.kind === 'pop') versions.push({ queue: popped(queue), model: model.slice(1) });
          else {
            const victim = model.length === 0 ? -1 : model[o.pick % model.length]!;
            versions.push({
              queue: withoutItems(queue, (item) => item === victim),
              model: model.filter((item) => item !== victim),
            });
          }
        }
        for (const { queue, model } of versions) {
          expect(itemsOf(queue)).toEqual(model);
          expect(sizeOf(queue)).toBe(model.length);
          expect(frontOf(queue)).toBe(model[0]);
          expect(backOf(queue)).toBe(model.at(-1));
          if (model.length > 0) expect(someItem(queue, (item) => item === model.at(-1))).toBe(true);
          expect(someItem(queue, (item) => item === -1)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a long-lived queue lets go of the items taken from it', () => {
    let queue = emptyQueue<number>();
    for (let i = 0; i < 100; i++) queue = pushed(queue, i);
    // A steady queue of 100: 10,000 arrive and 10,000 are taken.
    for (let i = 100; i < 10_100; i++) queue = popped(pushed(queue, i));
    expect(itemsOf(queue)).toEqual(Array.from({ length: 100 }, (_, i) => 10_000 + i));
    expect(queue.items.length).toBeLessThanOrEqual(2 * 100 + 64);
  });
});
