/*
 * What the engine suites share: an engine per test (closed afterwards, with no unexpected
 * error reported), a way to move a SimulatedClock (settle, until and deferred are in
 * test/support/), a model and a tool that hold a run where the test wants it, an event recorder, and the log invariants.
 */
import { afterEach, expect } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { createEngine, isTerminalEvent } from '../../src/engine/index.js';
import type { Engine, EngineOptions, EventStreamFilter, RunEvent, StreamEvent } from '../../src/engine/index.js';
import type { PartialConfig } from '../../src/config/index.js';
import type { Message, ModelProvider } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { deferred, type Deferred } from '../support/deferred.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

/** Moves a SimulatedClock forward and lets what it woke up run. */
export async function advance(clock: SimulatedClock, ms: number): Promise<void> {
  clock.increment(ms);
  await settle();
}

/**
 * One engine per call, closed after the test; every error the engine reports through
 * onError fails the test, because none is expected in these suites.
 */
export function engineFixture(): (options?: EngineOptions) => Promise<Engine> {
  const open: Engine[] = [];
  const errors: unknown[] = [];
  const tempDir = tempDirs('switchyard-engine-test-', 'afterAll');
  let workspaceRoot: string | undefined;
  afterEach(async () => {
    for (const engine of open.splice(0)) await engine.close();
    expect(errors.splice(0)).toEqual([]);
  });
  return async (options = {}) => {
    workspaceRoot ??= await tempDir();
    const engine = await createEngine({
      onError: (error) => errors.push(error),
      ...options,
      config: withWorkspaceRoot(options.config, workspaceRoot),
    });
    open.push(engine);
    return engine;
  };
}

/** Keeps the workspaces that tool calls create out of the repository. */
export function withWorkspaceRoot(config: EngineOptions['config'], workspaceRoot: string): PartialConfig {
  if (typeof config === 'string') throw new TypeError('engine tests pass config as an object');
  return { ...config, sandbox: { workspace_root: workspaceRoot, ...config?.sandbox } };
}

export function isRunEvent(event: StreamEvent): event is RunEvent {
  return 'runId' in event;
}

/** Every event of a stream, in arrival order, collected in the background. */
export interface EventRecorder {
  all: StreamEvent[];
  runEvents(): RunEvent[];
  ofRun(runId: string): RunEvent[];
  types(runId: string): string[];
  close(): void;
  /** Resolves when the iteration has ended (after close()). */
  ended: Promise<void>;
}

export function recordEvents(engine: Engine, filter: EventStreamFilter = {}): EventRecorder {
  const stream = engine.events(filter);
  const all: StreamEvent[] = [];
  const ended = (async () => {
    for await (const event of stream) all.push(event);
  })();
  const runEvents = () => all.filter(isRunEvent);
  return {
    all,
    runEvents,
    ofRun: (runId) => runEvents().filter((e) => e.runId === runId),
    types: (runId) =>
      runEvents()
        .filter((e) => e.runId === runId)
        .map((e) => e.type),
    close: () => stream.close(),
    ended,
  };
}

/** A run's log: seq 1..n without gaps, exactly one terminal event, and it is the last. */
export function expectWellFormedHistory(history: RunEvent[]): void {
  expect(history.length).toBeGreaterThan(0);
  expect(history.map((e) => e.seq)).toEqual(history.map((_, i) => i + 1));
  expect(history.filter(isTerminalEvent)).toHaveLength(1);
  expect(isTerminalEvent(history[history.length - 1]!)).toBe(true);
}

/** sessionSeq of each session's events, in arrival order, is 1..n without gaps. */
export function expectGaplessSessionSeq(events: RunEvent[]): void {
  const bySession = new Map<string, number[]>();
  for (const event of events)
    bySession.set(event.sessionId, [...(bySession.get(event.sessionId) ?? []), event.sessionSeq]);
  for (const [sessionId, seqs] of bySession) {
    expect({ sessionId, seqs }).toEqual({ sessionId, seqs: seqs.map((_, i) => i + 1) });
  }
}

export interface HeldCall {
  runId: string;
  turn: number;
  input: string;
  messages: Message[];
}

/**
 * A model whose every turn waits until the test answers it (release) or the run's signal
 * aborts it: the test decides exactly when each run leaves its model turn.
 */
export function heldModel() {
  const pending = new Map<string, Deferred<string>>();
  const calls: HeldCall[] = [];
  const provider: ModelProvider = {
    async *complete(request) {
      const runId = request.context?.runId ?? '';
      calls.push({
        runId,
        turn: request.context?.turn ?? 0,
        input: request.context?.input ?? '',
        messages: request.messages.map((m) => ({ ...m })),
      });
      const gate = deferred<string>();
      pending.set(runId, gate);
      const onAbort = () => {
        pending.delete(runId);
        gate.reject(Object.assign(new Error('model turn aborted'), { name: 'AbortError' }));
      };
      if (request.signal.aborted) onAbort();
      else request.signal.addEventListener('abort', onAbort, { once: true });
      const text = await gate.promise;
      yield { type: 'message', text, toolCalls: [] };
    },
  };
  return {
    provider,
    calls,
    /** The runs whose model turn is waiting for an answer. */
    thinking: (): string[] => [...pending.keys()],
    isThinking: (runId: string): boolean => pending.has(runId),
    answer(runId: string, text = `answer of ${runId}`): void {
      const gate = pending.get(runId);
      if (!gate) throw new Error(`the model is not answering ${runId}`);
      pending.delete(runId);
      gate.resolve(text);
    },
  };
}

/** A tool named "hold" that waits until the test releases it or the run's signal aborts. */
export function holdTool() {
  const holding = new Map<string, Deferred<unknown>>();
  const signals = new Map<string, AbortSignal>();
  const tool = defineTool({
    name: 'hold',
    description: 'Waits until released or cancelled.',
    input: z.object({}).strict(),
    execute: (_input, ctx) => {
      const gate = deferred<unknown>();
      holding.set(ctx.runId, gate);
      signals.set(ctx.runId, ctx.signal);
      ctx.signal.addEventListener(
        'abort',
        () => {
          holding.delete(ctx.runId);
          gate.reject(new Error('hold aborted'));
        },
        { once: true },
      );
      return gate.promise;
    },
  });
  return {
    tool,
    isHolding: (runId: string): boolean => holding.has(runId),
    signalOf: (runId: string): AbortSignal | undefined => signals.get(runId),
    release(runId: string, output: unknown = 'released'): void {
      const gate = holding.get(runId);
      if (!gate) throw new Error(`hold is not holding ${runId}`);
      holding.delete(runId);
      gate.resolve(output);
    },
  };
}

export { SimulatedClock };

/** A read-only no-op tool `look({n})` answering `{seen: n}`: a call with nothing to wait for. */
export const look = defineTool({
  name: 'look',
  description: 'A read-only no-op.',
  input: z.object({ n: z.number() }),
  readOnly: true,
  execute: async ({ n }) => ({ seen: n }),
});
