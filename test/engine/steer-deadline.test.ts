/*
 * Steers with an escalation deadline (docs/runs.md, "Steers with a deadline"): a steer that the
 * running run has not read within `steerDeadlineMs` (or `[execution] steer_deadline_seconds`)
 * escalates — `interrupt` cancels the run (reason `steer_escalated`) and runs the message next,
 * `queue` moves it to the lane — with `run.steer_escalated {steerId, to}`. Whichever comes first,
 * the boundary or the deadline, the message runs exactly once; also across a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type RunEvent } from '../../src/engine/index.js';
import { scriptedModel, type ScriptContext } from '../../src/model/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { SimulatedClock, holdTool, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

let workspaceRoot: string;
const open: Engine[] = [];
const tempDir = tempDirs('switchyard-steer-deadline-', 'afterAll');

beforeAll(async () => {
  workspaceRoot = await tempDir();
});
afterAll(async () => {
  for (const engine of open) await engine.close();
});

const STEER = 'stop, use the staging database instead';

/**
 * An engine whose model holds every run's first turn in the "hold" tool and answers after;
 * it records what each model turn saw. Engines on one store stand for one process and its restart.
 */
async function steerEngine(store = new MemoryStore(), config: Record<string, unknown> = {}) {
  const clock = new SimulatedClock();
  const hold = holdTool();
  const seen: ScriptContext[] = [];
  const engine = await createEngine({
    store,
    clock,
    tools: [hold.tool],
    models: {
      scripted: scriptedModel((ctx) => {
        seen.push({ ...ctx, messages: ctx.messages.map((m) => ({ ...m })) });
        return ctx.turn === 0
          ? { toolCalls: [{ name: 'hold', args: {} }] }
          : { text: `answered ${ctx.input} at turn ${ctx.turn}` };
      }),
    },
    config: { sandbox: { workspace_root: workspaceRoot }, execution: { busy_policy: 'steer', ...config } },
    onError: (error) => {
      throw error;
    },
  });
  open.push(engine);
  const recorder = recordEvents(engine);
  /** How often the steer's text reached a model: as a steer read at a boundary, or as a run's input. */
  const timesRead = () =>
    new Set(seen.filter((c) => c.messages.some((m) => m.role === 'user' && m.content === STEER)).map((c) => c.runId))
      .size;
  return { engine, clock, hold, seen, recorder, store, timesRead };
}

async function runningWithSteer(
  h: Awaited<ReturnType<typeof steerEngine>>,
  steer: { steerDeadlineMs?: number; steerEscalation?: 'interrupt' | 'queue' },
) {
  await h.engine.submit({ runId: 'R', sessionId: 's', input: 'migrate the users table' });
  await until(() => h.hold.isHolding('R'), 'R is inside its long tool call');
  const answer = await h.engine.submit({ runId: 'S', sessionId: 's', input: STEER, ...steer });
  expect(answer).toMatchObject({ outcome: 'steered', intoRunId: 'R' });
  await settle();
}

const types = (events: RunEvent[]) => events.map((e) => e.type);

describe('steer deadline: the deadline comes first', () => {
  it('interrupt: the run is cancelled with steer_escalated and the steer runs next, once', async () => {
    const h = await steerEngine();
    await runningWithSteer(h, { steerDeadlineMs: 1_000, steerEscalation: 'interrupt' });
    h.clock.increment(999);
    await settle();
    expect(h.engine.status('R')?.state).toBe('running');
    h.clock.increment(1);
    await expect(h.engine.wait('R')).resolves.toMatchObject({ state: 'cancelled', reason: 'steer_escalated' });
    const history = await h.engine.history('R');
    expect(history.find((e) => e.type === 'run.steer_escalated')).toMatchObject({ steerId: 'S', to: 'interrupt' });
    expect(types(history).slice(-2)).toEqual(['run.steer_escalated', 'run.cancelled']);
    expect(types(history)).not.toContain('run.steered');
    // The held call was cancelled with the run.
    expect(history.find((e) => e.type === 'tool.finished')).toMatchObject({ ok: false, error: { code: 'cancelled' } });

    await until(() => h.hold.isHolding('S'), 'the steer runs as its own run');
    h.hold.release('S');
    await expect(h.engine.wait('S')).resolves.toMatchObject({ runId: 'S', state: 'completed' });
    expect(h.timesRead()).toBe(1);
    expect(h.seen.find((c) => c.runId === 'S')?.input).toBe(STEER);
  });

  it('queue: the steer moves to the lane, the run goes on without it, and the steer runs after it, once', async () => {
    const h = await steerEngine();
    await runningWithSteer(h, { steerDeadlineMs: 1_000, steerEscalation: 'queue' });
    h.clock.increment(1_000);
    await settle();
    expect(h.engine.status('R')?.state).toBe('running');
    expect(h.engine.status('S')).toMatchObject({ state: 'queued', queuedFor: 'session_busy', position: 1 });
    expect((await h.engine.history('R')).find((e) => e.type === 'run.steer_escalated')).toMatchObject({
      steerId: 'S',
      to: 'queue',
    });

    h.hold.release('R');
    await expect(h.engine.wait('R')).resolves.toMatchObject({ state: 'completed' });
    expect(types(await h.engine.history('R'))).not.toContain('run.steered');
    await until(() => h.hold.isHolding('S'), 'the steer runs after R');
    h.hold.release('S');
    await expect(h.engine.wait('S')).resolves.toMatchObject({ runId: 'S', state: 'completed' });
    expect(h.timesRead()).toBe(1);
    // R never saw the steer; S started only after R ended.
    expect(h.seen.filter((c) => c.runId === 'R').every((c) => c.messages.every((m) => m.content !== STEER))).toBe(true);
    const events = h.recorder.runEvents();
    expect(events.findIndex((e) => e.runId === 'S' && e.type === 'run.started')).toBeGreaterThan(
      events.findIndex((e) => e.runId === 'R' && e.type === 'run.completed'),
    );
  });

  it('[execution] steer_deadline_seconds applies when the request names no deadline (escalation interrupt by default)', async () => {
    const h = await steerEngine(new MemoryStore(), { steer_deadline_seconds: 2 });
    await runningWithSteer(h, {});
    h.clock.increment(1_999);
    await settle();
    expect(h.engine.status('R')?.state).toBe('running');
    h.clock.increment(1);
    await expect(h.engine.wait('R')).resolves.toMatchObject({ state: 'cancelled', reason: 'steer_escalated' });
  });

  it('without a deadline a steer waits as long as the run takes', async () => {
    const h = await steerEngine();
    await runningWithSteer(h, {});
    // Up to just under the tool call's own timeout.
    h.clock.increment(59_000);
    await settle();
    expect(h.engine.status('R')?.state).toBe('running');
    h.hold.release('R');
    await expect(h.engine.wait('S')).resolves.toMatchObject({ runId: 'R', state: 'completed' });
    expect(h.timesRead()).toBe(1);
  });
});

describe('steer deadline: the boundary comes first', () => {
  it.each(['interrupt', 'queue'] as const)(
    '%s: the run reads the steer, and the deadline later changes nothing',
    async (escalation) => {
      const h = await steerEngine();
      await runningWithSteer(h, { steerDeadlineMs: 1_000, steerEscalation: escalation });
      h.clock.increment(500);
      h.hold.release('R');
      await expect(h.engine.wait('R')).resolves.toMatchObject({ state: 'completed' });
      h.clock.increment(10_000);
      await settle();
      const history = await h.engine.history('R');
      expect(history.find((e) => e.type === 'run.steered')).toMatchObject({ steerId: 'S', consumedAtTurn: 1 });
      expect(types(history)).not.toContain('run.steer_escalated');
      await expect(h.engine.wait('S')).resolves.toMatchObject({ runId: 'R', state: 'completed' });
      expect(h.timesRead()).toBe(1);
      expect(h.engine.status('S')?.steer).toMatchObject({ state: 'consumed' });
    },
  );
});

describe('steer deadline: a restart in between', () => {
  it.each(['interrupt', 'queue'] as const)(
    '%s: a restart before the deadline — the steer runs once, as the follow-up of the interrupted run',
    async (escalation) => {
      const store = new MemoryStore();
      const first = await steerEngine(store);
      await runningWithSteer(first, { steerDeadlineMs: 1_000, steerEscalation: escalation });
      // The process dies; its clock never moves again.
      const second = await steerEngine(store);
      await settle();
      expect(second.engine.status('R')?.state).toBe('failed');
      second.clock.increment(1_000);
      await until(() => second.hold.isHolding('S'), 'the steer runs after the restart');
      second.hold.release('S');
      await expect(second.engine.wait('S')).resolves.toMatchObject({ runId: 'S', state: 'completed' });
      second.clock.increment(10_000);
      await settle();
      expect(first.timesRead() + second.timesRead()).toBe(1);
      expect((await second.engine.history('R')).some((e) => e.type === 'run.steer_escalated')).toBe(false);
    },
  );

  it.each(['interrupt', 'queue'] as const)(
    '%s: a restart after the escalation — the steer runs once, not twice',
    async (escalation) => {
      const store = new MemoryStore();
      const first = await steerEngine(store);
      await runningWithSteer(first, { steerDeadlineMs: 1_000, steerEscalation: escalation });
      first.clock.increment(1_000);
      await settle();
      expect((await first.engine.history('R')).find((e) => e.type === 'run.steer_escalated')).toMatchObject({
        to: escalation,
      });
      if (escalation === 'interrupt') await until(() => first.hold.isHolding('S'), 'the steer started as its own run');
      // The process dies here: for interrupt while S runs, for queue while R still runs and S waits in the lane.
      const second = await steerEngine(store);
      await settle();
      if (escalation === 'interrupt') {
        // S was running when the process died: it ends interrupted, like any run, and is not run again.
        expect(second.engine.status('S')?.state).toBe('failed');
        expect(second.engine.status('S')?.error?.code).toBe('interrupted');
        expect(first.timesRead() + second.timesRead()).toBe(1);
      } else {
        expect(second.engine.status('R')?.state).toBe('failed');
        await until(() => second.hold.isHolding('S'), 'the queued steer runs after the restart');
        second.hold.release('S');
        await expect(second.engine.wait('S')).resolves.toMatchObject({ runId: 'S', state: 'completed' });
        expect(first.timesRead() + second.timesRead()).toBe(1);
      }
      // Exactly one run carries the steer's id across both processes.
      const logs = await store.readEvents('S');
      expect(logs.filter((e) => e.type === 'run.started')).toHaveLength(1);
    },
  );
});
