/*
 * The async work a chart asks for (a model turn, a tool's execution) is shown to inspection as
 * a child of the actor that asked for it while it runs (src/engine/inspection.ts, showEffect):
 * '@xstate.actor', then its snapshot active → done, and listed by inspectionSnapshot() under
 * its parent. Nobody inspecting, nothing is made for it.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActor, createMachine, type AnyActorRef, type InspectionEvent } from 'xstate';
import { InspectionHub } from '../../src/engine/inspection.js';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, heldModel, holdTool } from './fixtures.js';
import { until } from '../support/eventually.js';
import { sandboxWorkspace } from '../sandbox/sandbox-workspace.js';

const newEngine = engineFixture();
let workspace: string;

beforeAll(async () => {
  workspace = await sandboxWorkspace('switchyard-effects-inspection-');
});
afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

/** The path of actor ids from the root, as the gateway names actors: "<root>/act/call-0/exec". */
function pathOf(actor: AnyActorRef): string {
  const parent = actor._parent;
  const own = actor.id || actor.sessionId;
  return parent ? `${pathOf(parent)}/${own}` : own;
}

/** Each inspected effect (an actor with no machine) as the statuses it was reported in, by path. */
function effectStatuses(events: InspectionEvent[]): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  for (const event of events) {
    const logic = (event.actorRef as unknown as { logic?: { root?: unknown } }).logic;
    if (logic?.root !== undefined) continue;
    const path = pathOf(event.actorRef as AnyActorRef);
    const statuses = seen.get(path) ?? [];
    seen.set(path, statuses);
    if (event.type === '@xstate.actor') statuses.push('announced');
    if (event.type === '@xstate.snapshot') statuses.push((event.snapshot as { status: string }).status);
  }
  return seen;
}

describe('async effects under inspection', () => {
  it('shows a model turn as a child of its run while it runs, done once answered', async () => {
    const model = heldModel();
    const engine = await newEngine({ models: { scripted: model.provider } });
    const events: InspectionEvent[] = [];
    const stop = engine.inspect((event) => events.push(event));
    const { runId } = await engine.submit({ sessionId: 's', input: 'hello' });
    await until(() => model.isThinking(runId), 'the model is thinking');

    expect(effectStatuses(events)).toEqual(new Map([[`${runIdRoot(events, runId)}/turn:0`, ['announced', 'active']]]));
    const current = engine
      .inspectionSnapshot()
      .filter((event) => (event.actorRef as unknown as { id: string }).id === 'turn:0');
    expect(current).toHaveLength(1);
    expect((current[0]!.actorRef as AnyActorRef)._parent?.getSnapshot().context.runId).toBe(runId);

    model.answer(runId);
    await engine.wait(runId, { timeoutMs: 10_000 });
    expect([...effectStatuses(events).values()]).toEqual([['announced', 'active', 'done']]);
    expect(engine.inspectionSnapshot().filter((event) => !(event.actorRef as { logic?: object }).logic)).toEqual([]);
    stop();
  });

  it('shows a tool execution as the child "exec" of its tool call, and the next turn', async () => {
    const hold = holdTool();
    const engine = await newEngine({
      tools: [hold.tool],
      models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
    });
    const events: InspectionEvent[] = [];
    const stop = engine.inspect((event) => events.push(event));
    const { runId } = await engine.submit({ sessionId: 's', input: 'go' });
    await until(() => hold.isHolding(runId), 'the tool is holding');

    const execs = engine
      .inspectionSnapshot()
      .filter((event) => (event.actorRef as unknown as { id: string }).id === 'exec');
    expect(execs).toHaveLength(1);
    const call = (execs[0]!.actorRef as AnyActorRef)._parent!;
    expect(call.getSnapshot().context).toMatchObject({ runId, tool: 'hold' });
    expect(call._parent?.id).toBe('act');

    hold.release(runId);
    await engine.wait(runId, { timeoutMs: 10_000 });
    const root = runIdRoot(events, runId);
    expect(effectStatuses(events)).toEqual(
      new Map([
        [`${root}/turn:0`, ['announced', 'active', 'done']],
        [`${root}/act/call-0/exec`, ['announced', 'active', 'done']],
        [`${root}/turn:1`, ['announced', 'active', 'done']],
      ]),
    );
    stop();
  });

  it('shows an approval wait as the child "approval" of its tool call, stopped and withdrawn when the run is cancelled', async () => {
    const engine = await newEngine({
      models: {
        scripted: scriptedModel([
          { toolCalls: [{ name: 'file_ops', args: { operation: 'mkdir', path: 'one' } }] },
          { text: 'made' },
        ]),
      },
      config: { approval: { tier: 'ask' } },
    });
    const events: InspectionEvent[] = [];
    const stop = engine.inspect((event) => events.push(event));
    const { runId } = await engine.submit({ sessionId: 's', input: 'make a directory', workspace });
    await until(() => engine.pendingApprovals().length === 1, 'the call asks for approval');

    const approvals = engine
      .inspectionSnapshot()
      .filter((event) => (event.actorRef as unknown as { id: string }).id === 'approval');
    expect(approvals).toHaveLength(1);
    expect((approvals[0]!.actorRef as AnyActorRef)._parent?.getSnapshot().context).toMatchObject({
      runId,
      tool: 'file_ops',
    });

    await engine.cancel(runId, 'no longer needed');
    expect(engine.pendingApprovals()).toEqual([]);
    const root = runIdRoot(events, runId);
    expect(effectStatuses(events).get(`${root}/act/call-0/approval`)).toEqual(['announced', 'active', 'stopped']);
    expect(effectStatuses(events).has(`${root}/act/call-0/exec`)).toBe(false);
    stop();
  });

  it('makes nothing for an effect that started while nobody inspected', async () => {
    const model = heldModel();
    const engine = await newEngine({ models: { scripted: model.provider } });
    const { runId } = await engine.submit({ sessionId: 's', input: 'hello' });
    await until(() => model.isThinking(runId), 'the model is thinking');

    const events: InspectionEvent[] = [];
    const stop = engine.inspect((event) => events.push(event));
    const current = engine.inspectionSnapshot();
    expect(current.some((event) => (event.actorRef as unknown as { id: string }).id === `run:${runId}`)).toBe(true);
    expect(effectStatuses(current).size).toBe(0);
    model.answer(runId);
    await engine.wait(runId, { timeoutMs: 10_000 });
    expect(effectStatuses(events).size).toBe(0);
    stop();
  });
});

/** The run's root actor's own id (its path), from the events seen. */
function runIdRoot(events: InspectionEvent[], runId: string): string {
  const run = events.find((event) => (event.actorRef as unknown as { id: string }).id === `run:${runId}`);
  if (!run) throw new Error(`no event of run ${runId}`);
  return pathOf(run.actorRef as AnyActorRef);
}

describe('InspectionHub.showEffect', () => {
  it('ends an effect once, and says nothing of one whose listeners all left to a listener that came later', () => {
    const hub = new InspectionHub();
    const parent = createActor(createMachine({ id: 'parent' }), { id: 'parent' }).start();
    hub.connect(() => [parent]);
    expect(hub.showEffect(parent, 'unseen')).toBeUndefined();

    const first: InspectionEvent[] = [];
    const stopFirst = hub.subscribe((event) => first.push(event));
    const ended = hub.showEffect(parent, 'turn:0')!;
    const left = hub.showEffect(parent, 'exec')!;
    expect(hub.current().map((event) => (event.actorRef as unknown as { id: string }).id)).toEqual([
      'parent',
      'turn:0',
      'exec',
    ]);
    ended.done('reply');
    ended.failed(new Error('too late'));
    expect(effectStatuses(first)).toEqual(
      new Map([
        ['parent/turn:0', ['announced', 'active', 'done']],
        ['parent/exec', ['announced', 'active']],
      ]),
    );
    stopFirst();

    const later: InspectionEvent[] = [];
    const stopLater = hub.subscribe((event) => later.push(event));
    left.stopped();
    expect(later).toEqual([]);
    expect(hub.current().map((event) => (event.actorRef as unknown as { id: string }).id)).toEqual(['parent']);
    stopLater();
  });
});
