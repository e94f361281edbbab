/*
 * Priority and deadline-aware admission on a real engine (docs/runs.md, "Priorities", "Start
 * deadlines"): under saturation the limiter's grants split by `[execution] priority_weights`,
 * one agent's burst does not hold back another agent's request, `run.queued` reports the place
 * in the limiter's queue, and a request that cannot start by its `startBy` / `startWithinMs`
 * ends `failed` with `deadline_unmeetable` at that very moment — waiting for permits, waiting in
 * its session's lane, and after a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine, type RunEventOf, type RunRequest } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { SimulatedClock, advance, recordEvents } from './fixtures.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

let workspaceRoot: string;
const open: Engine[] = [];
const tempDir = tempDirs('switchyard-priority-', 'afterAll');

beforeAll(async () => {
  workspaceRoot = await tempDir();
});
afterAll(async () => {
  for (const engine of open) await engine.close();
});

/** An engine whose every run takes `runMs` of virtual time (one model turn). */
async function admissionEngine(execution: Record<string, unknown>, runMs = 10, store = new MemoryStore()) {
  const clock = new SimulatedClock();
  const engine = await createEngine({
    store,
    clock,
    models: { scripted: scriptedModel(() => ({ text: 'done', delayMs: runMs })) },
    config: { sandbox: { workspace_root: workspaceRoot }, execution: { max_runs_per_agent: 1_000, ...execution } },
    onError: (error) => {
      throw error;
    },
  });
  open.push(engine);
  const recorder = recordEvents(engine);
  const starts = () =>
    recorder
      .runEvents()
      .filter((e) => e.type === 'run.started')
      .map((e) => e.runId);
  const queued = (runId: string) =>
    recorder.runEvents().find((e): e is RunEventOf<'run.queued'> => e.type === 'run.queued' && e.runId === runId);
  return { engine, clock, recorder, starts, queued, store };
}

const submitAll = (engine: Engine, requests: RunRequest[]) => Promise.all(requests.map((r) => engine.submit(r)));
const ended = (engine: Engine, runIds: string[]) =>
  runIds.every((id) => ['completed', 'failed', 'cancelled'].includes(engine.status(id)?.state ?? ''));

describe('weighted fair queueing in the limiter', () => {
  it('under saturation, runs start in the shares of priority_weights (default 4 / 2 / 1), within 2 %', async () => {
    const h = await admissionEngine({ max_runs_global: 1 });
    await h.engine.submit({ runId: 'first', sessionId: 'first', input: 'x' });
    const requests: RunRequest[] = [];
    for (let i = 0; i < 70; i++) {
      for (const priority of ['batch', 'background', 'interactive'] as const) {
        requests.push({
          runId: `${priority}-${i}`,
          sessionId: `${priority}-${i}`,
          agentId: `agent${i % 3}`,
          input: 'x',
          priority,
        });
      }
    }
    await submitAll(h.engine, requests);
    const all = ['first', ...requests.map((r) => r.runId!)];
    while (!ended(h.engine, all)) await advance(h.clock, 10);
    // While all three classes wait: the first 105 starts after the first run (interactive gets 60 of them).
    const window = h.starts().slice(1, 106);
    const share = (priority: string) => window.filter((runId) => runId.startsWith(priority)).length / window.length;
    expect(share('interactive')).toBeCloseTo(4 / 7, 1);
    expect(Math.abs(share('interactive') - 4 / 7)).toBeLessThan(0.02);
    expect(Math.abs(share('background') - 2 / 7)).toBeLessThan(0.02);
    expect(Math.abs(share('batch') - 1 / 7)).toBeLessThan(0.02);
    // Then each class runs out in turn; nothing was dropped.
    expect(new Set(h.starts()).size).toBe(all.length);
  });

  it('priority_weights is hot: after a reload, batch outranks interactive', async () => {
    const h = await admissionEngine({ max_runs_global: 1 });
    const reload = h.engine.reconfigure({
      execution: { priority_weights: { interactive: 1, background: 1, batch: 8 } },
    });
    expect(reload).toMatchObject({ restartRequired: [] });
    expect(reload.applied).toContain('execution.priority_weights.batch');
    await h.engine.submit({ runId: 'first', sessionId: 'first', input: 'x', priority: 'interactive' });
    const requests = Array.from({ length: 9 }, (_, i): RunRequest => ({
      runId: `r${i}`,
      sessionId: `s${i}`,
      input: 'x',
      priority: i < 3 ? 'interactive' : 'batch',
      agentId: `a${i}`,
    }));
    await submitAll(h.engine, requests);
    while (
      !ended(
        h.engine,
        requests.map((r) => r.runId!),
      )
    )
      await advance(h.clock, 10);
    // Interactive just had a grant (the first run); batch, eight times the weight, then takes the next ones.
    expect(h.starts().slice(1, 5)).toEqual(['r3', 'r4', 'r5', 'r6']);
  });

  it("one agent's burst does not hold back another agent's single request, and run.queued says so", async () => {
    const h = await admissionEngine({ max_runs_global: 1 });
    await submitAll(
      h.engine,
      Array.from({ length: 20 }, (_, i): RunRequest => ({
        runId: `bulk-${i}`,
        sessionId: `bulk-${i}`,
        agentId: 'bulk',
        input: 'x',
      })),
    );
    const single = await h.engine.submit({ runId: 'alice-1', sessionId: 'alice', agentId: 'alice', input: 'x' });
    expect(single).toMatchObject({ outcome: 'queued', position: 1 });
    await settle();
    expect(h.queued('alice-1')).toMatchObject({ position: 1, reason: 'limits' });
    expect(h.queued('bulk-19')).toMatchObject({ position: 19, reason: 'limits' });
    while (!ended(h.engine, ['alice-1', 'bulk-1'])) await advance(h.clock, 10);
    expect(h.starts().slice(0, 3)).toEqual(['bulk-0', 'alice-1', 'bulk-1']);
  });

  it('an interactive message does not wait behind a batch of scheduled jobs', async () => {
    const h = await admissionEngine({ max_runs_global: 2 });
    await submitAll(
      h.engine,
      Array.from({ length: 30 }, (_, i): RunRequest => ({
        runId: `job-${i}`,
        sessionId: `job-${i}`,
        agentId: 'cron',
        input: 'x',
        priority: 'batch',
      })),
    );
    const chat = await h.engine.submit({ runId: 'chat', sessionId: 'chat', agentId: 'web', input: 'hello' });
    expect(chat).toMatchObject({ outcome: 'queued', position: 1 });
    await settle();
    while (h.engine.status('chat')?.state === 'queued') await advance(h.clock, 10);
    // It started as soon as the first permit came free.
    expect(h.engine.status('chat')?.startedAt).toBe(new Date(10).toISOString());
  });
});

describe('start deadlines', () => {
  it('waiting for permits: at startWithinMs the run ends failed deadline_unmeetable, at that moment, holding nothing', async () => {
    const h = await admissionEngine({ max_runs_global: 1 }, 10_000);
    await h.engine.submit({ runId: 'long', sessionId: 'a', input: 'x' });
    const late = await h.engine.submit({ runId: 'late', sessionId: 'b', input: 'x', startWithinMs: 1_000 });
    expect(late).toMatchObject({ outcome: 'queued' });
    expect(h.queued('late')).toMatchObject({ reason: 'limits', position: 1 });
    await h.engine.submit({ runId: 'patient', sessionId: 'c', input: 'x' });
    await advance(h.clock, 999);
    expect(h.engine.status('late')?.state).toBe('queued');
    await advance(h.clock, 1);
    const status = h.engine.status('late')!;
    expect(status).toMatchObject({ state: 'failed', error: { code: 'deadline_unmeetable' } });
    expect(status.endedAt).toBe(new Date(1_000).toISOString());
    expect(h.recorder.types('late')).toEqual(['run.queued', 'run.failed']);
    // Its place went to the next waiter; the running run never noticed.
    await advance(h.clock, 9_000);
    expect(h.engine.status('long')?.state).toBe('completed');
    expect(h.engine.status('patient')?.state).toBe('running');
    expect(h.engine.snapshot().waiting).toBe(0);
  });

  it("waiting in the session's lane: a startBy time passes and the message ends failed deadline_unmeetable then", async () => {
    const h = await admissionEngine({ busy_policy: 'queue' }, 10_000);
    await h.engine.submit({ runId: 'long', sessionId: 's', input: 'x' });
    const next = await h.engine.submit({
      runId: 'next',
      sessionId: 's',
      input: 'x',
      startBy: new Date(500).toISOString(),
    });
    expect(next).toMatchObject({ outcome: 'queued', position: 1 });
    expect(h.queued('next')).toMatchObject({ reason: 'session_busy' });
    await advance(h.clock, 499);
    expect(h.engine.status('next')?.state).toBe('queued');
    await advance(h.clock, 1);
    expect(h.engine.status('next')).toMatchObject({
      state: 'failed',
      endedAt: new Date(500).toISOString(),
      error: { code: 'deadline_unmeetable', message: expect.stringContaining('1970-01-01T00:00:00.500Z') },
    });
    expect(h.engine.snapshot().sessions.find((s) => s.sessionId === 's')?.laneDepth).toBe(0);
    expect(h.engine.status('long')?.state).toBe('running');
  });

  it('a run that starts in time runs to its end, however long after its startBy', async () => {
    const h = await admissionEngine({ max_runs_global: 1 }, 400);
    await h.engine.submit({ runId: 'short', sessionId: 'a', input: 'x' });
    await h.engine.submit({ runId: 'next', sessionId: 'b', input: 'x', startWithinMs: 1_000 });
    await settle();
    while (!ended(h.engine, ['next'])) await advance(h.clock, 100);
    expect(h.engine.status('next')).toMatchObject({ state: 'completed', startedAt: new Date(400).toISOString() });
  });

  it('a startBy already past starts the run if it can start at once, and fails it at once if it cannot', async () => {
    const h = await admissionEngine({ max_runs_global: 1 }, 1_000);
    h.clock.increment(5_000);
    const now = await h.engine.submit({
      runId: 'now',
      sessionId: 'a',
      input: 'x',
      startBy: new Date(1_000).toISOString(),
    });
    expect(now.outcome).toBe('started');
    const never = await h.engine.submit({ runId: 'never', sessionId: 'b', input: 'x', startWithinMs: 0 });
    expect(never.outcome).toBe('queued');
    await advance(h.clock, 0);
    expect(h.engine.status('never')).toMatchObject({ state: 'failed', error: { code: 'deadline_unmeetable' } });
  });

  it('holds across a restart: a queued run restored by recovery still fails at its startBy, not later', async () => {
    const store = new MemoryStore();
    const first = await admissionEngine({ max_runs_global: 1 }, 60_000, store);
    await first.engine.submit({ runId: 'running', sessionId: 'a', input: 'x' });
    await first.engine.submit({ runId: 'soon', sessionId: 'b', input: 'x', startWithinMs: 5_000 });
    await first.engine.submit({ runId: 'tight', sessionId: 'c', input: 'x', startWithinMs: 1_000 });
    await settle();
    // The process dies at t = 0; the next one recovers from the store (its clock starts at 0 too).
    const second = await admissionEngine({ max_runs_global: 1 }, 60_000, store);
    await settle();
    expect(second.engine.status('running')?.state).toBe('failed');
    expect(second.engine.status('soon')?.state).toBe('running');
    expect(second.engine.status('tight')?.state).toBe('queued');
    await advance(second.clock, 999);
    expect(second.engine.status('tight')?.state).toBe('queued');
    await advance(second.clock, 1);
    expect(second.engine.status('tight')).toMatchObject({
      state: 'failed',
      error: { code: 'deadline_unmeetable' },
      endedAt: new Date(1_000).toISOString(),
    });
  });
});
