/**
 * What an invoked `fromPromise` actor costs with today's XState, next to what the engine's
 * charts did instead (issue 26.2): an entry action that starts the promise and an event sent
 * back when it settles, with an exit action to abandon it. The same tiny chart both ways —
 * idle -> working (one async step, answered) -> done — so the difference is the mechanism:
 * an actor per step (created, started, its snapshot, its done event, stopped) against one
 * function call and one event. Run under whatever else loads the machine: the ratio, taken
 * in one run, is the figure to read; the absolute times move with the load.
 */
import { createActor, fromPromise, setup } from 'xstate';
import type { BenchFigure, Benchmark } from './types.js';

const ACTORS = 2_000;
/** Each actor does this many async steps (a run's turns, a batch's calls). */
const STEPS = 10;
const ROUNDS = 5;

const step = () => Promise.resolve(1);

/** Each step an invoked promise actor: the chart owns it, the state's exit stops it. */
const invoked = setup({
  types: { context: {} as { left: number }, input: {} as { steps: number } },
  actors: { work: fromPromise<number>(step) },
}).createMachine({
  context: ({ input }) => ({ left: input.steps }),
  initial: 'working',
  states: {
    working: {
      invoke: {
        src: 'work',
        onDone: [
          {
            guard: ({ context }) => context.left > 1,
            target: 'working',
            reenter: true,
            actions: ({ context }) => void (context.left -= 1),
          },
          { target: 'done' },
        ],
      },
    },
    done: { type: 'final' },
  },
});

/** Each step an entry action that starts the promise and an event back (abort on exit), as the hosts did. */
const sent = setup({
  types: {
    context: {} as { left: number },
    input: {} as { steps: number },
    events: {} as { type: 'DONE'; output: number },
  },
  actions: {
    start: ({ self }) => {
      const controller = new AbortController();
      void step().then((output) => {
        if (!controller.signal.aborted) self.send({ type: 'DONE', output });
      });
    },
    abandon: () => {},
  },
}).createMachine({
  context: ({ input }) => ({ left: input.steps }),
  initial: 'working',
  states: {
    working: {
      entry: 'start',
      exit: 'abandon',
      on: {
        DONE: [
          {
            guard: ({ context }) => context.left > 1,
            target: 'working',
            reenter: true,
            actions: ({ context }) => void (context.left -= 1),
          },
          { target: 'done' },
        ],
      },
    },
    done: { type: 'final' },
  },
});

/** Milliseconds to run ACTORS actors of `machine` to their end, all at once. */
async function timeOf(machine: typeof invoked | typeof sent): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from(
      { length: ACTORS },
      () =>
        new Promise<void>((resolve) => {
          const actor = createActor(machine as typeof invoked, { input: { steps: STEPS } });
          actor.subscribe({ complete: () => resolve() });
          actor.start();
        }),
    ),
  );
  return performance.now() - started;
}

const bench: Benchmark = async () => {
  await timeOf(invoked);
  await timeOf(sent); // warm-up
  const withInvoke: number[] = [];
  const withSend: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    withInvoke.push(await timeOf(invoked));
    withSend.push(await timeOf(sent));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const perStep = (ms: number) => (ms * 1000) / (ACTORS * STEPS);
  const value = perStep(median(withInvoke));
  const baseline = perStep(median(withSend));
  const spread = (xs: number[]) => `${perStep(Math.min(...xs)).toFixed(2)}–${perStep(Math.max(...xs)).toFixed(2)}`;
  const figures: BenchFigure[] = [
    {
      figure: 'async step: invoked fromPromise vs entry action + event',
      value,
      unit: 'µs/step',
      baseline,
      ratio: value / baseline,
      note:
        `${ACTORS} actors × ${STEPS} steps, median of ${ROUNDS} rounds; invoke ${spread(withInvoke)} µs, ` +
        `action+event ${spread(withSend)} µs (run-to-run spread, under the machine's load)`,
    },
  ];
  return figures;
};

export default bench;
