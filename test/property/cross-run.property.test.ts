/*
 * Claims across runs, for all workloads (docs/claims.md, "Claims across runs"): sessions that
 * share a workspace write and edit the same few files through the real file_write and
 * file_edit tools, on a simulated clock; a witness wrapped around each tool records which file
 * every execution really touches (the path it resolves, not the claim it declared) and when, and
 * no two executions on one file may ever overlap. Calls of different workspaces never wait for
 * each other. Random delegation trees, whose runs all work in one workspace, never deadlock.
 * The same workload with `cross_run_claims = false` does overlap: the check can fail.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { Claims } from '../../src/concurrency/index.js';
import { isTerminalEvent, isTerminalState } from '../../src/core/index.js';
import { createEngine, sleep, type Engine, type RunEvent, type StreamEvent } from '../../src/engine/index.js';
import { scriptedModel, type ScriptTurn } from '../../src/model/index.js';
import { InvariantMonitor } from '../../src/sim/index.js';
import { IncarnationClock } from '../../src/sim/sim-clock.js';
import { fileEditTool, fileWriteTool } from '../../src/tools/builtins/index.js';
import { defineTool, ToolError, type AnyTool } from '../../src/tools/index.js';
import { sandboxDirectory } from '../sandbox/sandbox-workspace.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

const FILES = ['notes.md', 'src/app.ts', 'src/lib.ts'] as const;
const SEED_TEXT = 'line\n';
const NUM_RUNS = Number(process.env.SWITCHYARD_PROPERTY_RUNS ?? 25);

const tempDir = tempDirs('switchyard-cross-run-prop-', 'afterAll');
let root: string;
beforeAll(async () => {
  root = await tempDir();
});

/**
 * Wraps a file tool: it first takes the virtual time its call id names (`…@<ms>`), then does the
 * real write, and records each execution's real file from entry to exit. Two executions on one
 * file at once are an overlap.
 */
function footprintWitness(clock: IncarnationClock) {
  const active = new Map<string, string[]>();
  const overlaps: string[] = [];
  let executions = 0;
  /** Executions sleeping on the clock: the only file calls time may move on for. */
  let sleeping = 0;
  const wrap = <I extends { path: string }>(
    tool: AnyTool & { execute(input: I, ctx: Parameters<AnyTool['execute']>[1]): Promise<unknown> },
  ): AnyTool =>
    ({
      ...tool,
      execute: async (input: I, ctx: Parameters<AnyTool['execute']>[1]) => {
        const file = resolve(ctx.workspace, input.path);
        const me = `${ctx.runId}/${ctx.callId}`;
        const others = active.get(file) ?? [];
        for (const other of others) overlaps.push(`${me} started on ${file} while ${other} was on it`);
        active.set(file, [...others, me]);
        executions += 1;
        try {
          sleeping += 1;
          try {
            await sleep(clock, Number(ctx.callId.slice(ctx.callId.lastIndexOf('@') + 1)), ctx.signal);
          } finally {
            sleeping -= 1;
          }
          return await tool.execute(input, ctx);
        } finally {
          active.set(
            file,
            (active.get(file) ?? []).filter((x) => x !== me),
          );
        }
      },
    }) as AnyTool;
  return {
    tools: [wrap(fileWriteTool as never), wrap(fileEditTool as never)],
    overlaps,
    get executions() {
      return executions;
    },
    get sleeping() {
      return sleeping;
    },
  };
}

type FileCall = { tool: 'file_write' | 'file_edit'; file: number; ms: number };
interface SessionPlan {
  /** 0 and 1: the two shared workspaces. */
  workspace: number;
  turns: { delayMs: number; calls: FileCall[] }[];
}

const fileCall: fc.Arbitrary<FileCall> = fc.record({
  tool: fc.constantFrom('file_write' as const, 'file_edit' as const),
  file: fc.integer({ min: 0, max: FILES.length - 1 }),
  ms: fc.integer({ min: 0, max: 300 }),
});
const sessionPlan: fc.Arbitrary<SessionPlan> = fc.record({
  workspace: fc.integer({ min: 0, max: 1 }),
  turns: fc.array(
    fc.record({ delayMs: fc.integer({ min: 0, max: 120 }), calls: fc.array(fileCall, { minLength: 1, maxLength: 3 }) }),
    { minLength: 1, maxLength: 3 },
  ),
});
interface Workload {
  sessions: SessionPlan[];
  scheduling: 'groups' | 'dag';
  concurrency: number;
}
const workload: fc.Arbitrary<Workload> = fc.record({
  sessions: fc.array(sessionPlan, { minLength: 2, maxLength: 5 }),
  scheduling: fc.constantFrom('groups' as const, 'dag' as const),
  concurrency: fc.integer({ min: 1, max: 4 }),
});

async function workspaces(count: number): Promise<string[]> {
  const dir = await mkdtemp(join(root, 'case-'));
  const made: string[] = [];
  for (let i = 0; i < count; i++) {
    const workspace = join(dir, `ws${i}`);
    await mkdir(join(workspace, 'src'), { recursive: true });
    for (const file of FILES) await writeFile(join(workspace, file), SEED_TEXT);
    made.push(await sandboxDirectory(workspace));
  }
  return made;
}

function turnOf(runId: string, turn: number, plans: Map<string, SessionPlan['turns']>): ScriptTurn {
  const planned = plans.get(runId)?.[turn];
  if (!planned) return { text: `done ${runId}` };
  return {
    delayMs: planned.delayMs,
    toolCalls: planned.calls.map((c, k) => ({
      id: `${runId}-t${turn}-${k}@${c.ms}`,
      name: c.tool,
      args:
        c.tool === 'file_write'
          ? { path: FILES[c.file], content: `${SEED_TEXT}${runId} turn ${turn}\n` }
          : { path: FILES[c.file], old: 'line', new: 'line.' },
    })),
  };
}

interface Harness {
  engine: Engine;
  errors: unknown[];
  base: SimulatedClock;
  clock: IncarnationClock;
  monitor: InvariantMonitor;
  events: StreamEvent[];
  witness: ReturnType<typeof footprintWitness>;
}

async function harness(
  config: Record<string, unknown>,
  extraTools: AnyTool[],
  model: (runId: string, turn: number, input: string) => ScriptTurn,
): Promise<Harness> {
  const base = new SimulatedClock();
  const clock = new IncarnationClock(base);
  const witness = footprintWitness(clock);
  const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 100, maxPerAgent: 100 }) });
  const errors: unknown[] = [];
  const engine = await createEngine({
    clock,
    config: {
      ...config,
      execution: { max_runs_global: 100, max_runs_per_agent: 100 },
      approval: { tier: 'full' },
      sandbox: { workspace_root: join(root, 'defaults') },
    },
    tools: [...witness.tools, ...extraTools],
    models: { scripted: scriptedModel((ctx) => model(ctx.runId, ctx.turn, ctx.input)) },
    onError: (error) => errors.push(error),
  });
  const events: StreamEvent[] = [];
  const stream = engine.events();
  void (async () => {
    for await (const event of stream) {
      events.push(event);
      monitor.observe(event);
    }
  })();
  return { engine, errors, base, clock, monitor, events, witness };
}

/**
 * Runs the clock from timer to timer until every run ended. Real I/O (a workspace created, a
 * file written) is waited for without moving time: a call that started, has not finished and is
 * not asleep on the clock holds it.
 */
async function drain(h: Harness, runIds: () => string[]): Promise<void> {
  const ended = () =>
    runIds().every((id) => ['completed', 'failed', 'cancelled'].includes(h.engine.status(id)?.state ?? ''));
  // Calls started and not finished, but not asleep on the clock either: on their way to the tool, or writing.
  // A delegation holds it until its child run has started.
  const inRealWork = () => {
    const open = new Set<string>();
    const delegations = new Set<string>();
    const children = new Set<string>();
    for (const e of runEvents(h)) {
      const call = `${e.runId}/${'callId' in e ? e.callId : ''}`;
      if (e.type === 'tool.started') (e.tool === 'delegate_here' ? delegations : open).add(call);
      else if (e.type === 'tool.finished') open.delete(call) || delegations.delete(call);
      else if (e.type === 'run.started' && e.parentRunId !== undefined) children.add(e.runId);
      else if (isTerminalEvent(e)) children.delete(e.runId);
    }
    return open.size - h.witness.sleeping + Math.max(0, delegations.size - children.size);
  };
  const quiet = () => settle(5);
  const giveUpAt = Date.now() + 30_000;
  for (;;) {
    await quiet();
    if (ended()) return;
    const next = h.clock.nextDue();
    if (inRealWork() > 0 || next === undefined) {
      if (Date.now() > giveUpAt)
        throw new Error(
          `stuck with nothing scheduled: ${runIds()
            .filter((id) => !isTerminalState(h.engine.status(id)?.state ?? 'queued'))
            .join(', ')} still open`,
        );
      // A call is doing real I/O (a workspace mkdir, a write): wait for it, time stands still.
      await new Promise<void>((r) => setTimeout(r, 1));
      continue;
    }
    h.base.set(Math.max(next, h.base.now()));
  }
}

function runEvents(h: Harness): RunEvent[] {
  return h.events.filter((e): e is RunEvent => 'runId' in e);
}

async function playWorkload(w: Workload, crossRun: boolean) {
  const dirs = await workspaces(2);
  const plans = new Map<string, SessionPlan['turns']>();
  w.sessions.forEach((s, i) => plans.set(`r${i}`, s.turns));
  const h = await harness(
    {
      tool_service: { scheduling: w.scheduling, parallel_tool_concurrency: w.concurrency, cross_run_claims: crossRun },
    },
    [],
    (runId, turn) => turnOf(runId, turn, plans),
  );
  const runIds = w.sessions.map((_, i) => `r${i}`);
  const accepted = await Promise.all(
    w.sessions.map((s, i) =>
      h.engine.submit({ runId: `r${i}`, sessionId: `s${i}`, input: `task ${i}`, workspace: dirs[s.workspace] }),
    ),
  );
  for (const answer of accepted) h.monitor.accepted(answer);
  await drain(h, () => runIds);
  await h.engine.close();
  return { h, dirs, runIds };
}

describe('claims across runs, for all workloads (fast-check, simulated clock)', () => {
  it('two sessions writing one file through file_write / file_edit never overlap; other workspaces never wait', async () => {
    let waited = 0;
    await fc.assert(
      fc.asyncProperty(workload, async (w) => {
        const { h, runIds } = await playWorkload(w, true);
        expect(h.errors).toEqual([]);
        expect(h.witness.overlaps).toEqual([]);
        expect(h.monitor.check()).toEqual([]);
        for (const runId of runIds) expect(h.engine.status(runId)?.state).toBe('completed');
        // Every call ran and succeeded: none waited out its timeout.
        expect(runEvents(h).filter((e) => e.type === 'tool.finished' && !e.ok)).toEqual([]);
        const workspaceOf = new Map(
          runEvents(h).flatMap((e) => (e.type === 'run.started' ? [[e.runId, e.workspace] as const] : [])),
        );
        for (const e of runEvents(h)) {
          if (e.type !== 'tool.waiting') continue;
          waited += 1;
          expect(workspaceOf.get(e.blockedBy.runId)).toBe(workspaceOf.get(e.runId));
          expect(e.blockedBy.runId).not.toBe(e.runId);
        }
      }),
      { numRuns: NUM_RUNS },
    );
    // The workloads did make runs wait for each other.
    expect(waited).toBeGreaterThan(0);
  }, 120_000);

  it('the same writes overlap with cross_run_claims = false: the witness catches it', async () => {
    const clash: Workload = {
      scheduling: 'dag',
      concurrency: 2,
      sessions: [0, 1].map(() => ({
        workspace: 0,
        turns: [{ delayMs: 10, calls: [{ tool: 'file_write', file: 0, ms: 100 }] }],
      })),
    };
    const off = await playWorkload(clash, false);
    expect(off.h.witness.overlaps).toHaveLength(1);
    expect(off.h.monitor.check().map((v) => v.invariant)).toEqual(['cross-run-overlap']);
    const on = await playWorkload(clash, true);
    expect(on.h.witness.overlaps).toEqual([]);
    expect(runEvents(on.h).filter((e) => e.type === 'tool.waiting')).toHaveLength(1);
  }, 30_000);
});

// ---------------------------------------------------------------------------------------------
// Delegation trees.

interface TreeNode {
  /** Its own writes, before it delegates. */
  calls: FileCall[];
  children: TreeNode[];
}

const tree: fc.Arbitrary<TreeNode> = fc.letrec<{ node: TreeNode }>((self) => ({
  node: fc.record({
    calls: fc.array(fileCall, { maxLength: 2 }),
    children: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant<TreeNode[]>([]),
      fc.array(self('node'), { minLength: 1, maxLength: 3 }),
    ),
  }),
})).node;

/** Delegates like session_send, but into the caller's own workspace, so parent and children meet. */
const delegateHere = defineTool({
  name: 'delegate_here',
  description: "Delegates a task to another session, working in this run's workspace.",
  input: z.object({ session: z.string(), message: z.string() }).strict(),
  concurrencyClaim: ({ session }) => Claims.sessions([session]),
  execute: async ({ session, message }, ctx) => {
    const result = await ctx.delegate!({ sessionId: session, input: message, workspace: ctx.workspace });
    if (result.state !== 'completed')
      throw new ToolError(
        'delegated_run_failed',
        `${result.runId} ended ${result.state}: ${result.error?.message ?? ''}`,
      );
    return result.output;
  },
});

describe('delegation trees (fast-check, simulated clock)', () => {
  it('never deadlock: every run of random trees working in one workspace completes, and no two writes to a file overlap', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(tree, { minLength: 1, maxLength: 3 }), async (forest) => {
        const [dir] = await workspaces(1);
        // Every node is a task on a session of its own (`n<path>`), so no two nodes share a lane.
        const nodes = new Map<string, TreeNode>();
        const name = (node: TreeNode, path: string) => {
          nodes.set(path, node);
          node.children.forEach((child, i) => name(child, `${path}.${i}`));
        };
        forest.forEach((root, i) => name(root, `n${i}`));
        const h = await harness(
          { tool_service: { parallel_tool_concurrency: 4, scheduling: 'dag' } },
          [delegateHere],
          (runId, turn, input) => {
            const node = nodes.get(input);
            if (!node) return { text: `done ${runId}` };
            const writes = node.calls.map((c, k) => ({
              id: `${input}-w${k}@${c.ms}`,
              name: c.tool,
              args:
                c.tool === 'file_write'
                  ? { path: FILES[c.file], content: `${SEED_TEXT}${input}\n` }
                  : { path: FILES[c.file], old: 'line', new: 'line.' },
            }));
            const delegations = node.children.map((_, i) => ({
              id: `${input}-d${i}`,
              name: 'delegate_here',
              args: { session: `${input}.${i}`, message: `${input}.${i}` },
            }));
            const batch = turn === 0 ? [...writes, ...delegations] : [];
            return batch.length > 0 ? { toolCalls: batch } : { text: `done ${input}` };
          },
        );
        const tops = forest.map((_, i) => `n${i}`);
        await Promise.all(
          tops.map((top) => h.engine.submit({ runId: top, sessionId: top, input: top, workspace: dir })),
        );
        const all = () => runEvents(h).flatMap((e) => (e.type === 'run.started' ? [e.runId] : []));
        await drain(h, () => [...tops, ...all()]);
        const started = all();
        expect(started).toHaveLength(nodes.size);
        for (const runId of started) expect(h.engine.status(runId)?.state, runId).toBe('completed');
        // A deadlock broken only by a timeout would show as a failed call.
        expect(runEvents(h).filter((e) => e.type === 'tool.finished' && !e.ok)).toEqual([]);
        expect(h.errors).toEqual([]);
        expect(h.witness.overlaps).toEqual([]);
        // Delegated runs were submitted by their parents, not by this test: only their accounting is unknown here.
        expect(h.monitor.check().filter((v) => v.invariant !== 'accounting')).toEqual([]);
        await h.engine.close();
      }),
      { numRuns: NUM_RUNS },
    );
  }, 120_000);
});
