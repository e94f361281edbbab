/**
 * The act host gives back what a tool call holds — its claim and its execution — through the
 * call's exit actions; a run whose actor is stopped runs none, so AsyncEffects abandons its
 * executions (abandonRun) and the act host gives back its claims (runStopped). Real claim registry, a tool execution the test settles.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { z } from 'zod';
import type { ActInput } from '../../machines/act.machine.js';
import { Claims, InProcessClaimRegistry } from '../../src/concurrency/index.js';
import { systemClock } from '../../src/core/clock.js';
import { ActHost, type Batch } from '../../src/engine/act.host.js';
import { AsyncEffects } from '../../src/engine/async-effects.js';
import { createEngine } from '../../src/engine/index.js';
import type { RunLedger } from '../../src/engine/run-ledger.js';
import type { RunTable } from '../../src/engine/run-table.js';
import type { Config } from '../../src/config/index.js';
import type { ToolService } from '../../src/tools/tool-service.js';
import { scriptedModel } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { sandboxDirectory } from '../sandbox/sandbox-workspace.js';
import { deferred } from '../support/deferred.js';
import { settle } from '../support/settle.js';

/** One run 'r' with one call writing /w/a.ts, whose execution waits for the test. */
function oneCallRun() {
  const claims = new InProcessClaimRegistry();
  const execution = deferred<string>();
  const signals: AbortSignal[] = [];
  const appended: string[] = [];
  const call = { callId: 'c0', tool: 'write', args: {}, input: {}, claim: Claims.paths(['/w/a.ts']), rewritten: false };
  const act: ActInput = {
    runId: 'r',
    turn: 0,
    calls: [
      { index: 0, callId: 'c0', tool: 'write', deps: [], checkpoint: true, timeoutMs: 60_000, needsApproval: false },
    ],
    concurrency: 4,
    inOrder: true,
    steerPending: false,
  };
  const service = {
    workspace: '/w',
    execute: (_call: unknown, signal: AbortSignal) => {
      signals.push(signal);
      return execution.promise;
    },
  };
  const handle = { status: { runId: 'r' } };
  const table = { get: (runId: string) => (runId === 'r' ? handle : undefined) } as unknown as RunTable;
  const ledger = { append: (_handle: unknown, type: string) => appended.push(type) } as unknown as RunLedger;
  const effects = new AsyncEffects();
  const host = new ActHost({
    table,
    ledger,
    clock: systemClock,
    config: () => ({ tool_service: { cross_run_claims: true } }) as Config,
    tools: { toolServiceOf: () => service as unknown as ToolService, forget: () => {} },
    claims,
    observer: { commandJudged: () => {} },
    effects,
  });
  host.open('r', { calls: [call], act, schedule: {}, service, startedAt: [] } as unknown as Batch);
  return { host, effects, act, claims, execution, signals, appended };
}

/** Whether another run's write of /w/a.ts would be held at once. */
function claimIsFree(claims: InProcessClaimRegistry): boolean {
  let held = false;
  const ticket = claims.acquire(
    { workspace: '/w', runId: 'other', callId: 'x', tool: 'write', claim: Claims.paths(['/w/a.ts']) },
    { waiting: () => {}, held: () => (held = true) },
  );
  ticket.release();
  return held;
}

describe('act host: what an open call holds', () => {
  it('a run stopped mid-execution: abandonRun aborts the tool, runStopped gives the claim back once the tool has stopped', async () => {
    const { host, effects, act, claims, execution, signals, appended } = oneCallRun();
    const actor = createActor(host.machine, { input: act }).start();
    await settle();
    expect(appended).toEqual(['tool.started']);
    expect(signals).toHaveLength(1);
    expect(claimIsFree(claims)).toBe(false);

    actor.stop(); // no exit action runs: the call still holds its claim and its tool runs on
    expect(signals[0]!.aborted).toBe(false);
    expect(claimIsFree(claims)).toBe(false);

    // What the run host does for a stopped run: its effects abandoned, its calls' claims given back.
    effects.abandonRun('r');
    host.runStopped('r');
    expect(signals[0]!.aborted).toBe(true);
    expect(claimIsFree(claims)).toBe(false); // the tool has not stopped yet

    execution.resolve('late');
    await settle();
    expect(claimIsFree(claims)).toBe(true);
    expect(appended).toEqual(['tool.started']); // the late answer went nowhere
  });

  it('a call that finishes gives its claim back through its exit actions, and runStopped then has nothing to do', async () => {
    const { host, effects, act, claims, execution, signals, appended } = oneCallRun();
    const actor = createActor(host.machine, { input: act }).start();
    await settle();
    execution.resolve('done');
    await settle();
    expect(actor.getSnapshot().status).toBe('done');
    expect(actor.getSnapshot().output).toEqual({ results: [{ ok: true, output: 'done' }] });
    expect(appended).toEqual(['tool.started', 'tool.finished']);
    expect(claimIsFree(claims)).toBe(true);
    effects.abandonRun('r');
    host.runStopped('r');
    expect(signals[0]!.aborted).toBe(false);
  });
});

describe('act host on a real engine: a run cancelled while its batch is busy with an event', () => {
  it('the calls the batch never closed are aborted and give their claims back (the next writer of the file runs)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'switchyard-act-host-'));
    const workspace = await sandboxDirectory(join(root, 'shared'));
    const hung: AbortSignal[] = [];
    const write = defineTool({
      name: 'write',
      description: 'Writes a file; "hang" waits until it is aborted.',
      input: z.object({ path: z.string(), hang: z.boolean() }),
      concurrencyClaim: ({ path }, ctx) => Claims.paths([join(ctx.workspace, path)]),
      execute: ({ hang }, { signal }) => {
        if (!hang) return Promise.resolve('written');
        hung.push(signal);
        return new Promise((resolve) => signal.addEventListener('abort', () => setImmediate(() => resolve('stopped'))));
      },
    });
    const engine = await createEngine({
      tools: [write],
      models: {
        scripted: scriptedModel((ctx) =>
          ctx.runId === 'A' && ctx.turn === 0
            ? {
                toolCalls: [
                  { name: 'write', args: { path: 'a.ts', hang: false } },
                  { name: 'write', args: { path: 'b.ts', hang: true } },
                ],
              }
            : ctx.runId === 'B' && ctx.turn === 0
              ? { toolCalls: [{ name: 'write', args: { path: 'b.ts', hang: false } }] }
              : { text: 'done' },
        ),
      },
      config: { sandbox: { workspace_root: join(root, 'sessions') } },
    });
    try {
      // Synchronous, inside the batch's own step: as the batch logs call 0's result, the run is cancelled.
      const stop = engine.inspect((event) => {
        if (
          event.type === '@xstate.action' &&
          event.action.type === 'callFinished' &&
          (event.action.params as { index: number }).index === 0
        ) {
          void engine.cancel('A', 'from a listener');
        }
      });
      await engine.submit({ runId: 'A', sessionId: 'alice', input: 'go', workspace });
      await expect(engine.wait('A', { timeoutMs: 10_000 })).resolves.toMatchObject({ state: 'cancelled' });
      stop();
      expect(hung).toHaveLength(1);
      expect(hung[0]!.aborted).toBe(true);
      await engine.submit({ runId: 'B', sessionId: 'bob', input: 'go', workspace });
      await expect(engine.wait('B', { timeoutMs: 10_000 })).resolves.toMatchObject({ state: 'completed' });
    } finally {
      await engine.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
