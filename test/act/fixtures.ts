/*
 * What the Act-phase suites share: a "probe" tool whose claim, duration, failure and hold the
 * test chooses per call through its arguments, and which records the order (and virtual time)
 * of every start and finish; a model that plays a list of tool batches; and a driver that
 * moves a SimulatedClock from one probe wake-up to the next until a run ends.
 */
import { expect } from 'vitest';
import { z } from 'zod';
import type { Claim } from '../../src/concurrency/index.js';
import { Claims } from '../../src/concurrency/index.js';
import { sleep, systemClock, type Clock } from '../../src/core/clock.js';
import type { Engine, EngineOptions, RunEvent, RunEventOf } from '../../src/engine/index.js';
import type { PartialConfig } from '../../src/config/index.js';
import type { Message, ScriptContext, ScriptTurn } from '../../src/model/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { ToolError, defineTool } from '../../src/tools/index.js';
import { SimulatedClock } from '../engine/fixtures.js';
import { deferred, type Deferred } from '../support/deferred.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

export const ClaimSpecSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('shared'), reads: z.array(z.string()).optional() }),
  z.object({ kind: z.literal('paths'), items: z.array(z.string()) }),
  z.object({ kind: z.literal('nodes'), items: z.array(z.string()) }),
  z.object({ kind: z.literal('sessions'), items: z.array(z.string()) }),
  z.object({ kind: z.literal('global') }),
]);
export type ClaimSpec = z.infer<typeof ClaimSpecSchema>;

export const ProbeInputSchema = z
  .object({
    id: z.string(),
    claim: ClaimSpecSchema,
    /** Virtual (or real) milliseconds the call takes; 0 = finishes at once. */
    ms: z.number().int().nonnegative().optional(),
    /** Waits until the test releases it (or its signal aborts). */
    hold: z.boolean().optional(),
    /** Throws this message (with `code` when given) instead of returning. */
    fail: z.string().optional(),
    code: z.string().optional(),
    note: z.string().optional(),
  })
  .strict();
export type ProbeInput = z.infer<typeof ProbeInputSchema>;

export function claimOf(spec: ClaimSpec): Claim {
  switch (spec.kind) {
    case 'shared':
      return Claims.shared(spec.reads);
    case 'paths':
      return Claims.paths(spec.items);
    case 'nodes':
      return Claims.nodes(spec.items);
    case 'sessions':
      return Claims.sessions(spec.items);
    case 'global':
      return Claims.global();
  }
}

export interface ProbeRecord {
  id: string;
  kind: 'start' | 'end' | 'error' | 'abort';
  /** Global order of this record among all records of the probe. */
  seq: number;
  at: number;
}

interface RunningCall {
  id: string;
  /** Virtual time it wakes up at (timed calls only). */
  wakeAt?: number;
}

/** The probe tool and everything it saw. `clock` is what its timed calls sleep on. */
export function probeTool(clock: Clock = systemClock, name = 'probe') {
  const records: ProbeRecord[] = [];
  const running = new Map<string, RunningCall>();
  const claimCalls = new Map<string, number>();
  const executions = new Map<string, number>();
  const inputs = new Map<string, ProbeInput>();
  const signals = new Map<string, AbortSignal>();
  const timeouts = new Map<string, number | undefined>();
  const holds = new Map<string, Deferred<unknown>>();
  let seq = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  const now = () => (clock.now ? clock.now() : Date.now());
  const record = (id: string, kind: ProbeRecord['kind']) => records.push({ id, kind, seq: ++seq, at: now() });

  const tool = defineTool({
    name,
    description: 'A test tool: claims, waits and fails as its arguments say, and records what happened.',
    input: ProbeInputSchema,
    concurrencyClaim: (input) => {
      claimCalls.set(input.id, (claimCalls.get(input.id) ?? 0) + 1);
      return claimOf(input.claim);
    },
    execute: async (input, ctx) => {
      executions.set(input.id, (executions.get(input.id) ?? 0) + 1);
      inputs.set(input.id, input);
      signals.set(input.id, ctx.signal);
      timeouts.set(input.id, ctx.timeoutMs);
      record(input.id, 'start');
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const entry: RunningCall = { id: input.id };
      running.set(input.id, entry);
      try {
        let output: unknown = { id: input.id };
        if (input.hold) {
          const gate = deferred<unknown>();
          holds.set(input.id, gate);
          const onAbort = () => gate.reject(new Error(`${input.id} aborted`));
          if (ctx.signal.aborted) onAbort();
          else ctx.signal.addEventListener('abort', onAbort, { once: true });
          output = await gate.promise;
        } else if (input.ms !== undefined && input.ms > 0) {
          entry.wakeAt = now() + input.ms;
          await sleep(clock, input.ms, ctx.signal);
        }
        if (input.fail !== undefined) {
          record(input.id, 'error');
          throw input.code !== undefined ? new ToolError(input.code, input.fail) : new Error(input.fail);
        }
        record(input.id, 'end');
        return output;
      } catch (error) {
        if (ctx.signal.aborted) record(input.id, 'abort');
        throw error;
      } finally {
        inFlight -= 1;
        running.delete(input.id);
        holds.delete(input.id);
      }
    },
  });

  const startOf = (id: string) => records.find((r) => r.id === id && r.kind === 'start');
  const endOf = (id: string) => records.find((r) => r.id === id && r.kind !== 'start');
  return {
    tool,
    records,
    claimCalls,
    executions,
    inputs,
    signals,
    timeouts,
    get maxInFlight() {
      return maxInFlight;
    },
    get inFlight() {
      return inFlight;
    },
    /** Ids in the order they started / ended. */
    started: () => records.filter((r) => r.kind === 'start').map((r) => r.id),
    ended: () => records.filter((r) => r.kind !== 'start').map((r) => r.id),
    startOf,
    endOf,
    isRunning: (id: string) => running.has(id),
    isHolding: (id: string) => holds.has(id),
    /** The earliest virtual time a running timed call wakes up at. */
    nextWake(): number | undefined {
      const times = [...running.values()].map((r) => r.wakeAt).filter((t): t is number => t !== undefined);
      return times.length === 0 ? undefined : Math.min(...times);
    },
    release(id: string, output: unknown = { id }): void {
      const gate = holds.get(id);
      if (!gate) throw new Error(`probe ${id} is not holding`);
      gate.resolve(output);
    },
  };
}

export type Probe = ReturnType<typeof probeTool>;

/** A tool call of the probe, as the model would make it. */
export function call(id: string, claim: ClaimSpec, extra: Omit<ProbeInput, 'id' | 'claim'> = {}, name = 'probe') {
  return { id, name, args: { id, claim, ...extra } };
}

export const shared = (reads?: string[]): ClaimSpec => (reads ? { kind: 'shared', reads } : { kind: 'shared' });
export const paths = (...items: string[]): ClaimSpec => ({ kind: 'paths', items });
export const nodes = (...items: string[]): ClaimSpec => ({ kind: 'nodes', items });
export const sessions = (...items: string[]): ClaimSpec => ({ kind: 'sessions', items });
export const global = (): ClaimSpec => ({ kind: 'global' });

export type ModelCall = { id?: string; name: string; args: unknown };

/**
 * A scripted model: the first run it serves plays `batches` (turn i makes the calls of
 * batches[i]) and then answers `final`; any later run answers `final` at once. It records
 * what it saw on every turn.
 */
export function batchModel(batches: ModelCall[][] | ((ctx: ScriptContext) => ScriptTurn), final = 'done') {
  const seen: ScriptContext[] = [];
  let firstRun: string | undefined;
  const model = scriptedModel((ctx) => {
    seen.push({ ...ctx, messages: ctx.messages.map((m) => ({ ...m })) });
    if (typeof batches === 'function') return batches(ctx);
    firstRun ??= ctx.runId;
    const batch = ctx.runId === firstRun ? batches[ctx.turn] : undefined;
    return batch ? { toolCalls: batch } : { text: final };
  });
  return { model, seen };
}

export const toolMessages = (messages: Message[]) => messages.filter((m) => m.role === 'tool');

export const isTerminal = (engine: Engine, runId: string) => {
  const state = engine.status(runId)?.state;
  return state === 'completed' || state === 'failed' || state === 'cancelled';
};

/**
 * Moves the clock from one probe wake-up (or one of `stops`: times of the engine's own timers,
 * such as a call timeout or the run deadline) to the next until `done()`. Between moves it
 * lets promises settle; when nothing sleeps yet (a run's first call waits for its workspace,
 * real I/O), it polls until a call sleeps or `done()`.
 */
export async function drive(
  clock: SimulatedClock,
  probe: Probe,
  done: () => boolean,
  stops: readonly number[] = [],
): Promise<void> {
  for (let steps = 0; steps < 10_000; steps++) {
    await settle();
    if (done()) return;
    const wake = probe.nextWake();
    if (wake === undefined) {
      await until(() => done() || probe.nextWake() !== undefined, 'a probe call sleeps or the run ends');
      continue;
    }
    const stop = stops.find((t) => t > clock.now());
    clock.set(Math.max(clock.now(), stop === undefined ? wake : Math.min(wake, stop)));
  }
  throw new Error('drive: the run never ended');
}

/** Drives a run on the clock until it ends, and returns its history. */
export async function driveRun(
  engine: Engine,
  clock: SimulatedClock,
  probe: Probe,
  runId: string,
  stops: readonly number[] = [],
): Promise<RunEvent[]> {
  await drive(clock, probe, () => isTerminal(engine, runId), stops);
  await engine.wait(runId);
  return engine.history(runId);
}

export function eventsOf<K extends RunEvent['type']>(history: RunEvent[], type: K): RunEventOf<K>[] {
  return history.filter((e): e is RunEventOf<K> => e.type === type);
}

export function finishedById(history: RunEvent[]): Map<string, RunEventOf<'tool.finished'>> {
  return new Map(eventsOf(history, 'tool.finished').map((e) => [e.callId, e]));
}

/** The one tool.scheduled event of a run (or of its turn `turn`). */
export function scheduleOf(history: RunEvent[], turn = 0): RunEventOf<'tool.scheduled'> {
  const schedule = eventsOf(history, 'tool.scheduled').find((e) => e.turn === turn);
  expect(schedule, `tool.scheduled of turn ${turn}`).toBeDefined();
  return schedule!;
}

/**
 * An engine (from the suite's engineFixture) on a fresh SimulatedClock, with a probe tool on
 * that clock and a batchModel playing `batches`.
 */
export function probeEngineFrom(newEngine: (options?: EngineOptions) => Promise<Engine>) {
  return async (batches: ModelCall[][], config: PartialConfig = {}, extra: Partial<EngineOptions> = {}) => {
    const clock = new SimulatedClock();
    const probe = probeTool(clock);
    const { model, seen } = batchModel(batches);
    const engine = await newEngine({ clock, tools: [probe.tool], models: { scripted: model }, config, ...extra });
    return { clock, probe, engine, seen };
  };
}
