/*
 * Release by construction and the log invariants (docs/runs.md, "Release by construction";
 * docs/events.md): wait() resolves only after the run's slot and permits are free, and under any
 * mix of submits, steers, interrupts, cancels, stops, expiries, deadlines and limit reloads every
 * run's log is seq 1..n with one terminal event last, every session's sessionSeq is gapless, no
 * session ever runs two runs, and every accepted message reaches exactly one outcome.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEngine, EngineError, isTerminalEvent, sleep } from '../../src/engine/index.js';
import type { RunEvent, RunResult } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import {
  SimulatedClock,
  advance,
  engineFixture,
  expectGaplessSessionSeq,
  expectWellFormedHistory,
  heldModel,
  recordEvents,
  withWorkspaceRoot,
} from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

const newEngine = engineFixture();

describe('wait()', () => {
  it('resolves only once the run’s permits and session slot are free', async () => {
    const engine = await newEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x', agentId: 'a' });
    expect((await engine.wait(run.runId)).state).toBe('completed');
    const snap = engine.snapshot();
    expect(snap.global.inUse).toBe(0);
    expect(snap.perAgent).toEqual({});
    expect(snap.running).toEqual([]);
    expect(snap.sessions.some((s) => s.activeRunId === run.runId)).toBe(false);
  });

  it('resolves after the release even when a successor takes the slot and the permit at once', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { max_runs_global: 1, busy_policy: 'queue' } },
    });
    const recorder = recordEvents(engine);
    const first = await engine.submit({ sessionId: 's', input: 'first' });
    const second = await engine.submit({ sessionId: 's', input: 'second' });
    await until(() => model.isThinking(first.runId), 'first thinks');
    model.answer(first.runId);

    expect((await engine.wait(first.runId)).state).toBe('completed');
    const snap = engine.snapshot();
    expect(snap.running).not.toContain(first.runId);
    expect(snap.sessions.some((s) => s.activeRunId === first.runId)).toBe(false);
    expect(snap.global.inUse).toBeLessThanOrEqual(1);

    await until(() => model.isThinking(second.runId), 'second thinks');
    model.answer(second.runId);
    await engine.wait(second.runId);
    await settle();
    // Terminal event, then the release (engine.running without it), then the successor's start.
    const all = recorder.all;
    const terminal = all.findIndex((e) => 'runId' in e && e.runId === first.runId && isTerminalEvent(e));
    const released = all.findIndex(
      (e, i) => i > terminal && e.type === 'engine.running' && !e.running.includes(first.runId),
    );
    const successor = all.findIndex((e) => e.type === 'run.started' && e.runId === second.runId);
    expect(terminal).toBeGreaterThanOrEqual(0);
    expect(released).toBeGreaterThan(terminal);
    expect(successor).toBeGreaterThan(released);
    recorder.close();
  });

  it('resolves a queued run that is cancelled, and rejects an unknown id with not_found', async () => {
    const model = heldModel();
    const engine = await newEngine({
      models: { scripted: model.provider },
      config: { execution: { busy_policy: 'queue' } },
    });
    await engine.submit({ sessionId: 's', input: 'first' });
    const queued = await engine.submit({ sessionId: 's', input: 'second' });
    const waiting = engine.wait(queued.runId);
    await engine.cancel(queued.runId);
    expect(await waiting).toMatchObject({ runId: queued.runId, state: 'cancelled' });
    await expect(engine.wait('nobody')).rejects.toMatchObject({ code: 'not_found' });
  });
});

type Op =
  | {
      kind: 'submit';
      session: number;
      agent: number;
      policy: 'steer' | 'interrupt' | 'queue';
      timeout: boolean;
      work: number;
    }
  | { kind: 'cancel'; pick: number }
  | { kind: 'stop'; session: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'limits'; global: number; perAgent: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('submit' as const),
      session: fc.integer({ min: 0, max: 2 }),
      agent: fc.integer({ min: 0, max: 1 }),
      policy: fc.constantFrom('steer' as const, 'interrupt' as const, 'queue' as const),
      timeout: fc.boolean(),
      work: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('stop' as const), session: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 400 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('limits' as const),
      global: fc.integer({ min: 1, max: 3 }),
      perAgent: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

/** Runs one workload on a fresh engine and checks every invariant; returns nothing, throws on a violation. */
async function runWorkload(ops: Op[], workspaceRoot: string): Promise<void> {
  const clock = new SimulatedClock();
  const errors: unknown[] = [];
  const work = defineTool({
    name: 'work',
    description: 'Takes 150 ms of engine time.',
    input: z.object({}),
    execute: async (_input, ctx) => {
      await sleep(clock, 150, ctx.signal);
      return 'worked';
    },
  });
  const engine = await createEngine({
    clock,
    onError: (error) => errors.push(error),
    tools: [work],
    models: {
      // The number of tool turns is in the input ("w0".."w2"); merged steers just answer.
      scripted: scriptedModel((ctx) => {
        const toolTurns = /^w(\d)$/.exec(ctx.input)?.[1];
        return ctx.turn < Number(toolTurns ?? 0)
          ? { toolCalls: [{ name: 'work', args: {} }], delayMs: 100 }
          : { text: `ok ${ctx.input}`, delayMs: 100 };
      }),
    },
    config: withWorkspaceRoot(
      {
        execution: {
          max_runs_global: 2,
          max_runs_per_agent: 1,
          wait_lane_capacity: 3,
          wait_lane_max_wait_seconds: 1,
          max_pending_steers: 1,
        },
      },
      workspaceRoot,
    ),
  });
  const recorder = recordEvents(engine);
  const accepted: { runId: string; outcome: string }[] = [];
  try {
    let n = 0;
    for (const op of ops) {
      if (op.kind === 'submit') {
        const runId = `m${n++}`;
        try {
          const result = await engine.submit({
            runId,
            sessionId: `s${op.session}`,
            agentId: `a${op.agent}`,
            input: `w${op.work}`,
            busyPolicy: op.policy,
            ...(op.timeout ? { timeoutMs: 700 } : {}),
          });
          accepted.push({ runId, outcome: result.outcome });
        } catch (error) {
          expect(error).toBeInstanceOf(EngineError);
          expect((error as EngineError).code).toBe('lane_full');
          expect(engine.status(runId)).toBeUndefined();
        }
      } else if (op.kind === 'cancel') {
        if (accepted.length > 0) await engine.cancel(accepted[op.pick % accepted.length]!.runId, 'test cancel');
      } else if (op.kind === 'stop') {
        const stopped = await engine.stopSession(`s${op.session}`);
        const snap = engine.snapshot();
        expect(snap.sessions.find((s) => s.sessionId === `s${op.session}`)?.activeRunId).toBeUndefined();
        if (stopped.cancelled) expect(snap.running).not.toContain(stopped.cancelled);
      } else if (op.kind === 'limits') {
        engine.reconfigure({ execution: { max_runs_global: op.global, max_runs_per_agent: op.perAgent } });
      } else {
        clock.increment(op.ms);
      }
      await settle(3);
      const snap = engine.snapshot();
      expect(snap.sessions.filter((s) => s.activeRunId !== undefined).length).toBeLessThanOrEqual(3);
    }

    // Drain: let engine time pass until every accepted message has an outcome.
    const settled = new Map<string, RunResult>();
    for (const { runId } of accepted) void engine.wait(runId).then((result) => settled.set(runId, result));
    // Tool calls create their workspace on disk, so engine time only moves once the loop has
    // run; the wall-clock limit is a fail-safe against a hang, not a timing assertion.
    const giveUpAt = Date.now() + 20_000;
    while (settled.size < accepted.length && Date.now() < giveUpAt) await advance(clock, 500);
    expect([...accepted.map((a) => a.runId)].filter((id) => !settled.has(id))).toEqual([]);
    await settle();

    const snap = engine.snapshot();
    expect(snap.global.inUse).toBe(0);
    expect(snap.waiting).toBe(0);
    expect(snap.running).toEqual([]);
    expect(snap.sessions.filter((s) => s.activeRunId !== undefined || s.laneDepth > 0)).toEqual([]);

    recorder.close();
    await recorder.ended;
    const events = recorder.runEvents();
    const byRun = new Map<string, RunEvent[]>();
    for (const event of events) byRun.set(event.runId, [...(byRun.get(event.runId) ?? []), event]);
    for (const [runId, runEvents] of byRun) {
      expectWellFormedHistory(runEvents);
      expect(await engine.history(runId)).toEqual(runEvents);
    }
    expectGaplessSessionSeq(events);

    // One running run per session, and never more runs than the highest global cap.
    const current = new Map<string, string>();
    for (const event of events) {
      if (event.type === 'run.started') {
        expect(current.get(event.sessionId), `${event.runId} started over another run`).toBeUndefined();
        current.set(event.sessionId, event.runId);
      } else if (isTerminalEvent(event) && current.get(event.sessionId) === event.runId) {
        current.delete(event.sessionId);
      }
    }
    for (const event of recorder.all)
      if (event.type === 'engine.running') expect(event.running.length).toBeLessThanOrEqual(3);

    // Accounting: every accepted message ran, or was consumed as a steer exactly once, or
    // was merged into the follow-up run its result names.
    const steeredIds = events
      .filter((e) => e.type === 'run.steered')
      .map((e) => (e.type === 'run.steered' ? e.steerId : ''));
    expect(new Set(steeredIds).size).toBe(steeredIds.length);
    for (const { runId, outcome } of accepted) {
      const result = settled.get(runId)!;
      expect(byRun.has(result.runId), `${runId} resolved to ${result.runId}, which has no log`).toBe(true);
      if (outcome !== 'steered') expect(result.runId).toBe(runId);
      else expect(steeredIds.includes(runId) || result.runId !== runId || byRun.has(runId)).toBe(true);
    }
    expect(errors).toEqual([]);
  } finally {
    recorder.close();
    await engine.close();
  }
}

describe('invariants under random workloads', () => {
  let workspaceRoot = '';
  const tempDir = tempDirs('switchyard-workload-', 'afterAll');

  beforeAll(async () => {
    workspaceRoot = await tempDir();
  });

  it('hold for every mix of submits, cancels, stops, clock steps and limit reloads', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), (ops) => runWorkload(ops, workspaceRoot)),
      // Fixed seed for a deterministic suite; SWITCHYARD_PROPERTY_SEED / _RUNS explore further.
      {
        numRuns: Number(process.env.SWITCHYARD_PROPERTY_RUNS ?? 60),
        seed: Number(process.env.SWITCHYARD_PROPERTY_SEED ?? 20240601),
      },
    );
  });
});
